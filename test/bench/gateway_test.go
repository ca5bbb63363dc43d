package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testproc"
)

// gatewayAgents are the concurrency levels of the gateway scenario, 1 and
// 64; BENCH_GATEWAY_AGENTS (a comma-separated list) overrides them to
// study one level.
func gatewayAgents() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("BENCH_GATEWAY_AGENTS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{1, 64}
	}
	return out
}

// gatewayRounds alternates direct and gateway runs, so that a slow moment
// of the shared machine falls on both.
const gatewayRounds = 5

// gatewayCalls is how many calls one run makes (per mode, concurrency and
// round); BENCH_GATEWAY_CALLS overrides it for a quick run.
func gatewayCalls() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_GATEWAY_CALLS")); err == nil && v > 0 {
		return v
	}
	return 2000
}

// BenchmarkGateway measures what the gateway adds to a tool call: the same
// client (ours) calls the echo tool of one in-process stateless go-sdk
// server (2026-07-28, one HTTP request per call) directly, and through a
// gateway as an agent with a ServiceAccount token, RBAC and an access
// policy allowing the call. The gateway is the manager binary with
// --components=gateway, as the chart deploys it, on CPUs of its own
// (cpuSplit); the controllers run in this process, idle during the
// measurement. The token review and the access review are made once and
// then answered from the gateway's caches, as in steady state; tracing is
// off. The gateway processes run with the GOGC the chart sets for the
// gateway. One audits to standard output, drained by this process as a
// container runtime drains it; a second audits to a file synced after
// every record. Beside them run the bare proxy and the audited bare proxy
// (bareproxy_test.go): the hop alone, and the hop with the gateway's two
// audit records.
//
// All of that is the 2026-07-28 revision, which our client speaks. The era
// mode (metrics "era2025-") repeats the direct run and the run through the
// gateway auditing to standard output in the initialize era, as most
// agents' clients speak it today: go-sdk client sessions pinned to
// 2025-11-25 (ClientSessionOptions.ProtocolVersion), one per agent, made
// before the measurement and kept, as an agent keeps its session; against
// the stateless gateway the front door answers them itself. Its direct run
// is the same client against the upstream in the same revision.
func BenchmarkGateway(b *testing.B) {
	own, gwCPUs := cpuSplit(b)
	r := startEnvtest(b)
	up := mcpserver.Start(b, mcpserver.Options{Stateless: true, JSONResponse: true})
	ctx := context.Background()
	binary := buildManager(b)
	startManager(b, r.mcfg, func(o *manager.Options) { o.Components = manager.ComponentsControllers })
	token := gatewayAgent(b, r, up.URL)

	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	testproc.WriteKubeconfig(b, kubeconfig, r.cfg, "")
	gogc := chartGatewayGOGC(b)
	gw := startGateway(b, binary, kubeconfig, "-", gogc, gwCPUs)
	auditFile := filepath.Join(b.TempDir(), "audit.jsonl")
	gwFile := startGateway(b, binary, kubeconfig, auditFile, gogc, gwCPUs)
	bare := startBareProxy(b, up.URL, gogc, "", gwCPUs)

	c := mcp.New(mcp.Options{AllowPrivateNetworks: true})
	direct := func(ctx context.Context) error {
		_, err := c.CallTool(ctx, mcp.Endpoint{Name: "direct", URL: up.URL}, mcpserver.ToolEcho, callArgs)
		return err
	}
	local := toolname.LocalName("docs", mcpserver.ToolEcho)
	through := func(g *gatewayProc) func(context.Context) error {
		ep := mcp.Endpoint{Name: "gateway", URL: "http://" + g.addr + gateway.Path, AllowInsecureCredential: true, Credential: &mcp.Credential{Value: secret.New(token)}}
		return func(ctx context.Context) error {
			out, err := c.CallTool(ctx, ep, local, callArgs)
			if err == nil && (out.IsError || out.Text != "hello") {
				err = fmt.Errorf("the gateway answered %q (isError %t)", out.Text, out.IsError)
			}
			return err
		}
	}
	viaGateway, viaFileGateway := through(gw), through(gwFile)
	upURL, err := url.Parse(up.URL)
	if err != nil {
		b.Fatal(err)
	}
	viaProxy := func(p *gatewayProc) func(context.Context) error {
		ep := mcp.Endpoint{Name: "bare", URL: "http://" + p.addr + upURL.Path}
		return func(ctx context.Context) error {
			_, err := c.CallTool(ctx, ep, mcpserver.ToolEcho, callArgs)
			return err
		}
	}
	viaBare := viaProxy(bare)
	// A gateway's cache may see the policy a moment after the API server
	// does (and its process may not listen yet).
	for _, call := range []func(context.Context) error{viaGateway, viaFileGateway} {
		await(b, 30*time.Second, "a first call through the gateway", func() bool { return call(ctx) == nil })
	}
	most := slices.Max(gatewayAgents())
	directEra := eraCall(eraSessions(b, up.URL, "", most), mcpserver.ToolEcho)
	viaGatewayEra := eraCall(eraSessions(b, "http://"+gw.addr+gateway.Path, token, most), local)
	// Warm up outside the measurement: connection pools, the client's era
	// cache, and the gateways' review caches.
	for range 50 {
		for _, call := range []func(context.Context) error{direct, viaGateway, viaFileGateway, viaBare} {
			if err := call(ctx); err != nil {
				b.Fatalf("warm-up call: %v", err)
			}
		}
		for a := range most {
			for _, call := range []func(context.Context, int) error{directEra, viaGatewayEra} {
				if err := call(ctx, a); err != nil {
					b.Fatalf("warm-up call of the era mode: %v", err)
				}
			}
		}
	}

	// The audited bare proxy writes the records the gateway wrote for one
	// of the calls just made.
	audited := startBareProxy(b, up.URL, gogc, callRecords(b, auditFile), gwCPUs)
	viaAudited := viaProxy(audited)
	for range 50 {
		if err := viaAudited(ctx); err != nil {
			b.Fatalf("warm-up call through the audited bare proxy: %v", err)
		}
	}

	unpin := pinSelf(b, own)
	defer unpin()
	for b.Loop() {
		// Inside the loop: b.Loop's start deletes metrics reported before.
		b.ReportMetric(float64(len(own)), "agent-cpus")
		b.ReportMetric(float64(len(gwCPUs)), "gateway-cpus")
		if n, err := strconv.Atoi(gogc); err == nil {
			b.ReportMetric(float64(n), "gateway-gogc")
		}
		for _, agents := range gatewayAgents() {
			var d, g, gf, bp, ba, de, ge callRun
			runs := func(call func(context.Context, int) error) func() callResult {
				return func() callResult { return runCalls(ctx, agents, gatewayCalls(), call) }
			}
			for range gatewayRounds {
				d.add(b, measure(b, nil, runs(anyAgent(direct))))
				g.add(b, measure(b, gw, runs(anyAgent(viaGateway))))
				gf.add(b, measure(b, gwFile, runs(anyAgent(viaFileGateway))))
				bp.add(b, measure(b, bare, runs(anyAgent(viaBare))))
				ba.add(b, measure(b, audited, runs(anyAgent(viaAudited))))
				de.add(b, measure(b, nil, runs(directEra)))
				ge.add(b, measure(b, gw, runs(viaGatewayEra)))
			}
			prefix := fmt.Sprintf("c%d-", agents)
			b.ReportMetric(ms(d.quantile(0.5)), prefix+"direct-p50-ms")
			b.ReportMetric(ms(d.quantile(0.99)), prefix+"direct-p99-ms")
			b.ReportMetric(d.throughput(), prefix+"direct-calls/s")
			b.ReportMetric(d.ownCPUPerCall(), prefix+"direct-agent-cpu-us/call")
			// The chart's default audits to standard output; the file
			// figures show what an audit file synced per record costs,
			// the bare proxy's what one hop of Go's HTTP stack costs, the
			// audited bare proxy's what it costs with the two records.
			for variant, run := range map[string]*callRun{"": &g, "file-": &gf, "bare-": &bp, "bare-audit-": &ba} {
				b.ReportMetric(ms(run.quantile(0.5)), prefix+variant+"gateway-p50-ms")
				b.ReportMetric(ms(run.quantile(0.5)-d.quantile(0.5)), prefix+variant+"added-p50-ms")
				b.ReportMetric(ms(run.quantile(0.99)), prefix+variant+"gateway-p99-ms")
				b.ReportMetric(run.throughput(), prefix+variant+"gateway-calls/s")
				mid, lo, hi := run.throughputShare(&d)
				b.ReportMetric(mid, prefix+variant+"throughput-ratio")
				b.ReportMetric(lo, prefix+variant+"throughput-ratio-min")
				b.ReportMetric(hi, prefix+variant+"throughput-ratio-max")
				b.ReportMetric(run.throughput()/d.throughput(), prefix+variant+"throughput-ratio-pooled")
				b.ReportMetric(run.ownCPUPerCall(), prefix+variant+"gateway-agent-cpu-us/call")
				b.ReportMetric(run.gatewayCPUPerCall(), prefix+variant+"gateway-cpu-us/call")
			}
			// The era mode: the same figures in 2025-11-25, against its
			// own direct run.
			era := prefix + "era2025-"
			b.ReportMetric(ms(de.quantile(0.5)), era+"direct-p50-ms")
			b.ReportMetric(ms(de.quantile(0.99)), era+"direct-p99-ms")
			b.ReportMetric(de.throughput(), era+"direct-calls/s")
			b.ReportMetric(de.ownCPUPerCall(), era+"direct-agent-cpu-us/call")
			b.ReportMetric(ms(ge.quantile(0.5)), era+"gateway-p50-ms")
			b.ReportMetric(ms(ge.quantile(0.5)-de.quantile(0.5)), era+"added-p50-ms")
			b.ReportMetric(ms(ge.quantile(0.99)), era+"gateway-p99-ms")
			b.ReportMetric(ge.throughput(), era+"gateway-calls/s")
			mid, lo, hi := ge.throughputShare(&de)
			b.ReportMetric(mid, era+"throughput-ratio")
			b.ReportMetric(lo, era+"throughput-ratio-min")
			b.ReportMetric(hi, era+"throughput-ratio-max")
			b.ReportMetric(ge.ownCPUPerCall(), era+"gateway-agent-cpu-us/call")
			b.ReportMetric(ge.gatewayCPUPerCall(), era+"gateway-cpu-us/call")
		}
	}
}

