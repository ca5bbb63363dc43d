package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/bench/soakstat"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testproc"
)

// The soak's scenario. Its length is SOAK_DURATION (one hour by default);
// everything else is fixed, so that two runs of the same length are the
// same run.
const (
	soakNS       = "soak"
	soakSystemNS = "soak-system"
	// soakReplicas gateway processes serve the agents, each agent one.
	soakReplicas = 2
	// soakSteady upstreams stay up: the agents call their echo tools, the
	// second's only with a person's approval. soakFlapping go down for
	// soakFlapDown in every soakFlapPeriod, staggered, so that their
	// probes flip Reachable and Ready both ways.
	soakSteady     = 2
	soakFlapping   = 2
	soakFlapPeriod = 2 * time.Minute
	soakFlapDown   = 30 * time.Second
	// Every upstream changes its catalog every soakChurnPeriod: one tool's
	// description (drift of an enabled tool, which the person re-approves)
	// and one tool added and another removed. The controllers find it on
	// their import every soakImportInterval (the API's shortest), and on
	// a flapping server's return.
	soakChurnPeriod    = 2 * time.Minute
	soakImportInterval = time.Minute
	soakCatalogTools   = 20
	// soakAgentsPerEra go-sdk agents per replica and protocol era call
	// one after another with soakAgentPause between calls; once every
	// soakApprovalPeriod an agent's call is of the tool that needs
	// approval. That is a person's pace, not a machine's: approvals are
	// kept an hour past their expiry (docs/adr/012-call-approvals.md), so
	// every one made in the run is still in the caches at its end, and at
	// a call in ten (1.5 a second) they alone made the controllers' heap
	// rise (docs/adr/052-soak-judged-by-slope.md).
	soakAgentsPerEra   = 1
	soakAgentPause     = 250 * time.Millisecond
	soakApprovalPeriod = time.Minute
	// soakPerson is the user who decides approvals and re-approves
	// drifted definitions, someone other than the agents' ServiceAccount.
	soakPerson = "soak-approver@example.com"
	// soakDriftTool is the catalog tool whose description churns; it is
	// enabled on every server, so its drift is an enabled tool's.
	soakDriftTool = 1
)

// soakUpstreamAddr, set, makes this test binary one upstream of the soak
// (TestMain): a stateless go-sdk server whose catalog churns, serving its
// Go metrics on /metrics beside /mcp.
const soakUpstreamAddr = "BENCH_SOAK_UPSTREAM_ADDR"

// soakDuration is SOAK_DURATION, one hour by default.
func soakDuration(b *testing.B) time.Duration {
	b.Helper()
	v := os.Getenv("SOAK_DURATION")
	if v == "" {
		return time.Hour
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 2*time.Minute {
		b.Fatalf("SOAK_DURATION=%q: want a duration of at least 2m", v)
	}
	return d
}

// soakSampleEvery samples 360 times a run (every 10 s in an hour), but
// not more often than every 2 s in a short one.
func soakSampleEvery(d time.Duration) time.Duration {
	return max(d/360, 2*time.Second)
}

// runSoakUpstream serves one upstream of the soak on addr until killed.
func runSoakUpstream(addr string, args []string) int {
	s, err := mcpserver.New(mcpserver.Options{Stateless: true, JSONResponse: true, Tools: soakCatalogTools})
	if err != nil {
		return 2
	}
	for _, a := range args {
		if probe, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			go func() {
				_ = http.ListenAndServe(probe, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
			}()
		}
	}
	// The catalog's revision follows the wall clock, so that a server that
	// comes back offers what it would have offered had it stayed up.
	gen := int64(-1)
	churn := func() {
		g := time.Now().Unix() / int64(soakChurnPeriod/time.Second)
		if g == gen {
			return
		}
		_ = s.SetToolDescription(mcpserver.CatalogToolName(soakDriftTool), fmt.Sprintf("Catalog tool, revision %d.", g))
		s.AddTools(fmt.Sprintf("churn_%d", g))
		s.RemoveTools(fmt.Sprintf("churn_%d", g-1), fmt.Sprintf("churn_%d", gen))
		gen = g
	}
	churn()
	go func() {
		for range time.Tick(time.Second) {
			churn()
		}
	}()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.Handle("/", s.Handler())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 1
	}
	_ = (&http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}).Serve(ln)
	return 1
}

