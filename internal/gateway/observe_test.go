package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/internal/upstream"
)

// seen is what the recording upstream received with its last tools/call.
type seen struct {
	mu                    sync.Mutex
	calls                 int
	header, state, inMeta string
	metaState             string
	protocol              string
	// everything is every header and the whole _meta of the call.
	everything string
}

func (s *seen) get() seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seen{calls: s.calls, header: s.header, state: s.state, inMeta: s.inMeta, metaState: s.metaState, protocol: s.protocol, everything: s.everything}
}

// recordingUpstream is a real go-sdk MCP server whose one tool, echo,
// records the trace context it was sent in the HTTP headers and in
// params._meta. legacy restricts it to the initialize era.
func recordingUpstream(t *testing.T, legacy bool) (*httptest.Server, *seen) {
	t.Helper()
	rec := &seen{}
	so := &sdk.ServerOptions{}
	if legacy {
		so.SupportedProtocolVersions = []string{"2025-11-25", "2025-06-18"}
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "recorder", Version: "1"}, so)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.calls++
			rec.header, rec.state = req.Extra.Header.Get("traceparent"), req.Extra.Header.Get("tracestate")
			rec.inMeta, _ = req.Params.Meta["traceparent"].(string)
			rec.metaState, _ = req.Params.Meta["tracestate"].(string)
			rec.protocol = req.ProtocolVersion()
			meta, _ := json.Marshal(req.Params.Meta)
			rec.everything = fmt.Sprint(req.Extra.Header) + string(meta)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs, rec
}

const (
	obsNS    = "team"
	obsToken = "agent-token-sEcReT"
	// obsArgument is an argument value no metric or span may carry.
	obsArgument = "argument-vAlUe-never-recorded"
)

// The tools of the McpServer team/docs the tests call.
var (
	echoObject, _   = toolname.ObjectName("docs", "echo")
	echoLocal       = toolname.LocalName("docs", "echo")
	secretObject, _ = toolname.ObjectName("docs", "secret")
	secretLocal     = toolname.LocalName("docs", "secret")
)

// observedGateway serves the McpTool echo of the McpServer team/docs at
// upstreamURL, and the tool secret, which RBAC does not let the agent
// call. tp may be nil.
func observedGateway(t *testing.T, upstreamURL string, tp trace.TracerProvider) *httptest.Server {
	t.Helper()
	return catalogGateway(t, upstreamURL, tp, allowList{echoObject: true}, 0)
}

// catalogGateway is observedGateway with authz deciding RBAC and extra
// more tools of the same server (extra_1, …).
func catalogGateway(t *testing.T, upstreamURL string, tp trace.TracerProvider, authz authz.Authorizer, extra int) *httptest.Server {
	t.Helper()
	_, hs := catalogGatewayWith(t, upstreamURL, tp, authz, extra, nil)
	return hs
}