// callRecords writes the two records the gateway wrote for its last call
// in the audit file (before and after, one line each, as written) to a
// file for the audited bare proxy, and returns its path.
func callRecords(b *testing.B, auditFile string) string {
	b.Helper()
	raw, err := os.ReadFile(auditFile)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	type record struct{ CallID, Phase string }
	for i := len(lines) - 1; i > 0; i-- {
		var after, before record
		if json.Unmarshal(lines[i], &after) != nil || json.Unmarshal(lines[i-1], &before) != nil {
			b.Fatalf("the gateway's audit file holds a line that is not a record (line %d or %d)", i, i+1)
		}
		if after.Phase == audit.PhaseAfter && before.Phase == audit.PhaseBefore && after.CallID == before.CallID && after.CallID != "" {
			out := filepath.Join(b.TempDir(), "records.jsonl")
			pair := bytes.Join([][]byte{lines[i-1], lines[i], nil}, []byte("\n"))
			if err := os.WriteFile(out, pair, 0o600); err != nil {
				b.Fatal(err)
			}
			return out
		}
	}
	b.Fatalf("no call's before and after records side by side in the gateway's audit file (%d lines)", len(lines))
	return ""
}

// measure runs one batch of calls and records the CPU time this process
// and, if g is set, the gateway process used meanwhile.
func measure(b *testing.B, g *gatewayProc, run func() callResult) callResult {
	b.Helper()
	var gw0 time.Duration
	if g != nil {
		gw0 = g.cpu(b)
	}
	own0 := cpuOfSelf(b)
	res := run()
	res.ownCPU = cpuOfSelf(b) - own0
	if g != nil {
		res.gatewayCPU = g.cpu(b) - gw0
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// callRun gathers the latencies and wall time of the runs of one mode, and
// each run's throughput, in the order of the rounds.
type callRun struct {
	latencies          []time.Duration
	wall               time.Duration
	ownCPU, gatewayCPU time.Duration
	rounds             []float64
}

func (c *callRun) add(b *testing.B, r callResult) {
	b.Helper()
	if r.err != nil {
		b.Fatal(r.err)
	}
	c.latencies = append(c.latencies, r.latencies...)
	c.wall += r.wall
	c.rounds = append(c.rounds, float64(len(r.latencies))/r.wall.Seconds())
	c.ownCPU += r.ownCPU
	c.gatewayCPU += r.gatewayCPU
}

// ownCPUPerCall is the CPU time of this process (agents and upstream) per
// call, in microseconds.
func (c *callRun) ownCPUPerCall() float64 {
	return float64(c.ownCPU.Microseconds()) / float64(len(c.latencies))
}

// gatewayCPUPerCall is the CPU time of the gateway process per call, in
// microseconds.
func (c *callRun) gatewayCPUPerCall() float64 {
	return float64(c.gatewayCPU.Microseconds()) / float64(len(c.latencies))
}

// callResult is one run: every call's latency, the run's wall time, the
// first error, and the CPU time used meanwhile by this process and by the
// gateway process.
type callResult struct {
	latencies          []time.Duration
	wall               time.Duration
	err                error
	ownCPU, gatewayCPU time.Duration
}

func (c *callRun) quantile(q float64) time.Duration {
	s := slices.Clone(c.latencies)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func (c *callRun) throughput() float64 {
	return float64(len(c.latencies)) / c.wall.Seconds()
}

// throughputShare compares c's throughput with direct's round by round:
// each round's run against the direct run of the same round, made
// seconds before it. It returns the median of those shares, and the
// lowest and highest. A burst of other work on the machine (the control
// plane, a neighbour) slows the one run it falls on; paired and taken by
// the median, it moves the figure by one rank instead of by its length.
func (c *callRun) throughputShare(direct *callRun) (median, lo, hi float64) {
	shares := make([]float64, 0, len(c.rounds))
	for i, t := range c.rounds {
		if i < len(direct.rounds) && direct.rounds[i] > 0 {
			shares = append(shares, t/direct.rounds[i])
		}
	}
	if len(shares) == 0 {
		return 0, 0, 0
	}
	slices.Sort(shares)
	n := len(shares)
	median = shares[n/2]
	if n%2 == 0 {
		median = (shares[n/2-1] + shares[n/2]) / 2
	}
	return median, shares[0], shares[n-1]
}

// runCalls makes n calls from agents concurrent callers, each calling
// again as soon as its last call returned, and returns every call's
// latency and the wall time of the whole run. call is given the caller's
// index (from 0), for callers that hold a session each.
func runCalls(ctx context.Context, agents, n int, call func(ctx context.Context, agent int) error) callResult {
	latencies := make([]time.Duration, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	start := time.Now()
	for a := range agents {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				err := call(ctx, a)
				latencies[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return callResult{latencies: latencies, wall: time.Since(start), err: firstErr}
}

// anyAgent adapts a call that every caller makes alike to runCalls.
func anyAgent(call func(context.Context) error) func(context.Context, int) error {
	return func(ctx context.Context, _ int) error { return call(ctx) }
}

// eraSessions connects n sessions of the go-sdk client to the MCP
// endpoint url in the initialize era's newest revision (2025-11-25, what
// most agents' clients speak), presenting token when it is set: the
// callers of the era mode, one session each, kept for the whole run as an
// agent keeps its session. They share one HTTP transport that keeps as
// many idle connections as our client does, so that a call does not dial.
// The standalone event stream is not opened: the stateless gateway has
// none to give, and the direct runs would otherwise hold one GET each.
func eraSessions(b *testing.B, url, token string, n int) []*sdk.ClientSession {
	b.Helper()
	var rt http.RoundTripper = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	if token != "" {
		rt = bearer{token: token, next: rt}
	}
	hc := &http.Client{Transport: rt}
	c := sdk.NewClient(&sdk.Implementation{Name: "bench-agent", Version: "1"}, nil)
	out := make([]*sdk.ClientSession, n)
	for i := range out {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true},
			&sdk.ClientSessionOptions{ProtocolVersion: eraInitialize})
		cancel()
		if err != nil {
			b.Fatalf("connecting a %s session to %s: %v", eraInitialize, url, err)
		}
		if v := s.InitializeResult().ProtocolVersion; v != eraInitialize {
			b.Fatalf("a session to %s negotiated %s, want %s", url, v, eraInitialize)
		}
		out[i] = s
		b.Cleanup(func() { _ = s.Close() })
	}
	return out
}

// eraCall calls name with the benchmark's arguments on the caller's
// session, and wants the argument echoed.
func eraCall(sessions []*sdk.ClientSession, name string) func(context.Context, int) error {
	return func(ctx context.Context, agent int) error {
		res, err := sessions[agent].CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: callArgs})
		if err != nil {
			return err
		}
		if tc, ok := res.Content[0].(*sdk.TextContent); res.IsError || !ok || tc.Text != "hello" {
			return fmt.Errorf("%s answered something else (isError %t)", name, res.IsError)
		}
		return nil
	}
}

// bearer presents a bearer token on every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (t bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(req)
}

// createAgent creates srv and, in its namespace, the ServiceAccount agent
// with RBAC call on every McpTool there and an access policy raising its
// ceiling to Internal.
func createAgent(b *testing.B, r *envtestRun, srv *mcpv1alpha1.McpServer) {
	b.Helper()
	ctx := context.Background()
	ns := srv.Namespace
	objects := []client.Object{
		srv,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools"}, Verbs: []string{authz.VerbCall},
		}}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "call"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "agent"}},
		},
		&mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
		},
	}
	for _, o := range objects {
		if err := r.c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
}

