package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// xMCPHeader is the schema annotation that mirrors an argument into a
// header.
const xMCPHeader = `"x-mcp-header"`

// send is the send stage of a call: the endpoint and credential of the
// tool's server for the caller (the server's own, or a token exchanged for
// the caller), then the remote tool called with the arguments, under a
// client span of its own.
func (g *Gateway) send(ctx context.Context, id *authn.Identity, c *callScope) (*mcp.CallOutcome, error) {
	rounds, err := g.inputRounds(ctx, c)
	if err != nil {
		return nil, err
	}
	if r := c.resume; r != nil {
		// The answer to a round of a call parked here (parked.go).
		start := time.Now()
		out, err := g.resumeParked(ctx, c, r.key, r.answer)
		c.obs.upstream, c.obs.sent = time.Since(start), true
		return out, err
	}
	ep, err := g.upstreamFor(ctx, id, c)
	if err != nil {
		return nil, err
	}
	// Room for every option a call may take, so that the list is made once.
	opts := make([]mcp.CallOption, 0, 10)
	if schema := c.tool.Status.InputSchema; schema != nil && bytes.Contains(schema.Raw, []byte(xMCPHeader)) {
		// Arguments the schema marks with x-mcp-header travel in headers
		// too, which 2026-07-28 servers require. A schema without the
		// annotation has no such argument, and is not walked on every call.
		// The headers are read from the decoded arguments.
		if _, err := c.arguments(); err != nil {
			return nil, err
		}
		opts = append(opts, mcp.WithInputSchema(schema.Raw))
	}
	ctx, span, tc := g.startUpstream(ctx, c.srv, c.tool)
	var info mcp.CallInfo
	// The result is passed on whole (result.go), not as the text the
	// operator's own client reads of it.
	opts = append(opts, mcp.WithTraceContext(tc), mcp.WithCallInfo(&info), mcp.WithFullResult())
	if bound := maxContentFor(c); bound > 0 {
		// The parts that are not text travel in base64; the rest of the
		// answer keeps the client's own cap.
		opts = append(opts, mcp.WithMaxBodyBytes(mcp.MaxBodyBytes+(bound+2)/3*4))
	}
	if c.argsJSON != nil {
		// The canonical form the record's hash names, encoded once by the
		// decision (or the rules stage): the server receives exactly what
		// an approval named, and the arguments are not encoded again.
		opts = append(opts, mcp.WithEncodedArguments(c.argsJSON))
	}
	if p := progressOf(ctx); p != nil {
		// The agent asked for the call's progress (relay.go).
		opts = append(opts, mcp.WithProgress(p))
	}
	// The server's requests during the call, and in 2026-07-28 its
	// input-required rounds, under the tool's policy (interaction.go).
	opts = append(opts, mcp.WithInteraction(g.interactionFor(ctx, c)))
	if t, err := taskOption(ctx, c); err != nil {
		return nil, err
	} else if t != nil {
		// A task-augmented call (tasks.go).
		opts = append(opts, t)
	}
	// A 2026-07-28 caller's call of a server that may ask for input on
	// its stream is made so that it can park (parked.go).
	parkable := rounds != nil && g.parkable(ep)
	// An initialize-era agent in a session kept here answers a 2026-07-28
	// server's rounds through the gateway, which asks it in its session
	// (interaction.go).
	bridged := rounds == nil && askerOf(ctx) != nil
	if bridged {
		rounds = firstRound
	}
	if rounds != nil {
		opts = append(opts, rounds)
	}
	start := time.Now()
	if parkable {
		out, err := g.sendParkable(ctx, c, ep, span, opts)
		c.obs.upstream, c.obs.sent = time.Since(start), true
		return out, err
	}
	out, err := g.MCP.CallTool(ctx, ep, c.tool.Spec.RemoteName, c.args, opts...)
	for n := 0; bridged && err == nil && out.InputRequired; n++ {
		var again mcp.CallOption
		if again, err = g.answerInSession(ctx, c, out, n); err == nil {
			opts[len(opts)-1] = again
			out, err = g.MCP.CallTool(ctx, ep, c.tool.Spec.RemoteName, c.args, opts...)
		}
	}
	c.obs.upstream, c.obs.sent = time.Since(start), true
	endUpstream(span, &info, out, err)
	return out, err
}

// startUpstream begins the client span of the upstream call and returns the
// trace context to send with it. The span is the root of a trace of its
// own, linked to the call's server span: the agent's trace id, span id and
// tracestate are the agent's, not the server's to receive, and would carry
// whatever the agent put in them outside the arguments the gateway checked
// (docs/adr/034-what-leaves-beside-the-arguments.md). The link keeps the
// two traces joined for whoever reads the gateway's traces. It returns a
// zero TraceContext and a nil span when tracing is off.
func (g *Gateway) startUpstream(ctx context.Context, srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool) (context.Context, trace.Span, mcp.TraceContext) {
	if g.tracer == nil {
		return ctx, nil, mcp.TraceContext{}
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", t.Spec.RemoteName),
		attribute.String("network.transport", "tcp"),
		attribute.String("network.protocol.name", "http"),
	}
	// Host and port only: the URL's path or query may be the provider's
	// business, and is not needed to find the server.
	if u, err := url.Parse(srv.Spec.URL); err == nil && u.Hostname() != "" {
		attrs = append(attrs, attribute.String("server.address", u.Hostname()))
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	ctx, span := g.tracer.Start(ctx, "tools/call "+t.Spec.RemoteName,
		trace.WithNewRoot(), trace.WithLinks(trace.LinkFromContext(ctx)),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	// The gateway keeps no tracestate of its own, so none is sent.
	return ctx, span, mcp.TraceContext{Traceparent: carrier.Get("traceparent")}
}

// endUpstream ends the client span with what the MCP client reported.
func endUpstream(span trace.Span, info *mcp.CallInfo, out *mcp.CallOutcome, err error) {
	if span == nil {
		return
	}
	if info.ProtocolVersion != "" {
		span.SetAttributes(attribute.String("mcp.protocol.version", info.ProtocolVersion))
	}
	if info.RequestID != "" {
		span.SetAttributes(attribute.String("jsonrpc.request.id", info.RequestID))
	}
	switch {
	case err != nil:
		kind := string(failureKind(err))
		var me *mcp.Error
		if errors.As(err, &me) && me.RPCCode != 0 {
			code := me.RPCCode
			// The conventions ask for the JSON-RPC code as error.type.
			kind = strconv.Itoa(code)
			span.SetAttributes(attribute.String("rpc.response.status_code", kind))
		}
		span.SetAttributes(attribute.String("error.type", kind))
		span.SetStatus(codes.Error, kind)
	case out.IsError:
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "tool_error")
	}
	span.End()
}

// failureKind names why a call failed with a fixed word: the MCP client's
// error kind, or why no credential could be had (an unmapped or disabled
// actor, a refused token exchange, a missing Secret).
func failureKind(err error) mcp.Kind {
	var de *credentials.DelegationError
	var me *credentials.MissingError
	var ce *credentials.UnusableCABundleError
	var re *resultError
	switch {
	case errors.As(err, &re):
		return re.kind
	case mcp.KindOf(err) != "":
		return mcp.KindOf(err)
	case errors.As(err, &de):
		return mcp.Kind(de.Reason)
	case errors.As(err, &me):
		return mcp.Kind(me.Reason)
	case errors.As(err, &ce):
		return mcp.Kind(mcpv1alpha1.ReasonCABundleNotUsable)
	default:
		return "CredentialUnavailable"
	}
}