// catalogGatewayWith is catalogGateway, returning the gateway too, with
// more objects for the Reader and its options changed by edit (either may
// be nil).
func catalogGatewayWith(t testing.TB, upstreamURL string, tp trace.TracerProvider, authz authz.Authorizer, extra int, edit func(*Options), more ...client.Object) (*Gateway, *httptest.Server) {
	t.Helper()
	no := false
	tool := func(remote string) *mcpv1alpha1.McpTool { return docsTool(t, remote) }
	server := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: "docs"},
		Spec:       mcpv1alpha1.McpServerSpec{URL: upstreamURL, DataClass: mcpv1alpha1.DataClassPublic, ApprovalRequired: &no, AllowPrivateNetwork: true},
	}
	policy := &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: "agents"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objects := []client.Object{tool("echo"), tool("secret"), server, policy}
	for i := range extra {
		objects = append(objects, tool(fmt.Sprintf("extra_%d", i+1)))
	}
	objects = append(objects, more...)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	o := completeOptions()
	o.Reader = c
	o.Upstreams = &upstream.Endpoints{Credentials: &credentials.Resolver{Secrets: c, Profiles: c}}
	o.MCP = mcp.New(mcp.Options{AllowPrivateNetworks: true})
	o.Authn = tokenTable{obsToken: {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"}}
	o.Authz = authz
	o.TracerProvider = tp
	if edit != nil {
		edit(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(g.Handler())
	t.Cleanup(hs.Close)
	return g, hs
}

// agentSession connects to the gateway as the agent in revision version.
func agentSession(t *testing.T, gatewayURL, version string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gatewayURL + Path, HTTPClient: &http.Client{Transport: bearerTransport{obsToken}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// The agent's own trace context, as its client sends it in _meta.
var (
	agentTrace, _ = trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	agentSpan, _  = trace.SpanIDFromHex("00f067aa0ba902b7")
)

const agentTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func callAs(t *testing.T, cs *sdk.ClientSession, name string, meta sdk.Meta) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": obsArgument}, Meta: meta})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// One call, traced: a server span continuing the agent's trace, the
// upstream call a client span that starts a trace of its own linked to
// the server span, and the client span's context what the upstream
// received, in the headers always and in _meta where 2026-07-28 reserves
// the keys for it.
func TestTracingFollowsACallUpstream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		legacy   bool
		protocol string
	}{
		{"upstream speaks 2026-07-28", false, "2026-07-28"},
		{"upstream speaks 2025-11-25", true, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, got := recordingUpstream(t, tc.legacy)
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			gw := observedGateway(t, up.URL, tp)
			cs := agentSession(t, gw.URL, "2026-07-28")

			res := callAs(t, cs, echoLocal, sdk.Meta{"traceparent": agentTraceparent, "tracestate": "agent=1"})
			if res.IsError {
				t.Fatalf("the call failed: %s", resultText(res))
			}
			ended := spans.Ended()
			if len(ended) != 2 {
				t.Fatalf("%d spans ended, want the server span and the client span", len(ended))
			}
			var server, client sdktrace.ReadOnlySpan
			for _, s := range ended {
				switch s.SpanKind() {
				case trace.SpanKindServer:
					server = s
				case trace.SpanKindClient:
					client = s
				}
			}
			if server == nil || client == nil {
				t.Fatalf("want one server and one client span, got %v", ended)
			}
			if server.Name() != "tools/call "+echoLocal || client.Name() != "tools/call echo" {
				t.Errorf("span names %q and %q", server.Name(), client.Name())
			}
			if server.SpanContext().TraceID() != agentTrace || server.Parent().SpanID() != agentSpan || !server.Parent().IsRemote() {
				t.Errorf("the server span does not continue the agent's trace: parent %v", server.Parent())
			}
			if client.Parent().IsValid() || client.SpanContext().TraceID() == agentTrace {
				t.Errorf("the client span continues the agent's trace: parent %v, trace %s", client.Parent(), client.SpanContext().TraceID())
			}
			if l := client.Links(); len(l) != 1 || !l[0].SpanContext.Equal(server.SpanContext()) {
				t.Errorf("the client span's links %v, want one to the server span %v", l, server.SpanContext())
			}
			sa, ca := attrs(server), attrs(client)
			for key, want := range map[attribute.Key]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": echoLocal, "mcp.protocol.version": "2026-07-28",
				"gen_ai.operation.name": "execute_tool", "mcp_catalog.outcome": "Succeeded", "mcp_catalog.tool": echoObject,
			} {
				if sa[key] != want {
					t.Errorf("server span %s = %q, want %q", key, sa[key], want)
				}
			}
			for key, want := range map[attribute.Key]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "mcp.protocol.version": tc.protocol,
				"server.address": "127.0.0.1",
			} {
				if ca[key] != want {
					t.Errorf("client span %s = %q, want %q", key, ca[key], want)
				}
			}
			if ca["jsonrpc.request.id"] == "" {
				t.Error("the client span has no jsonrpc.request.id")
			}
			if id, ok := sa["mcp.session.id"]; ok {
				t.Errorf("a stateless 2026-07-28 call has mcp.session.id %q", id)
			}
			if _, failed := sa["error.type"]; failed {
				t.Errorf("a successful call's span has error.type %q", sa["error.type"])
			}

			// What the upstream received is the client span's context.
			want := "00-" + client.SpanContext().TraceID().String() + "-" + client.SpanContext().SpanID().String() + "-01"
			r := got.get()
			if r.calls != 1 || r.protocol != tc.protocol {
				t.Fatalf("upstream saw %d calls in %q", r.calls, r.protocol)
			}
			if r.header != want {
				t.Errorf("traceparent header %q, want %q", r.header, want)
			}
			if r.state != "" {
				t.Errorf("tracestate header %q, want none", r.state)
			}
			wantMeta, wantMetaState := want, ""
			if tc.legacy {
				// The initialize era reserves no _meta key for it.
				wantMeta = ""
			}
			if r.inMeta != wantMeta || r.metaState != wantMetaState {
				t.Errorf("_meta traceparent %q tracestate %q, want %q %q", r.inMeta, r.metaState, wantMeta, wantMetaState)
			}

			for _, s := range ended {
				for _, kv := range s.Attributes() {
					if v := kv.Value.String(); strings.Contains(v, obsArgument) || strings.Contains(v, obsToken) {
						t.Errorf("span %s attribute %s carries an argument or the token", s.Name(), kv.Key)
					}
				}
			}
		})
	}
}