// soakUpstream is one upstream process and where it listens.
type soakUpstream struct {
	name, addr string
	flaps      bool
	offset     time.Duration // into the run, of its first stop
	proc       *managerProc
}

func (u *soakUpstream) start(b *testing.B, self string) {
	b.Helper()
	u.proc = startManagerProc(b, procSpec{what: "upstream " + u.name, binary: self, kubeconfig: os.DevNull,
		env: []string{soakUpstreamAddr + "=" + u.addr}})
}

func (u *soakUpstream) stop() {
	_ = u.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-u.proc.done
}

// down says whether a flapping upstream is down at elapsed into the run.
func (u *soakUpstream) down(elapsed time.Duration) bool {
	if !u.flaps || elapsed < u.offset {
		return false
	}
	return (elapsed-u.offset)%soakFlapPeriod < soakFlapDown
}

func (u *soakUpstream) url() string { return "http://" + u.addr + mcpserver.Path }

// tokenSource holds the agents' current token, renewed by the soak.
type tokenSource struct{ p atomic.Pointer[string] }

func (t *tokenSource) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+*t.p.Load())
	return http.DefaultTransport.RoundTrip(req)
}

// soakTally is what the agents and the person did, counted as it happens.
type soakTally struct {
	calls, failed, approvals, reapprovals atomic.Int64
	mu                                    sync.Mutex
	firstErrors                           []string
}

func (t *soakTally) fail(agent string, err error) {
	t.failed.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.firstErrors) < 10 {
		t.firstErrors = append(t.firstErrors, fmt.Sprintf("%s %s: %v", time.Now().UTC().Format(time.TimeOnly), agent, err))
	}
}

// soakAgent is one go-sdk client calling through one gateway replica.
type soakAgent struct {
	name, era, endpoint string
	hc                  *http.Client
	admin               client.Client
	tally               *soakTally
	cs                  *sdk.ClientSession
}

func (a *soakAgent) connect(ctx context.Context) error {
	opts := &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{
		Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}},
	}}
	if a.era == eraModern {
		// The agent's user is sent to the approval; once the person has
		// decided it, the user comes back and the SDK retries the call.
		opts.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			ns, name, _ := strings.Cut(req.Params.ElicitationID, "/")
			if err := a.awaitDecision(ctx, ns, name); err != nil {
				return &sdk.ElicitResult{Action: "cancel"}, nil
			}
			return &sdk.ElicitResult{Action: "accept"}, nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: a.name, Version: "1"}, opts).Connect(cctx,
		&sdk.StreamableClientTransport{Endpoint: a.endpoint, HTTPClient: a.hc, DisableStandaloneSSE: true},
		&sdk.ClientSessionOptions{ProtocolVersion: a.era})
	if err != nil {
		return err
	}
	a.cs = cs
	return nil
}

// awaitDecision returns once the McpCallApproval ns/name is decided.
func (a *soakAgent) awaitDecision(ctx context.Context, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return poll.Wait(ctx, 250*time.Millisecond, func() error {
		var ap mcpv1alpha1.McpCallApproval
		if err := a.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ap); err != nil {
			return err
		}
		if ap.Spec.Decision == mcpv1alpha1.CallPending {
			return errors.New("pending")
		}
		return nil
	})
}

// run calls until ctx ends: the echo of steady-0, and once every
// soakApprovalPeriod, from first (into the run), the echo of steady-1,
// which waits for the person. Each call's text is new, so each approval
// is a new one.
func (a *soakAgent) run(ctx context.Context, first time.Duration) {
	tick := time.NewTicker(soakAgentPause)
	defer tick.Stop()
	next := time.Now().Add(first)
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		server := soakServerName(false, 0)
		if time.Now().After(next) {
			server = soakServerName(false, 1)
			next = next.Add(soakApprovalPeriod)
		}
		text := fmt.Sprintf("%s call %d", a.name, i)
		err := a.call(ctx, toolname.LocalName(server, mcpserver.ToolEcho), text)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			a.tally.fail(a.name, err)
			// A broken session is opened again before the next call.
			_ = a.cs.Close()
			_ = poll.Wait(ctx, time.Second, func() error { return a.connect(ctx) })
			continue
		}
		a.tally.calls.Add(1)
	}
}

