package gateway

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Outcomes of a call, as metrics and spans name them.
const (
	OutcomeSucceeded = "Succeeded"
	OutcomeToolError = "ToolError"
	OutcomeFailed    = "Failed"
	OutcomeDenied    = "Denied"
)

// Refusal reasons that only metrics and spans carry: the request was
// refused before it reached the MCP layer, or the gateway could not make
// up its mind. The others are the Deny reasons of the audit record.
const (
	// RefusedUnauthenticated: no bearer token, or one TokenReview refused.
	RefusedUnauthenticated = "Unauthenticated"
	// RefusedRateLimited: the client address used up its failed
	// authentications.
	RefusedRateLimited = "RateLimited"
	// RefusedDecisionFailed: reading policies, approvals or keys failed; the
	// agent is told to try again.
	RefusedDecisionFailed = "DecisionFailed"
	// RefusedInvalidArguments: the arguments are not a JSON object.
	RefusedInvalidArguments = "InvalidArguments"
	// RefusedInvalidRequest: the request was answered with a protocol
	// error before the gateway decided (arguments that fail the tool's
	// input schema, say).
	RefusedInvalidRequest = "InvalidRequest"
)

// instrumentationName names the gateway's tracer.
const instrumentationName = "github.com/mcp-catalog/operator/internal/gateway"

// traceContext is the only propagation the gateway does: W3C trace
// context. Baggage is not forwarded: it is the agent's to give, and the
// upstream server is not the agent's to choose.
var traceContext = propagation.TraceContext{}

// callObs follows one tools/call through the gateway and records, when it
// ends, its metrics and its span. The tool's labels are set only once RBAC
// let the caller call an McpTool that exists, so that a caller cannot mint
// label values (or span names) by sending names.
type callObs struct {
	start time.Time
	span  trace.Span

	namespace, server, tool string
	outcome, reason         string
	// upstream is the duration of the upstream tools/call; sent says there
	// was one.
	upstream time.Duration
	sent     bool
}

type obsKey struct{}

// obsOf returns the observation of the call ctx belongs to; a call made
// without one (a test calling the handler directly) gets a throwaway.
func obsOf(ctx context.Context) *callObs {
	if o, ok := ctx.Value(obsKey{}).(*callObs); ok {
		return o
	}
	return &callObs{}
}

// of names the McpTool the call is for, which RBAC let the caller call.
func (o *callObs) of(t *mcpv1alpha1.McpTool) {
	o.namespace, o.server, o.tool = t.Namespace, t.Spec.ServerRef.Name, t.Name
	if o.span != nil && t.Status.LocalName != "" {
		o.span.SetName("tools/call " + t.Status.LocalName)
		o.span.SetAttributes(
			attribute.String("gen_ai.tool.name", t.Status.LocalName),
			attribute.String("mcp_catalog.namespace", t.Namespace),
			attribute.String("mcp_catalog.server", t.Spec.ServerRef.Name),
			attribute.String("mcp_catalog.tool", t.Name),
		)
	}
}

// end sets the outcome; the first one set stands.
func (o *callObs) end(outcome, reason string) {
	if o.outcome == "" {
		o.outcome, o.reason = outcome, reason
	}
}

// startCall begins observing a tools/call: the clock, and with tracing the
// server span, whose parent is the trace context the client sent in
// params._meta or else in the HTTP headers (the MCP semantic conventions
// prefer _meta, and link the other when both are there).
func (g *Gateway) startCall(ctx context.Context, req *sdk.CallToolRequest) (context.Context, *callObs) {
	o := &callObs{start: time.Now()}
	if g.tracer != nil {
		var fromMeta, fromHeader trace.SpanContext
		if req.Params != nil {
			fromMeta = trace.SpanContextFromContext(traceContext.Extract(context.Background(), metaCarrier(req.Params.Meta)))
		}
		if req.Extra != nil && req.Extra.Header != nil {
			fromHeader = trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(req.Extra.Header)))
		}
		opts := []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("mcp.method.name", "tools/call"),
				attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("network.transport", "tcp"),
				attribute.String("network.protocol.name", "http"),
			),
		}
		parent := ctx
		switch {
		case fromMeta.IsValid():
			parent = trace.ContextWithRemoteSpanContext(ctx, fromMeta)
			if fromHeader.IsValid() && !fromHeader.Equal(fromMeta) {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: fromHeader}))
			}
		case fromHeader.IsValid():
			parent = trace.ContextWithRemoteSpanContext(ctx, fromHeader)
		}
		if v := req.ProtocolVersion(); v != "" {
			opts = append(opts, trace.WithAttributes(attribute.String("mcp.protocol.version", v)))
		}
		if ss := req.Session; ss != nil && ss.ID() != "" {
			// The session is bound to the caller's identity: its id alone
			// lets nobody else use it.
			opts = append(opts, trace.WithAttributes(attribute.String("mcp.session.id", ss.ID())))
		}
		ctx, o.span = g.tracer.Start(parent, "tools/call", opts...)
	}
	return context.WithValue(ctx, obsKey{}, o), o
}

// endCall records the call's metrics and ends its span. Every path of the
// gateway sets an outcome; one that did not was answered by the SDK with a
// protocol error before the gateway was asked.
func (g *Gateway) endCall(o *callObs, err error) {
	if o.outcome == "" {
		reason := RefusedDecisionFailed
		if err != nil {
			reason = RefusedInvalidRequest
		}
		o.end(OutcomeDenied, reason)
	}
	metrics.GatewayCalls.WithLabelValues(o.namespace, o.server, o.tool, o.outcome, o.reason).Inc()
	if o.outcome == OutcomeDenied {
		metrics.GatewayRefusals.WithLabelValues(o.reason).Inc()
	}
	if o.sent && o.tool != "" {
		own := time.Since(o.start) - o.upstream
		metrics.GatewayUpstreamDuration.WithLabelValues(o.namespace, o.server, o.tool).Observe(o.upstream.Seconds())
		metrics.GatewayCallDuration.WithLabelValues(o.namespace, o.server, o.tool).Observe(max(own, 0).Seconds())
	}
	if o.span == nil {
		return
	}
	o.span.SetAttributes(attribute.String("mcp_catalog.outcome", o.outcome))
	switch o.outcome {
	case OutcomeSucceeded:
	case OutcomeToolError:
		o.span.SetAttributes(attribute.String("error.type", "tool_error"))
		o.span.SetStatus(codes.Error, "tool_error")
	default:
		o.span.SetAttributes(attribute.String("error.type", o.reason), attribute.String("mcp_catalog.reason", o.reason))
		o.span.SetStatus(codes.Error, o.reason)
	}
	o.span.End()
}

// startUpstream begins the client span of the upstream call, a child of the
// call's server span, and returns the trace context to send with it. It
// returns a zero TraceContext and a nil span when tracing is off.
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
	ctx, span := g.tracer.Start(ctx, "tools/call "+t.Spec.RemoteName, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return ctx, span, mcp.TraceContext{Traceparent: carrier.Get("traceparent"), Tracestate: carrier.Get("tracestate")}
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

// metaCarrier reads W3C trace context from a request's _meta, where the
// 2026-07-28 revision reserves the unprefixed keys traceparent and
// tracestate for it. Values that are not strings are ignored.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(string, string) {}

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