// The attack: an agent puts data in its trace context (a tracestate, a
// baggage, the trace id itself), outside the arguments the gateway checks,
// for the upstream server to read. The upstream gets a trace of the
// gateway's instead: another trace id, no tracestate, no baggage, in the
// headers and in _meta; the gateway's own trace links the two.
func TestTheAgentsTraceContextDoesNotReachTheUpstream(t *testing.T) {
	const (
		state   = "agent=c2VjcmV0LWluLXRyYWNlc3RhdGU"
		baggage = "leak=c2VjcmV0LWluLWJhZ2dhZ2U"
	)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			up, got := recordingUpstream(t, version != "2026-07-28")
			spans := tracetest.NewSpanRecorder()
			gw := observedGateway(t, up.URL, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var rt http.RoundTripper = bearerTransport{obsToken}
			for name, value := range map[string]string{"traceparent": agentTraceparent, "tracestate": state, "baggage": baggage} {
				rt = headerTransport{name, value, rt}
			}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
				&sdk.StreamableClientTransport{Endpoint: gw.URL + Path, HTTPClient: &http.Client{Transport: rt}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res := callAs(t, cs, echoLocal, sdk.Meta{"traceparent": agentTraceparent, "tracestate": state, "baggage": baggage})
			if res.IsError {
				t.Fatalf("the call failed: %s", resultText(res))
			}

			r := got.get()
			if r.calls != 1 {
				t.Fatalf("upstream saw %d calls", r.calls)
			}
			for what, leak := range map[string]string{
				"the agent's trace id": agentTrace.String(), "the agent's span id": agentSpan.String(),
				"the agent's tracestate": "c2VjcmV0LWluLXRyYWNlc3RhdGU", "the agent's baggage": "c2VjcmV0LWluLWJhZ2dhZ2U",
			} {
				if strings.Contains(r.everything, leak) {
					t.Errorf("the upstream received %s: %s", what, r.everything)
				}
			}
			upstreamTrace, err := trace.TraceIDFromHex(strings.Split(r.header+"--", "-")[1])
			if err != nil || upstreamTrace == agentTrace {
				t.Fatalf("the upstream's traceparent %q does not start a trace of its own", r.header)
			}

			// The gateway's client span is that trace, linked to the agent's.
			var client sdktrace.ReadOnlySpan
			for _, s := range spans.Ended() {
				if s.SpanKind() == trace.SpanKindClient {
					client = s
				}
			}
			if client == nil || client.SpanContext().TraceID() != upstreamTrace {
				t.Fatalf("no client span in the upstream's trace %s", upstreamTrace)
			}
			if l := client.Links(); len(l) != 1 || l[0].SpanContext.TraceID() != agentTrace {
				t.Errorf("the client span's links %v, want one into the agent's trace %s", l, agentTrace)
			}
		})
	}
}