// call makes one call and wants text echoed. In the initialize era a call
// that waits for approval is answered with -32042 or with a result saying
// so; the agent waits for the person and sends the same call again.
func (a *soakAgent) call(ctx context.Context, tool, text string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	for {
		res, err := a.cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
		var rpc *jsonrpc.Error
		waiting := false
		switch {
		case errors.As(err, &rpc) && rpc.Code == sdk.CodeURLElicitationRequired && a.era != eraModern:
			waiting = true
		case err != nil:
			return err
		case res.IsError:
			got := resultText(res)
			if a.era == eraModern || !strings.Contains(got, "approval") {
				return fmt.Errorf("isError result: %s", got)
			}
			waiting = true
			last = errors.New(got)
		default:
			if got := resultText(res); got != text {
				return fmt.Errorf("answered %q, want %q", got, text)
			}
			return nil
		}
		if !waiting {
			return last
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("still waiting for approval: %w", cctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func resultText(res *sdk.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, " ")
}

// soakServerName names the McpServer (and upstream) i of its kind.
func soakServerName(flaps bool, i int) string {
	if flaps {
		return fmt.Sprintf("flap-%d", i)
	}
	return fmt.Sprintf("steady-%d", i)
}

// person decides every pending approval of the soak's namespace, as
// soakPerson, and re-approves every enabled tool whose definition changed,
// as the platform engineer would, until ctx ends.
func (r *envtestRun) person(ctx context.Context, b *testing.B, tally *soakTally) {
	cfg := rest.CopyConfig(r.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: soakPerson, Groups: []string{"system:authenticated"}}
	as, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Error(err)
		return
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var list mcpv1alpha1.McpCallApprovalList
		if err := as.List(ctx, &list, client.InNamespace(soakNS)); err == nil {
			for i := range list.Items {
				ap := &list.Items[i]
				if ap.Spec.Decision != mcpv1alpha1.CallPending || ap.Status.ConsumedAt != nil {
					continue
				}
				ap.Spec.Decision, ap.Spec.DecidedBy = mcpv1alpha1.CallApproved, soakPerson
				if as.Update(ctx, ap) == nil {
					tally.approvals.Add(1)
				}
			}
		}
		if n%20 != 0 {
			continue
		}
		var tools mcpv1alpha1.McpToolList
		if err := r.c.List(ctx, &tools, client.InNamespace(soakNS)); err != nil {
			continue
		}
		for i := range tools.Items {
			t := &tools.Items[i]
			if !t.Spec.Enabled || t.Status.DefinitionHash == "" || t.Status.DefinitionHash == t.Spec.ApprovedDefinitionHash {
				continue
			}
			patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
			t.Spec.ApprovedDefinitionHash = t.Status.DefinitionHash
			if r.c.Patch(ctx, t, patch) == nil {
				tally.reapprovals.Add(1)
			}
		}
	}
}

// soakProc is one process whose levels are sampled: from /proc (the
// resident set) and, where it serves them, its Prometheus metrics (heap
// in use and goroutines).
type soakProc struct {
	name    string
	pid     int
	metrics string // URL of /metrics; empty reads only the resident set
}

// promSample is one series of a metrics page: the name, the labels as
// written, and the value.
type promSample struct {
	name, labels string
	value        float64
}

// scrape reads a Prometheus text page.
func scrape(hc *http.Client, url string) ([]promSample, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var out []promSample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		key := line[:sp]
		name, labels := key, ""
		if i := strings.IndexByte(key, '{'); i >= 0 {
			name, labels = key[:i], key[i:]
		}
		out = append(out, promSample{name: name, labels: labels, value: v})
	}
	return out, sc.Err()
}

// sum adds the series of name whose labels hold every one of want.
func sum(samples []promSample, name string, want ...string) (float64, bool) {
	var total float64
	found := false
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for _, w := range want {
			if !strings.Contains(s.labels, w) {
				match = false
			}
		}
		if match {
			total += s.value
			found = true
		}
	}
	return total, found
}

