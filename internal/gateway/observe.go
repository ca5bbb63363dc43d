package gateway

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
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
		reason := audit.RefusedDecisionFailed
		if err != nil {
			reason = audit.RefusedInvalidRequest
		}
		o.end(audit.OutcomeDenied, reason)
	}
	metrics.GatewayCalls.WithLabelValues(o.namespace, o.server, o.tool, o.outcome, o.reason).Inc()
	if o.outcome == audit.OutcomeDenied {
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
	case audit.OutcomeSucceeded:
	case audit.OutcomeToolError:
		o.span.SetAttributes(attribute.String("error.type", "tool_error"))
		o.span.SetStatus(codes.Error, "tool_error")
	default:
		o.span.SetAttributes(attribute.String("error.type", o.reason), attribute.String("mcp_catalog.reason", o.reason))
		o.span.SetStatus(codes.Error, o.reason)
	}
	o.span.End()
}

// record is the last stage of a call that was sent: its outcome in the
// audit trail, the call's metrics and span, an Event when it failed, and
// the server's last contact when it answered; and the result the agent
// gets, which never shows what the server said when the call failed.
func (g *Gateway) record(ctx context.Context, id *authn.Identity, c *callScope, sent time.Time, out *mcp.CallOutcome, err error) *sdk.CallToolResult {
	end := g.now()
	c.rec.Phase, c.rec.Time, c.rec.LatencyMillis = audit.PhaseAfter, end, end.Sub(sent).Milliseconds()
	if err == nil && out.InputRequired {
		// The server asks the caller for input (interaction.go), or the
		// call parked on its request (parked.go).
		var result *sdk.CallToolResult
		if c.parked != nil {
			result = g.askParked(ctx, c)
		} else {
			result = g.askForInput(ctx, c, out)
		}
		if err := g.Audit.Write(context.WithoutCancel(ctx), c.rec); err != nil {
			logging.FromContext(ctx, logging.Gateway).Error(err, "the audit outcome record could not be written", "tool", c.key.String(), "callID", c.rec.CallID)
			metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseAfter).Inc()
		}
		return result
	}
	if err == nil && out.Task != nil {
		// The server made a task of the call (tasks.go).
		return g.taskCreated(ctx, c, out)
	}
	var typed *typedResult
	if err == nil {
		// The server answered (a tool error is an answer too).
		metrics.GatewayLastContact.WithLabelValues(c.srv.Namespace, c.srv.Name).Set(float64(end.UnixMilli()) / 1e3)
		// What it answered is passed on only as the approved definition
		// says it may be (result.go).
		typed, err = typedOf(out)
		if err == nil {
			err = checkStructured(outputSchemaOf(c.tool), typed, out.IsError)
		}
	}
	result := &sdk.CallToolResult{}
	switch {
	case err != nil:
		kind := failureKind(err)
		c.rec.Outcome, c.rec.ErrorKind = audit.OutcomeFailed, string(kind)
		c.obs.end(audit.OutcomeFailed, string(kind))
		g.Recorder.Eventf(c.tool, nil, corev1.EventTypeWarning, EventCallFailed, eventAction, "a call by %s failed: %s", id.Username, kind)
		result.IsError = true
		told, name := kind, c.tool.Status.LocalName
		if c.shared != nil {
			// The owner's credential is the owner's business: a consumer
			// reads one word for every state of it, and the name it
			// called (the audit record keeps the real kind).
			name = c.offer().localName()
			if mcp.KindOf(err) == "" {
				told = sharedCredentialFailure
			}
		}
		result.Content = []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("The call to %s failed (%s); the remote server's answer is not shown.", name, told)}}
	case out.IsError:
		c.rec.Outcome = audit.OutcomeToolError
		c.obs.end(audit.OutcomeToolError, "")
		result = g.readable(ctx, id, c, out.Text, typed, true)
	default:
		c.rec.Outcome = audit.OutcomeSucceeded
		c.obs.end(audit.OutcomeSucceeded, "")
		result = g.readable(ctx, id, c, out.Text, typed, false)
	}
	if err := g.Audit.Write(context.WithoutCancel(ctx), c.rec); err != nil {
		// The call has happened; the before record stands for it.
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit outcome record could not be written", "tool", c.key.String(), "callID", c.rec.CallID)
		metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseAfter).Inc()
	}
	return result
}

// readable is what the agent reads of the upstream's result (a tool error
// when toolError): its text, or, for a result that is more than text
// (typed), all of it; screened (inspect.go), asked of the guardrail
// webhook (guardrail.go), and, before it is returned, recorded in the
// caller's read mark (writedown.go); withheld when any of them says so.
func (g *Gateway) readable(ctx context.Context, id *authn.Identity, c *callScope, text string, typed *typedResult, toolError bool) *sdk.CallToolResult {
	if typed != nil {
		return g.readableTyped(ctx, id, c, typed, toolError)
	}
	text, withheld := g.inspectResult(id, c, text)
	if !withheld {
		text, withheld = g.guardResult(ctx, id, c, text)
	}
	if !withheld && !g.raiseMark(ctx, id, c) {
		return withheldUnrecorded()
	}
	return &sdk.CallToolResult{IsError: toolError || withheld, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// readableTyped is readable for a result that is more than text. The
// guardrail webhook is asked about its texts joined; a webhook that
// replaces them gives the agent its replacement alone, since it saw
// nothing of the other parts.
func (g *Gateway) readableTyped(ctx context.Context, id *authn.Identity, c *callScope, t *typedResult, toolError bool) *sdk.CallToolResult {
	text, withheld := g.inspectTyped(id, c, t)
	if !withheld {
		var joined string
		joined, withheld = g.guardResult(ctx, id, c, t.texts())
		if withheld || c.rec.Guardrail == audit.GuardrailReplaced {
			text, t = joined, nil
		}
	}
	if !withheld && !g.raiseMark(ctx, id, c) {
		return withheldUnrecorded()
	}
	if withheld || t == nil {
		return &sdk.CallToolResult{IsError: toolError || withheld, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
	}
	res := &sdk.CallToolResult{IsError: toolError, Content: t.content}
	if t.structured != nil {
		res.StructuredContent = t.structured
	}
	if res.Content == nil {
		res.Content = []sdk.Content{}
	}
	return res
}

// outputSchemaOf is the tool's approved output schema; nil when it has
// none.
func outputSchemaOf(t *mcpv1alpha1.McpTool) []byte {
	if s := t.Status.OutputSchema; s != nil {
		return s.Raw
	}
	return nil
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

// sharedCredentialFailure is what a consumer of a shared tool reads when
// the call failed on the owner's side before it was sent (its credential,
// its delegation profile, its CA bundle).
const sharedCredentialFailure mcp.Kind = "CredentialUnavailable"