// Without a _meta trace context the HTTP headers' is the parent.
func TestTracingFallsBackToTheHTTPHeaders(t *testing.T) {
	up, _ := recordingUpstream(t, false)
	spans := tracetest.NewSpanRecorder()
	gw := observedGateway(t, up.URL, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	hc := &http.Client{Transport: headerTransport{"traceparent", agentTraceparent, bearerTransport{obsToken}}}
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.URL + Path, HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callAs(t, cs, echoLocal, nil)
	for _, s := range spans.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			if s.Parent().SpanID() != agentSpan {
				t.Errorf("server span parent %v, want the header's span", s.Parent())
			}
			if attrs(s)["mcp.session.id"] == "" {
				t.Error("a session's call has no mcp.session.id")
			}
			return
		}
	}
	t.Fatal("no server span")
}

type headerTransport struct {
	name, value string
	next        http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

// With tracing off the gateway forwards no trace context, even the one
// the agent sent: what reaches the upstream is the gateway's to decide.
func TestTracingOffPropagatesNothing(t *testing.T) {
	up, got := recordingUpstream(t, false)
	gw := observedGateway(t, up.URL, nil)
	cs := agentSession(t, gw.URL, "2026-07-28")
	callAs(t, cs, echoLocal, sdk.Meta{"traceparent": agentTraceparent})
	if r := got.get(); r.calls != 1 || r.header != "" || r.inMeta != "" {
		t.Errorf("upstream saw %d calls, traceparent header %q, _meta %q; want one call and no trace context", r.calls, r.header, r.inMeta)
	}
}

func counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	if h := m.GetHistogram(); h != nil {
		return float64(h.GetSampleCount())
	}
	return m.GetCounter().GetValue()
}

// metricsText renders controller-runtime's registry, which the manager's
// metrics endpoint serves.
func metricsText(t *testing.T) string {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// Metrics after real calls: a call sent upstream counts under its tool,
// with both durations observed; refusals before RBAC allowed the caller
// count without any name the caller sent; nothing secret is exported.
func TestMetricsCountCallsByToolAndRefusalsByReason(t *testing.T) {
	up, _ := recordingUpstream(t, false)
	gw := observedGateway(t, up.URL, nil)
	cs := agentSession(t, gw.URL, "2026-07-28")

	succeeded := metrics.GatewayCalls.WithLabelValues(obsNS, "docs", echoObject, audit.OutcomeSucceeded, "")
	upstreamObs := metrics.GatewayUpstreamDuration.WithLabelValues(obsNS, "docs", "docs.echo").(prometheus.Collector)
	ownObs := metrics.GatewayCallDuration.WithLabelValues(obsNS, "docs", "docs.echo").(prometheus.Collector)
	notServable := metrics.GatewayCalls.WithLabelValues("", "", "", audit.OutcomeDenied, audit.DenyNotServable)
	forbidden := metrics.GatewayCalls.WithLabelValues("", "", "", audit.OutcomeDenied, audit.DenyForbidden)
	refusedNotServable := metrics.GatewayRefusals.WithLabelValues(audit.DenyNotServable)
	refusedForbidden := metrics.GatewayRefusals.WithLabelValues(audit.DenyForbidden)
	unauthenticated := metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated)
	before := map[string]float64{}
	for name, c := range map[string]prometheus.Collector{
		"succeeded": succeeded, "upstream": upstreamObs, "own": ownObs, "notServable": notServable, "forbidden": forbidden,
		"refusedNotServable": refusedNotServable, "refusedForbidden": refusedForbidden, "unauthenticated": unauthenticated,
	} {
		before[name] = counter(t, c)
	}

	if res := callAs(t, cs, echoLocal, nil); res.IsError {
		t.Fatalf("the call failed: %s", resultText(res))
	}
	// A name the caller made up, and a tool RBAC does not let it call.
	const madeUp = "mcp_docs_attacker_chosen_zzz"
	if res := callAs(t, cs, madeUp, nil); !res.IsError {
		t.Fatal("a made-up tool was called")
	}
	if res := callAs(t, cs, secretLocal, nil); !res.IsError {
		t.Fatal("a tool RBAC does not allow was called")
	}
	resp, err := http.Post(gw.URL+Path, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	for name, want := range map[string]struct {
		c     prometheus.Collector
		delta float64
	}{
		"succeeded": {succeeded, 1}, "upstream": {upstreamObs, 1}, "own": {ownObs, 1},
		"notServable": {notServable, 1}, "forbidden": {forbidden, 1},
		"refusedNotServable": {refusedNotServable, 1}, "refusedForbidden": {refusedForbidden, 1},
		"unauthenticated": {unauthenticated, 1},
	} {
		if got := counter(t, want.c) - before[name]; got != want.delta {
			t.Errorf("%s went up by %v, want %v", name, got, want.delta)
		}
	}
	text := metricsText(t)
	for _, never := range []string{madeUp, secretObject, secretLocal, obsToken, obsArgument} {
		if strings.Contains(text, never) {
			t.Errorf("the metrics output contains %q", never)
		}
	}
}

// The approvals gauge counts McpCallApprovals by where they stand.
func TestSweepReportsApprovalsByState(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	approval := func(name string, decision mcpv1alpha1.CallDecision, expires time.Duration, used bool) *mcpv1alpha1.McpCallApproval {
		a := &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: name}}
		a.Spec.Decision, a.Spec.ExpiresAt = decision, metav1.Time{Time: now.Add(expires)}
		if used {
			a.Status.ConsumedAt = &metav1.Time{Time: now}
		}
		return a
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		approval("p1", mcpv1alpha1.CallPending, time.Minute, false),
		approval("p2", mcpv1alpha1.CallPending, time.Minute, false),
		approval("a1", mcpv1alpha1.CallApproved, time.Minute, false),
		approval("u1", mcpv1alpha1.CallApproved, time.Minute, true),
		approval("d1", mcpv1alpha1.CallDenied, time.Minute, false),
		approval("e1", mcpv1alpha1.CallPending, -time.Minute, false),
		// Expired long ago: deleted by this sweep, so no longer counted.
		approval("gone", mcpv1alpha1.CallPending, -2*time.Hour, false),
	).Build()
	s := &approvals.Sweeper{Client: c, Clock: testingclock.NewFakePassiveClock(now)}
	if n, err := s.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("Sweep() = %d, %v; want 1 deleted", n, err)
	}
	for state, want := range map[string]float64{"pending": 2, "approved": 1, "used": 1, "denied": 1, "expired": 1} {
		var m dto.Metric
		if err := metrics.GatewayApprovals.WithLabelValues(state).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetGauge().GetValue(); got != want {
			t.Errorf("approvals{state=%q} = %v, want %v", state, got, want)
		}
	}
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// countingAuthz counts the RBAC questions the gateway asks.
type countingAuthz struct {
	mu    sync.Mutex
	asked int
}