// runtimeParts records where a Go process's memory outside the heap in use
// sits, so that a resident set rising beside a flat heap can be explained:
// heap spans the runtime keeps idle without returning them to the kernel,
// goroutine stacks, the runtime's own structures (span and cache metadata,
// the GC's bitmaps, profiling buckets), and all the runtime holds from the
// kernel less what it has returned. The resident set's anonymous part less
// the last is memory the Go runtime does not account for.
func runtimeParts(rec *soakRecorder, process string, t float64, m []promSample) {
	get := func(name string) (float64, bool) { return sum(m, name) }
	idle, ok1 := get("go_memstats_heap_idle_bytes")
	released, ok2 := get("go_memstats_heap_released_bytes")
	if ok1 && ok2 {
		rec.level(process, "heap-kept", t, (idle-released)/(1<<20))
	}
	if v, ok := get("go_memstats_stack_inuse_bytes"); ok {
		rec.level(process, "stacks", t, v/(1<<20))
	}
	sys, ok3 := get("go_memstats_sys_bytes")
	heapSys, ok4 := get("go_memstats_heap_sys_bytes")
	stackSys, ok5 := get("go_memstats_stack_sys_bytes")
	if ok3 && ok4 && ok5 {
		rec.level(process, "runtime-other", t, (sys-heapSys-stackSys)/(1<<20))
	}
	if ok2 && ok3 {
		rec.level(process, "go-held", t, (sys-released)/(1<<20))
	}
	// The heap size the next collection is due at: the background
	// scavenger keeps about this much (and a tenth more) from the kernel,
	// so idle heap below it is kept by design, not leaked.
	if v, ok := get("go_memstats_next_gc_bytes"); ok {
		rec.level(process, "heap-goal", t, v/(1<<20))
	}
}

// rssOf is the resident set of pid in MiB, or NaN if it cannot be read.
func rssOf(pid int) float64 { return statusMiB(pid, "VmRSS") }

// statusMiB is a kB field of /proc/PID/status in MiB, or NaN if it cannot
// be read.
func statusMiB(pid int, field string) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return math.NaN()
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				return math.NaN()
			}
			return float64(kb) / 1024
		}
	}
	return math.NaN()
}

// soakRecorder keeps the samples.
type soakRecorder struct {
	series map[string]*soakstat.Series
	counts map[string]*soakstat.Count
	order  []string
	corder []string
}

func (s *soakRecorder) level(process, metric string, t, v float64) {
	if math.IsNaN(v) {
		return
	}
	k := process + "\x00" + metric
	if s.series[k] == nil {
		s.series[k] = &soakstat.Series{Process: process, Metric: metric}
		s.order = append(s.order, k)
	}
	s.series[k].T = append(s.series[k].T, math.Round(t*10)/10)
	s.series[k].V = append(s.series[k].V, round(v))
}

func (s *soakRecorder) count(name string, errs bool, t, v float64) {
	if s.counts[name] == nil {
		s.counts[name] = &soakstat.Count{Name: name, Errors: errs}
		s.corder = append(s.corder, name)
	}
	s.counts[name].T = append(s.counts[name].T, math.Round(t*10)/10)
	s.counts[name].V = append(s.counts[name].V, v)
}