// gatewayAgent declares the McpServer docs for url, enables and approves
// its echo tool, and returns the token of a ServiceAccount that RBAC and an
// access policy let call it, once the API server accepts both.
func gatewayAgent(b *testing.B, r *envtestRun, url string) string {
	b.Helper()
	ctx := context.Background()
	const ns = "agents"
	r.namespace(b, ns)
	srv := mcpServer(ns, "docs", url, time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	object, err := toolname.ObjectName("docs", mcpserver.ToolEcho)
	if err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: object}
	await(b, time.Minute, "the echo tool imported", func() bool {
		t := &mcpv1alpha1.McpTool{}
		if r.c.Get(ctx, key, t) != nil || t.Status.DefinitionHash == "" {
			return false
		}
		patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
		t.Spec.Enabled, t.Spec.ApprovedDefinitionHash = true, t.Status.DefinitionHash
		return r.c.Patch(ctx, t, patch) == nil
	}, r.describe(ns, "docs"))
	await(b, time.Minute, "the echo tool Ready", func() bool {
		t := &mcpv1alpha1.McpTool{}
		if r.c.Get(ctx, key, t) != nil {
			return false
		}
		c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == t.Generation
	})

	cs, err := kubernetes.NewForConfig(r.cfg)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{manager.DefaultGatewayAudience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// The gateway caches a refusal: wait until the API server itself
	// accepts the token and allows the call before the first one.
	await(b, 30*time.Second, "the token and the role accepted", func() bool {
		rev := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token, Audiences: []string{manager.DefaultGatewayAudience}}}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":agent",
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: authz.VerbCall, Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools", Name: object,
			},
		}}
		return r.c.Create(ctx, rev) == nil && rev.Status.Authenticated && r.c.Create(ctx, sar) == nil && sar.Status.Allowed
	})
	return tr.Status.Token
}