func (c *countingAuthz) CanCall(_ context.Context, _ *authn.Identity, _, _ string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	return true, nil
}

func (c *countingAuthz) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked
}

// A 2026-07-28 call decides the one tool its Mcp-Name header names, not
// the whole catalog: its cost does not grow with the namespace's tools. A
// listing still decides every tool.
func TestModernCallDecidesOnlyTheCalledTool(t *testing.T) {
	const extra = 20
	up, _ := recordingUpstream(t, false)
	authz := &countingAuthz{}
	g, gw := catalogGatewayWith(t, up.URL, nil, authz, extra, nil)
	cs := agentSession(t, gw.URL, "2026-07-28")

	before := authz.count()
	if res := callAs(t, cs, echoLocal, nil); res.IsError {
		t.Fatalf("the call failed: %s", resultText(res))
	}
	// The gateway's own call path decides once, and hands the decision on
	// to the call's stages.
	if n := authz.count() - before; n != 1 {
		t.Errorf("a call asked RBAC %d times, want 1", n)
	}
	// The SDK's path: once to build the request's server, once when the
	// call is decided.
	g.noFastCall.Store(true)
	before = authz.count()
	if res := callAs(t, cs, echoLocal, nil); res.IsError {
		t.Fatalf("the call failed: %s", resultText(res))
	}
	if n := authz.count() - before; n != 2 {
		t.Errorf("a call through the SDK's path asked RBAC %d times, want 2", n)
	}

	before = authz.count()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var listed int
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed++
	}
	if want := extra + 2; listed != want || authz.count()-before < want {
		t.Errorf("listed %d tools asking RBAC %d times, want %d tools each decided", listed, authz.count()-before, want)
	}
}