// round keeps four significant decimals, enough for a MiB and a count.
func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// BenchmarkSoak runs the operator for SOAK_DURATION (one hour by default)
// under a steady mixed load and reports whether any process grows: the
// controllers as one process and two gateway replicas, each the manager
// binary as the chart runs it, against envtest; two steady and two
// flapping upstream MCP servers, each a process of this binary, whose
// catalogs churn so that imports keep finding changes and drift; agents
// (go-sdk clients, one per protocol era per replica) calling through both
// replicas without pause but a short one, once a minute a tool that needs
// approval; and a person who approves those calls (through the admission policy of
// config/policy) and re-approves drifted definitions.
//
// Every few seconds it samples each process's resident set (/proc) and,
// from its metrics, Go heap in use and goroutines, and the counters that
// count errors: failed agent calls, gateway calls that Failed, audit
// failures, reconcile errors. It writes what it measured as JSON to
// SOAK_RESULTS (when set), from which the report program renders the soak
// section of docs/benchmarks.md; the judgements (flat, spike) are
// soakstat's. It runs only under -bench: `make soak`.
func BenchmarkSoak(b *testing.B) {
	dur := soakDuration(b)
	every := soakSampleEvery(dur)
	r := startEnvtest(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	binary := buildManager(b)
	apiPID, etcdPID := childPID(b, "kube-apiserver"), childPID(b, "etcd")

	r.namespace(b, soakNS)
	r.namespace(b, soakSystemNS)
	policy := applyApprovalPolicy(b, r)
	key := make([]byte, 48)
	_, _ = rand.Read(key)
	mustCreate(b, r, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: soakSystemNS, Name: "approval-key"}, Data: map[string][]byte{"current": key}})
	mustCreate(b, r, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: "call-approvers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "call-approver"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: soakPerson}}})

	var ups []*soakUpstream
	for i := range soakSteady {
		ups = append(ups, &soakUpstream{name: soakServerName(false, i), addr: testproc.FreeAddr(b)})
	}
	for i := range soakFlapping {
		ups = append(ups, &soakUpstream{name: soakServerName(true, i), addr: testproc.FreeAddr(b), flaps: true,
			offset: soakFlapPeriod/2 + time.Duration(i)*soakFlapPeriod/soakFlapping})
	}
	for _, u := range ups {
		u.start(b, self)
	}

	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	testproc.WriteKubeconfig(b, kubeconfig, r.cfg, "")
	ctrlMetrics := testproc.FreeAddr(b)
	ctrl := startControllers(b, binary, kubeconfig, "--leader-elect=false",
		"--metrics-bind-address="+ctrlMetrics, "--metrics-secure=false", "--listen-tool-changes=true")

	// The servers, the agents' ServiceAccount, RBAC and access policy.
	for i, u := range ups {
		interval := 10 * time.Second
		if u.flaps {
			interval = 5 * time.Second
		}
		srv := mcpServer(soakNS, u.name, u.url(), interval)
		srv.Spec.Import.Interval = &metav1.Duration{Duration: soakImportInterval}
		srv.Spec.ApprovalRequired = ptr.To(u.name == soakServerName(false, 1))
		if i == 0 {
			createAgent(b, r, srv)
			continue
		}
		mustCreate(b, r, srv)
	}
	for _, u := range ups {
		remotes := []string{mcpserver.CatalogToolName(soakDriftTool)}
		if !u.flaps {
			remotes = append(remotes, mcpserver.ToolEcho)
		}
		for _, remote := range remotes {
			enableTool(b, r, u.name, remote)
		}
	}

	var gws []*gatewayProc
	gwMetrics := make([]string, soakReplicas)
	for i := range gwMetrics {
		gwMetrics[i] = testproc.FreeAddr(b)
		gws = append(gws, startGatewayWith(b, gatewaySetup{
			binary: binary, kubeconfig: kubeconfig, gogc: chartGatewayGOGC(b),
			auditFile: filepath.Join(b.TempDir(), fmt.Sprintf("audit-%d.jsonl", i)),
			args: []string{
				"--metrics-bind-address=" + gwMetrics[i], "--metrics-secure=false",
				"--gateway-approval-key-secret=" + soakSystemNS + "/approval-key",
				"--gateway-approval-policy=" + policy,
			},
		}))
	}

	tokens := &tokenSource{}
	renewToken := soakTokens(b, r, tokens)
	tally := &soakTally{}
	var wg sync.WaitGroup
	wg.Go(func() { r.person(ctx, b, tally) })
	hc := &http.Client{Transport: tokens}
	var agents []*soakAgent
	for i, g := range gws {
		for _, era := range []string{eraInitialize, eraModern} {
			for n := range soakAgentsPerEra {
				a := &soakAgent{name: fmt.Sprintf("agent-%d-%s-%d", i, era, n), era: era,
					endpoint: "http://" + g.addr + gateway.Path, hc: hc, admin: r.c, tally: tally}
				cctx, ccancel := context.WithTimeout(ctx, time.Minute)
				err := poll.Wait(cctx, time.Second, func() error { return a.connect(cctx) })
				ccancel()
				if err != nil {
					b.Fatalf("%s connecting: %v\n%s", a.name, err, readTail(g.log))
				}
				agents = append(agents, a)
			}
		}
	}

	procs := []soakProc{
		{name: "controllers", pid: ctrl.cmd.Process.Pid, metrics: "http://" + ctrlMetrics + "/metrics"},
	}
	for i, g := range gws {
		procs = append(procs, soakProc{name: fmt.Sprintf("gateway-%d", i), pid: g.cmd.Process.Pid, metrics: "http://" + gwMetrics[i] + "/metrics"})
	}
	for _, u := range ups {
		if !u.flaps {
			procs = append(procs, soakProc{name: "upstream " + u.name, pid: u.proc.cmd.Process.Pid, metrics: "http://" + u.addr + "/metrics"})
		}
	}
	procs = append(procs,
		soakProc{name: "kube-apiserver", pid: apiPID},
		soakProc{name: "etcd", pid: etcdPID},
	)

	for i, a := range agents {
		// Staggered, so that the person decides one at a time.
		wg.Go(func() { a.run(ctx, time.Duration(i)*soakApprovalPeriod/time.Duration(len(agents))) })
	}
	rec := &soakRecorder{series: map[string]*soakstat.Series{}, counts: map[string]*soakstat.Count{}}
	mhc := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	flaps := 0
	sample := func(t float64) {
		for _, p := range procs {
			rec.level(p.name, "rss", t, rssOf(p.pid))
			// The anonymous part: the rest is file pages, nearly all the
			// binary's code, which grows as code paths run for the first
			// time and is not the process's to leak.
			rec.level(p.name, "rss-anon", t, statusMiB(p.pid, "RssAnon"))
			if p.metrics == "" {
				continue
			}
			m, err := scrape(mhc, p.metrics)
			if err != nil {
				b.Logf("%s: %v", p.name, err)
				continue
			}
			if v, ok := sum(m, "go_memstats_heap_inuse_bytes"); ok {
				rec.level(p.name, "heap", t, v/(1<<20))
			}
			if v, ok := sum(m, "go_goroutines"); ok {
				rec.level(p.name, "goroutines", t, v)
			}
			runtimeParts(rec, p.name, t, m)
			switch {
			case p.name == "controllers":
				v, _ := sum(m, "controller_runtime_reconcile_errors_total")
				rec.count("controllers: reconcile errors", true, t, v)
				v, _ = sum(m, "mcp_catalog_probe_failures_total")
				rec.count("controllers: failed probes", false, t, v)
				v, _ = sum(m, "mcp_catalog_import_duration_seconds_count")
				rec.count("controllers: imports", false, t, v)
				v, _ = sum(m, "mcp_catalog_import_failures_total")
				rec.count("controllers: failed imports", false, t, v)
				v, _ = sum(m, "mcp_catalog_tool_drift_total")
				rec.count("controllers: drift recorded", false, t, v)
			case strings.HasPrefix(p.name, "gateway-"):
				v, _ := sum(m, "mcp_catalog_gateway_calls_total", `outcome="Failed"`)
				rec.count(p.name+": calls Failed", true, t, v)
				v, _ = sum(m, "mcp_catalog_gateway_audit_failures_total")
				rec.count(p.name+": audit failures", true, t, v)
				v, _ = sum(m, "mcp_catalog_gateway_approvals_total", `event="used"`)
				rec.count(p.name+": approvals used", false, t, v)
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rec.level("soak (agents, person)", "rss", t, rssOf(os.Getpid()))
		rec.level("soak (agents, person)", "rss-anon", t, statusMiB(os.Getpid(), "RssAnon"))
		rec.level("soak (agents, person)", "heap", t, float64(ms.HeapInuse)/(1<<20))
		rec.level("soak (agents, person)", "goroutines", t, float64(runtime.NumGoroutine()))
		rec.count("agents: calls answered", false, t, float64(tally.calls.Load()))
		rec.count("agents: calls failed", true, t, float64(tally.failed.Load()))
		rec.count("person: approvals decided", false, t, float64(tally.approvals.Load()))
	}
	alive := func() {
		for _, p := range []*managerProc{ctrl.managerProc, gws[0].managerProc, gws[1].managerProc} {
			select {
			case <-p.done:
				b.Fatalf("a process exited: %v\n%s", p.cmd.ProcessState, readTail(p.log))
			default:
			}
		}
	}
	b.Logf("soaking for %s, sampling every %s", dur, every)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	nextSample, nextToken := time.Duration(0), 20*time.Minute
	for {
		elapsed := time.Since(start)
		if elapsed >= nextSample {
			alive()
			sample(elapsed.Seconds())
			nextSample += every
			if nextSample > dur && elapsed < dur {
				nextSample = dur
			}
		}
		if elapsed >= dur {
			break
		}
		for _, u := range ups {
			select {
			case <-u.proc.done:
				if !u.flaps {
					b.Fatalf("upstream %s exited: %v\n%s", u.name, u.proc.cmd.ProcessState, readTail(u.proc.log))
				}
				if !u.down(elapsed) {
					u.start(b, self)
				}
			default:
				if u.down(elapsed) {
					u.stop()
					flaps++
				}
			}
		}
		if elapsed >= nextToken {
			renewToken()
			nextToken += 20 * time.Minute
		}
		<-tick.C
	}
	cancel()
	wg.Wait()

	res := soakstat.Results{
		Date: start.UTC(), Go: runtime.Version(),
		Duration: soakstat.Seconds(dur.Seconds()), Warmup: soakstat.Seconds(dur.Seconds() * soakstat.WarmupFraction),
		Sample: soakstat.Seconds(every.Seconds()), Bucket: soakstat.Seconds(dur.Seconds() / 12),
		Setup: soakstat.Setup{
			Replicas: soakReplicas, SteadyUpstreams: soakSteady, FlapUpstreams: soakFlapping,
			FlapPeriod: soakstat.Seconds(soakFlapPeriod.Seconds()), FlapDown: soakstat.Seconds(soakFlapDown.Seconds()),
			ChurnPeriod: soakstat.Seconds(soakChurnPeriod.Seconds()), ImportInterval: soakstat.Seconds(soakImportInterval.Seconds()),
			AgentsPerEra: soakAgentsPerEra, AgentPause: soakstat.Seconds(soakAgentPause.Seconds()), ApprovalPeriod: soakstat.Seconds(soakApprovalPeriod.Seconds()),
			Calls: int(tally.calls.Load()), Approvals: int(tally.approvals.Load()), Flaps: flaps, Reapprovals: int(tally.reapprovals.Load()),
		},
	}
	cpu, cores := machineName()
	res.Machine = fmt.Sprintf("%s, %d cores", cpu, cores)
	for _, k := range rec.order {
		res.Series = append(res.Series, *rec.series[k])
	}
	for _, k := range rec.corder {
		res.Counts = append(res.Counts, *rec.counts[k])
	}
	for _, e := range tally.firstErrors {
		b.Logf("failed call: %s", e)
	}
	for _, s := range res.Series {
		f := soakstat.Analyse(s, float64(res.Warmup))
		b.Logf("%-24s %-10s mean %10.2f slope %+9.3f/h growth %+8.3f bound %7.3f flat %t rising %t", s.Process, s.Metric, f.Mean, f.SlopePerHour, f.Growth, f.Bound, f.Flat, f.Rising)
	}
	for _, c := range res.Counts {
		bk := soakstat.Buckets(c, float64(res.Bucket), float64(res.Duration))
		b.Logf("%-36s per bucket %v spikes %v", c.Name, bk, soakstat.Spikes(bk))
	}
	b.ReportMetric(float64(res.Setup.Calls), "calls")
	b.ReportMetric(float64(tally.failed.Load()), "calls-failed")
	b.ReportMetric(float64(res.Setup.Approvals), "approvals")
	b.ReportMetric(float64(flaps), "flaps")
	if path := os.Getenv("SOAK_RESULTS"); path != "" {
		raw, err := json.Marshal(res)
		if err != nil {
			b.Fatal(err)
		}
		// One series or count a line, so that the committed file diffs
		// by series.
		out := strings.NewReplacer(`[{"process"`, "[\n{\"process\"", `},{"process"`, "},\n{\"process\"",
			`[{"name"`, "[\n{\"name\"", `},{"name"`, "},\n{\"name\"").Replace(string(raw))
		if err := os.WriteFile(path, []byte(out+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %s", path)
	}
}

// machineName is the CPU's model name and how many CPUs the machine has.
func machineName() (string, int) {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown", runtime.NumCPU()
	}
	name, n := "", 0
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if name == "" {
				name = strings.TrimSpace(v)
			}
		case "processor":
			n++
		}
	}
	return name, n
}

func mustCreate(b *testing.B, r *envtestRun, objs ...client.Object) {
	b.Helper()
	for _, o := range objs {
		if err := r.c.Create(context.Background(), o); err != nil {
			b.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// applyApprovalPolicy applies config/policy/call_approvals.yaml (the
// admission policy that keeps a caller from deciding its own approval,
// its binding and the call-approver role) and returns the policy's name.
func applyApprovalPolicy(b *testing.B, r *envtestRun) string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "call_approvals.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(raw)), 4096)
	name := ""
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			b.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "ValidatingAdmissionPolicy" {
			name = u.GetName()
		}
		if err := r.c.Create(context.Background(), &u); err != nil {
			b.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if name == "" {
		b.Fatal("config/policy/call_approvals.yaml holds no ValidatingAdmissionPolicy")
	}
	return name
}

// enableTool waits for remote of server to be imported, enables it with
// its definition approved, and waits for it to be Ready.
func enableTool(b *testing.B, r *envtestRun, server, remote string) {
	b.Helper()
	ctx := context.Background()
	object, err := toolname.ObjectName(server, remote)
	if err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKey{Namespace: soakNS, Name: object}
	await(b, 2*time.Minute, object+" imported and enabled", func() bool {
		t := &mcpv1alpha1.McpTool{}
		if r.c.Get(ctx, key, t) != nil || t.Status.DefinitionHash == "" {
			return false
		}
		patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
		t.Spec.Enabled, t.Spec.ApprovedDefinitionHash = true, t.Status.DefinitionHash
		return r.c.Patch(ctx, t, patch) == nil
	}, r.describe(soakNS, server))
	await(b, 2*time.Minute, object+" Ready", func() bool {
		t := &mcpv1alpha1.McpTool{}
		if r.c.Get(ctx, key, t) != nil {
			return false
		}
		c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == t.Generation
	}, r.describe(soakNS, server))
}

// soakTokens puts a token of the agents' ServiceAccount in tokens, once
// the API server accepts it and allows the calls, and returns a function
// that replaces it with a new one (the soak does every 20 minutes; each
// lives an hour).
func soakTokens(b *testing.B, r *envtestRun, tokens *tokenSource) func() {
	b.Helper()
	cs, err := kubernetes.NewForConfig(r.cfg)
	if err != nil {
		b.Fatal(err)
	}
	next := func() (string, error) {
		tr, err := cs.CoreV1().ServiceAccounts(soakNS).CreateToken(context.Background(), "agent", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{manager.DefaultGatewayAudience}, ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return tr.Status.Token, nil
	}
	tok, err := next()
	if err != nil {
		b.Fatal(err)
	}
	object, err := toolname.ObjectName(soakServerName(false, 0), mcpserver.ToolEcho)
	if err != nil {
		b.Fatal(err)
	}
	// The gateway caches a refusal: the API server accepts the token and
	// allows the call before the first one.
	await(b, 30*time.Second, "the token and the role accepted", func() bool {
		ctx := context.Background()
		rev := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok, Audiences: []string{manager.DefaultGatewayAudience}}}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + soakNS + ":agent",
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: soakNS, Verb: authz.VerbCall, Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools", Name: object,
			},
		}}
		return r.c.Create(ctx, rev) == nil && rev.Status.Authenticated && r.c.Create(ctx, sar) == nil && sar.Status.Allowed
	})
	tokens.p.Store(&tok)
	return func() {
		if t, err := next(); err == nil {
			tokens.p.Store(&t)
		} else {
			b.Logf("renewing the agents' token: %v", err)
		}
	}
}
