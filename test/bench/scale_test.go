package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testenv"
	"github.com/mcp-catalog/operator/test/testproc"
)

// Scale of the envtest scenarios. BENCH_SERVERS overrides the number of
// McpServers of the probe and cache scenarios, for a machine on which 1,000
// does not fit; docs/benchmarks.md states the scale that ran.
const (
	importTools      = 10000
	importPageSize   = 100
	applyConcurrency = 8 // the importer's default (McpServerReconciler.ApplyConcurrency)
	probeInterval    = 5 * time.Second
)

// scaleTools is the size of the imported catalog; BENCH_TOOLS overrides it
// (a multiple of the page size) for a quick run.
func scaleTools() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_TOOLS")); err == nil && v > 0 {
		return v
	}
	return importTools
}

func scaleServers() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_SERVERS")); err == nil && v > 0 {
		return v
	}
	return 1000
}

// writeCounter counts the API requests that change something, by resource
// (the path segment after the namespace, with "/status" kept).
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
	// traffic is every request, writes or not, by verb and resource:
	// how many, and the bytes sent and received (a watch's events
	// included), for the import scenario's account of its requests.
	traffic map[string]*traffic
}

type traffic struct {
	n         int
	sent, got int64
}

// trafficSnapshot copies the request account.
func (w *writeCounter) trafficSnapshot() map[string]traffic {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]traffic, len(w.traffic))
	for k, t := range w.traffic {
		out[k] = *t
	}
	return out
}

// accountTraffic makes w account for every request from now on; only the
// import scenario reads the account, so the others do not pay for it.
func (w *writeCounter) accountTraffic() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.traffic = map[string]*traffic{}
}

func (w *writeCounter) accounting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.traffic != nil
}

func (w *writeCounter) account(key string, sent, got int64, req bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.traffic[key]
	if t == nil {
		t = &traffic{}
		w.traffic[key] = t
	}
	if req {
		t.n++
	}
	t.sent += sent
	t.got += got
}

// countedBody counts what is read of a response body into its request's
// account.
type countedBody struct {
	io.ReadCloser
	w   *writeCounter
	key string
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		c.w.account(c.key, 0, int64(n), false)
	}
	return n, err
}

// countingTransport is one client's transport feeding the shared counts.
type countingTransport struct {
	w    *writeCounter
	next http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	q := req.URL.Query()
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		key := writeKey(req.URL.Path)
		fm := q.Get("fieldManager")
		w.mu.Lock()
		w.counts[key]++
		// Server-side applies name their field manager: the importer's
		// writes are told apart from the McpTool controller's.
		if fm != "" {
			w.counts[key+"@"+fm]++
		}
		w.mu.Unlock()
	}
	if !w.accounting() {
		return t.next.RoundTrip(req)
	}
	verb := req.Method
	if q.Get("watch") == "true" {
		verb = "WATCH"
	}
	key := verb + " " + trafficKey(req.URL.Path)
	w.account(key, max(req.ContentLength, 0), 0, true)
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, w: w, key: key}
	}
	return resp, err
}

// writeKey reduces /apis/g/v/namespaces/ns/mcptools/name/status to
// "mcptools/status".
func writeKey(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	return "other"
}

// trafficKey is writeKey for any path: a cluster-wide list or watch is
// named by its resource, anything else by its last segment.
func trafficKey(path string) string {
	if k := writeKey(path); k != "other" {
		return k
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return parts[len(parts)-1]
}

// trafficDelta is what happened in w between two snapshots.
func trafficDelta(after, before map[string]traffic) map[string]traffic {
	out := map[string]traffic{}
	for k, a := range after {
		b := before[k]
		if d := (traffic{n: a.n - b.n, sent: a.sent - b.sent, got: a.got - b.got}); d != (traffic{}) {
			out[k] = d
		}
	}
	return out
}

// trafficTotals sums a phase's requests: how many, the bytes they sent and
// received, and, apart, the bytes received on watches.
func trafficTotals(t map[string]traffic) (requests int, sent, got, watched int64) {
	for k, v := range t {
		if strings.HasPrefix(k, "WATCH ") {
			watched += v.got
			continue
		}
		requests += v.n
		sent += v.sent
		got += v.got
	}
	return requests, sent, got, watched
}

// reportTraffic reports a phase's trafficTotals as metrics named after it.
func reportTraffic(b *testing.B, phase string, t map[string]traffic) {
	b.Helper()
	n, sent, got, watched := trafficTotals(t)
	b.ReportMetric(float64(n), phase+"-requests")
	b.ReportMetric(float64(sent)/(1<<20), phase+"-sent-MiB")
	b.ReportMetric(float64(got)/(1<<20), phase+"-received-MiB")
	b.ReportMetric(float64(watched)/(1<<20), phase+"-watch-received-MiB")
}

// logTraffic writes a phase's requests, by verb and resource, to the
// benchmark's log.
func logTraffic(b *testing.B, phase string, t map[string]traffic) {
	b.Helper()
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "requests during the %s (verb resource: requests, MiB sent, MiB received):\n", phase)
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %-32s %7d %8.1f %8.1f\n", k, t[k].n, float64(t[k].sent)/(1<<20), float64(t[k].got)/(1<<20))
	}
	b.Log(sb.String())
}

// settle waits until no write to key happened for quiet.
func (r *envtestRun) settle(b *testing.B, key string, quiet time.Duration) {
	last, since := r.writes.get(key), time.Now()
	await(b, 5*time.Minute, key+" writes settled", func() bool {
		if n := r.writes.get(key); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet
	})
}

func (w *writeCounter) get(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[key]
}

// envtestRun is one control plane with the manager's REST config wrapped
// by a write counter.
type envtestRun struct {
	env    *envtest.Environment
	cfg    *rest.Config // plain, for the benchmark's own client
	mcfg   *rest.Config // counted, for the manager
	writes *writeCounter
	c      client.Client
	// manager is the import scenario's running manager, stopped when the
	// benchmark ends; each round's manager is stopped and dropped before
	// the next starts.
	manager *testenv.Manager
}

func startEnvtest(b *testing.B) *envtestRun {
	b.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set (run through `make bench`)")
	}
	// The manager's log at this scale is megabytes of reconcile lines that
	// would cost CPU in the measured process.
	logf.SetLogger(logr.Discard())
	plane := controlplane.Start(b)
	env, cfg := plane.Env, plane.Config
	// The default client-side rate limit (QPS 5) would measure the limiter,
	// not the operator; a real deployment sets its own.
	cfg.QPS, cfg.Burst = 1000, 2000
	r := &envtestRun{env: env, cfg: cfg, writes: &writeCounter{counts: map[string]int{}}}
	r.mcfg = rest.CopyConfig(cfg)
	r.mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{w: r.writes, next: rt} })
	var err error
	r.c, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.manager.Stop() })
	return r
}

// startManager runs the operator's manager in this process until the
// benchmark ends.
func (r *envtestRun) startManager(b *testing.B) {
	b.Helper()
	startManager(b, r.mcfg, nil)
}

// startManager runs a manager on cfg, with options changed by mutate, until
// the benchmark ends.
func startManager(b *testing.B, cfg *rest.Config, mutate func(*manager.Options)) {
	b.Helper()
	testenv.RunManager(b, cfg, managerOptions(mutate))
}

// managerOptions are the benchmarks' manager options, changed by mutate.
func managerOptions(mutate func(*manager.Options)) manager.Options {
	opts := testenv.ManagerOptions()
	opts.GracefulShutdownTimeout = 5 * time.Second
	if mutate != nil {
		mutate(&opts)
	}
	return opts
}

func (r *envtestRun) namespace(b *testing.B, name string) {
	b.Helper()
	if err := r.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		b.Fatal(err)
	}
}

// await waits until cond holds, for at most timeout; describe renders the
// state for the failure message (only then: it reads from the API server,
// which would load the measured process on every round).
func await(b *testing.B, timeout time.Duration, what string, cond func() bool, describe ...func() string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := poll.Wait(ctx, poll.Interval, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
	if err != nil {
		state := ""
		for _, d := range describe {
			state += d()
		}
		b.Fatalf("timed out after %s waiting for %s %s", timeout, what, state)
	}
}

// bigCatalog raises the import ceilings to fit the scenario's catalog: the
// API's default maxTools is 2,000.
func bigCatalog(s *mcpv1alpha1.McpServer) {
	s.Spec.Import.MaxTools = int32(scaleTools())
	s.Spec.Import.MaxPages = int32(scaleTools() / importPageSize)
}

// describe renders an McpServer's status for a failure message.
func (r *envtestRun) describe(ns, name string) func() string {
	return func() string {
		var s mcpv1alpha1.McpServer
		if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return err.Error()
		}
		out := fmt.Sprintf("tools %+v;", s.Status.Tools)
		for _, c := range s.Status.Conditions {
			out += fmt.Sprintf(" %s=%s (%s: %s);", c.Type, c.Status, c.Reason, c.Message)
		}
		return out
	}
}

func mcpServer(ns, name, url string, interval time.Duration) *mcpv1alpha1.McpServer {
	s := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.Spec.URL = url
	s.Spec.DataClass = mcpv1alpha1.DataClassInternal
	if interval > 0 {
		s.Spec.HealthCheck.Interval = &metav1.Duration{Duration: interval}
	}
	return s
}

// memory reports the process's live heap (after a GC) and resident set.
func memory(b *testing.B) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heapsys-MiB")
	b.ReportMetric(rssMiB(), "rss-MiB")
	// The runtime returns freed heap to the OS gradually; this is the
	// resident set once it has, i.e. what the process needs, not what its
	// peak left mapped.
	debug.FreeOSMemory()
	b.ReportMetric(rssMiB(), "rss-released-MiB")
}

// rssMiB reads VmRSS of this process. envtest's kube-apiserver and etcd
// are other processes and are not counted.
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return -1
}

// BenchmarkScaleImport imports a 10,000-tool catalog (100 pages) through
// the manager and compares the time with a floor: a bare controller-runtime
// client writing what the importer writes for each tool, the same way and
// with the same concurrency, in the same run while the manager is stopped.
// One run of each is the machine's verdict rather than the operator's (the
// same 20,000 writes cost kube-apiserver 73 to 100 s of CPU over six runs
// of an earlier round), so the floor, the floor with one watch and the import are
// measured in importRounds() rounds, each round's import against its own
// floor, and the round whose ratio is the median is reported. Then it
// re-imports the unchanged catalog and counts McpTool writes.
func BenchmarkScaleImport(b *testing.B) {
	rounds := importRounds(b)
	r := startEnvtest(b)
	r.writes.accountTraffic()
	srv := mcpserver.Start(b, mcpserver.Options{
		Tools:    scaleTools() - len(mcpserver.BuiltinTools()),
		PageSize: importPageSize,
	})
	ctx := context.Background()

	// The same tools the import will write, read with our client.
	// Timed: the part of the import that is reading the catalog.
	listStart := time.Now()
	cat, err := mcp.New(mcp.Options{AllowPrivateNetworks: true}).ListTools(ctx, mcp.Endpoint{Name: "floor", URL: srv.URL, Timeout: 2 * time.Minute})
	listTime := time.Since(listStart)
	if err != nil || len(cat.Tools) != scaleTools() || cat.Pages != scaleTools()/importPageSize {
		b.Fatalf("catalog: %v (%d tools)", err, len(cat.Tools))
	}

	for b.Loop() {
		// A fifth of the writes, untimed and deleted, so that the first
		// phase does not also pay for the API server's first writes of
		// McpTools (its watch cache and heap growing) while the phases
		// after it would not.
		r.namespace(b, "warm-up")
		warm := mcpServer("warm-up", "tickets", srv.URL, 0)
		if err := r.c.Create(ctx, warm); err != nil {
			b.Fatal(err)
		}
		if _, err := floorImport(ctx, r.c, warm, cat.Tools[:len(cat.Tools)/5]); err != nil {
			b.Fatal(err)
		}
		r.deleteFloor(b, warm)

		var (
			all   []importRound
			wrote map[string]mcpv1alpha1.McpToolStatus
			last  *importRun
		)
		for i := range rounds {
			ir := importRound{n: i + 1}
			floor := func() {
				ir.floor, wrote = r.floorPhase(b, fmt.Sprintf("floor-%d", i), srv.URL, cat.Tools, false)
			}
			watched := func() {
				ir.watched, _ = r.floorPhase(b, fmt.Sprintf("floor-watched-%d", i), srv.URL, cat.Tools, true)
			}
			imported := func() {
				last = r.importPhase(b, fmt.Sprintf("import-%d", i), srv, wrote)
				ir.imported, ir.writes = last.phase, last.writes
				if i < rounds-1 {
					// The next round's floors run without the manager,
					// and start from as few objects as this round did.
					r.manager.Stop()
					r.manager = nil
					r.deleteFloor(b, last.server)
				}
			}
			// Every other round runs its phases the other way round, so
			// that no phase always follows the same one; the last round
			// (rounds is odd) ends with the import, which the re-import
			// below continues.
			if i%2 == 0 {
				floor()
				watched()
				imported()
			} else {
				imported()
				watched()
				floor()
			}
			b.Logf("round %d: floor %.1f s, floor with one watch %.1f s, import %.1f s: import ÷ floor %.2f×",
				i+1, ir.floor.time.Seconds(), ir.watched.time.Seconds(), ir.imported.time.Seconds(), ir.ratio())
			all = append(all, ir)
		}
		mid := medianRound(all)

		// The McpTool controller finishes its status writes for the new
		// tools; then the unchanged catalog is imported again.
		r.settle(b, "mcptools/status", 5*time.Second)
		before := r.writes.get("mcptools") + r.writes.get("mcptools/status")
		var s mcpv1alpha1.McpServer
		if err := r.c.Get(ctx, client.ObjectKeyFromObject(last.server), &s); err != nil {
			b.Fatal(err)
		}
		s.Annotations = map[string]string{mcpv1alpha1.AnnotationRequestedImportAt: "again"}
		reStart := time.Now()
		if err := r.c.Update(ctx, &s); err != nil {
			b.Fatal(err)
		}
		await(b, 5*time.Minute, "the re-import", r.synced(b, last.server, "again"), r.describe(s.Namespace, s.Name))
		reimportTime := time.Since(reStart)
		reimportWrites := r.writes.get("mcptools") + r.writes.get("mcptools/status") - before

		b.ReportMetric(float64(scaleTools()), "tools")
		b.ReportMetric(float64(rounds), "rounds")
		b.ReportMetric(listTime.Seconds(), "list-s")
		for i, ir := range all {
			b.ReportMetric(ir.floor.time.Seconds(), fmt.Sprintf("round%d-floor-s", i+1))
			b.ReportMetric(ir.watched.time.Seconds(), fmt.Sprintf("round%d-watched-floor-s", i+1))
			b.ReportMetric(ir.imported.time.Seconds(), fmt.Sprintf("round%d-import-s", i+1))
		}
		// The median round, whole: its times, ratios, CPU and requests.
		b.ReportMetric(float64(mid.n), "median-round")
		b.ReportMetric(mid.floor.time.Seconds(), "floor-s")
		b.ReportMetric(mid.imported.time.Seconds(), "import-s")
		b.ReportMetric(mid.ratio(), "import/floor")
		b.ReportMetric(mid.watched.time.Seconds(), "watched-floor-s")
		b.ReportMetric(mid.imported.time.Seconds()/mid.watched.time.Seconds(), "import/watched-floor")
		// CPU of each process while the floor and the import ran: the API
		// server and etcd are envtest's processes; this process holds the
		// floor's client or the manager, and the MCP server.
		for _, ph := range []struct {
			prefix string
			p      phase
		}{{"floor", mid.floor}, {"watched-floor", mid.watched}, {"import", mid.imported}} {
			b.ReportMetric(ph.p.plane.apiserver.Seconds(), ph.prefix+"-apiserver-cpu-s")
			b.ReportMetric(ph.p.plane.etcd.Seconds(), ph.prefix+"-etcd-cpu-s")
			b.ReportMetric(ph.p.self.Seconds(), ph.prefix+"-self-cpu-s")
		}
		reportTraffic(b, "floor", mid.floor.traffic)
		reportTraffic(b, "import", mid.imported.traffic)
		// Writes: the round that wrote the most. The floor writes each tool
		// twice (its object, its status); any write beyond that is the
		// operator's own overhead, whichever path makes it.
		most := slices.MaxFunc(all, func(x, y importRound) int { return x.writes - y.writes }).writes
		b.ReportMetric(float64(most), "import-tool-writes")
		b.ReportMetric(float64(most-2*scaleTools()), "import-extra-writes")
		b.ReportMetric(float64(last.pages), "import-pages-served")
		b.ReportMetric(reimportTime.Seconds(), "reimport-s")
		b.ReportMetric(float64(reimportWrites), "reimport-tool-writes")
		memory(b)
	}
}

// importRounds is how many rounds of floor, watched floor and import
// BenchmarkScaleImport measures: 3, or BENCH_IMPORT_ROUNDS (odd, so that
// one round is the median and the last ends with an import).
func importRounds(b *testing.B) int {
	v := os.Getenv("BENCH_IMPORT_ROUNDS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n%2 == 0 {
		b.Fatalf("BENCH_IMPORT_ROUNDS=%q: want an odd number of rounds, at least 1", v)
	}
	return n
}

// phase is what one timed phase of the import scenario measured: its wall
// time, the control plane's and this process's CPU, and its requests.
type phase struct {
	time    time.Duration
	plane   planeCPU
	self    time.Duration
	traffic map[string]traffic
}

// timed runs f once kube-apiserver and etcd are idle, and measures it; w
// accounts for the requests of the client f measures.
func timed(b *testing.B, w *writeCounter, f func()) phase {
	b.Helper()
	idle(b)
	trafficBefore := w.trafficSnapshot()
	planeBefore, selfBefore := controlPlaneCPU(b), cpuOfSelf(b)
	start := time.Now()
	f()
	return phase{
		time:    time.Since(start),
		plane:   controlPlaneCPU(b).minus(planeBefore),
		self:    cpuOfSelf(b) - selfBefore,
		traffic: trafficDelta(w.trafficSnapshot(), trafficBefore),
	}
}

// importRound is one round of the import scenario.
type importRound struct {
	n                        int // 1-based, in the order the rounds ran
	floor, watched, imported phase
	writes                   int // McpTool writes of the import
}

func (ir importRound) ratio() float64 {
	return ir.imported.time.Seconds() / ir.floor.time.Seconds()
}

// medianRound is the round whose import ÷ floor is the median of an odd
// number of rounds.
func medianRound(rounds []importRound) importRound {
	byRatio := slices.Clone(rounds)
	slices.SortFunc(byRatio, func(x, y importRound) int { return cmp.Compare(x.ratio(), y.ratio()) })
	return byRatio[len(byRatio)/2]
}

// floorPhase makes the floor's writes into a new namespace ns, with one
// watch of them when watched is set, and deletes them again. It returns the
// phase and the statuses it wrote, by remote name.
func (r *envtestRun) floorPhase(b *testing.B, ns, url string, tools []mcp.Tool, watched bool) (phase, map[string]mcpv1alpha1.McpToolStatus) {
	b.Helper()
	ctx := context.Background()
	r.namespace(b, ns)
	owner := mcpServer(ns, "tickets", url, 0)
	if err := r.c.Create(ctx, owner); err != nil {
		b.Fatal(err)
	}
	// The floor's client is counted as the manager's is, to account for
	// both phases' requests alike.
	count := &writeCounter{counts: map[string]int{}}
	count.accountTraffic()
	fcfg := rest.CopyConfig(r.cfg)
	fcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{w: count, next: rt} })
	fc, err := client.New(fcfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	// The watch, when there is one, is what any controller of McpTools
	// has: a controller-runtime cache in this process. What it adds to
	// the floor is what watching the tools costs the API server and the
	// watch's reader, whoever the reader is.
	stopWatch := func() {}
	if watched {
		stopWatch = watchTools(b, r.cfg, ns)
	}
	var wrote map[string]mcpv1alpha1.McpToolStatus
	p := timed(b, count, func() {
		if wrote, err = floorImport(ctx, fc, owner, tools); err != nil {
			b.Fatal(err)
		}
	})
	stopWatch()
	// The floor's objects go, so that the manager neither imports the
	// floor's McpServer nor spends an import reconciling its McpTools, and
	// every phase starts from as few objects.
	r.deleteFloor(b, owner)
	logTraffic(b, ns, p.traffic)
	return p, wrote
}

// importRun is one import by a running manager.
type importRun struct {
	phase
	server *mcpv1alpha1.McpServer
	writes int // McpTool writes, every writer's
	pages  int // tools/list pages the MCP server served
}

// importPhase starts a manager (r.manager) and has it import the catalog
// into a new namespace ns; the import must write the statuses floor wrote.
// The manager keeps running.
func (r *envtestRun) importPhase(b *testing.B, ns string, srv *mcpserver.Server, floor map[string]mcpv1alpha1.McpToolStatus) *importRun {
	b.Helper()
	ctx := context.Background()
	r.manager = testenv.StartManagerFor(b, r.mcfg, managerOptions(nil))
	r.namespace(b, ns)
	big := mcpServer(ns, "tickets", srv.URL, 0)
	// 100 pages and 10,000 definitions to validate on two busy cores:
	// more than the default 20s budget of one operation.
	big.Spec.OperationTimeout = &metav1.Duration{Duration: 2 * time.Minute}
	bigCatalog(big)
	before := r.writes.get("mcptools") + r.writes.get("mcptools/status")
	pagesBefore := srv.Stats().Methods["tools/list"]
	p := timed(b, r.writes, func() {
		defer importProfile(b)()
		if err := r.c.Create(ctx, big); err != nil {
			b.Fatal(err)
		}
		await(b, 10*time.Minute, "the import", r.synced(b, big, ""), r.describe(ns, big.Name))
	})
	logTraffic(b, ns, p.traffic)
	if err := sameAsFloor(ctx, r.c, ns, floor); err != nil {
		b.Fatal(err)
	}
	return &importRun{
		phase:  p,
		server: big,
		writes: r.writes.get("mcptools") + r.writes.get("mcptools/status") - before,
		pages:  srv.Stats().Methods["tools/list"] - pagesBefore,
	}
}

// importProfile starts a CPU profile of this process for one import when
// BENCH_IMPORT_CPUPROFILE names a file (the last import's profile is the
// one left in it), and returns the function that stops it. The benchmark's
// -cpuprofile would also hold the floors.
func importProfile(b *testing.B) (stop func()) {
	b.Helper()
	path := os.Getenv("BENCH_IMPORT_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// synced reports whether s has imported the whole catalog, for the import
// requested at handled ("" for the first); an import that failed fails the
// benchmark.
func (r *envtestRun) synced(b *testing.B, s *mcpv1alpha1.McpServer, handled string) func() bool {
	return func() bool {
		var got mcpv1alpha1.McpServer
		if r.c.Get(context.Background(), client.ObjectKeyFromObject(s), &got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
		if c != nil && c.Status == metav1.ConditionFalse {
			b.Fatalf("import failed: %s", r.describe(s.Namespace, s.Name)())
		}
		return c != nil && c.Status == metav1.ConditionTrue && got.Status.Tools != nil &&
			got.Status.Tools.Imported == int32(scaleTools()) && got.Status.LastHandledImportAt == handled
	}
}

// planeCPU is the CPU time envtest's kube-apiserver and etcd have used.
type planeCPU struct{ apiserver, etcd time.Duration }

func (p planeCPU) minus(q planeCPU) planeCPU {
	return planeCPU{apiserver: p.apiserver - q.apiserver, etcd: p.etcd - q.etcd}
}

// controlPlaneCPU reads the CPU time of the kube-apiserver and etcd this
// process started for its envtest.
func controlPlaneCPU(b *testing.B) planeCPU {
	b.Helper()
	return planeCPU{apiserver: cpuOfPID(b, childPID(b, "kube-apiserver")), etcd: cpuOfPID(b, childPID(b, "etcd"))}
}

// idle waits until envtest's kube-apiserver and etcd together use less
// than a tenth of a CPU over a second (at most two minutes), so that a timed
// phase does not also pay for work left by the one before it: the API
// server building its OpenAPI documents after the CRDs are installed,
// or the deletion of a floor's 10,000 objects.
func idle(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		before := controlPlaneCPU(b)
		time.Sleep(time.Second)
		used := controlPlaneCPU(b).minus(before)
		if used.apiserver+used.etcd < 100*time.Millisecond {
			return
		}
	}
}

// deleteFloor deletes a floor's McpServer and tools, and waits until none
// is left.
func (r *envtestRun) deleteFloor(b *testing.B, owner *mcpv1alpha1.McpServer) {
	b.Helper()
	ctx := context.Background()
	if err := r.c.Delete(ctx, owner); err != nil {
		b.Fatal(err)
	}
	// A collection of 10,000 can outlast one request on a busy API
	// server: ask again until none is left.
	await(b, 5*time.Minute, "the floor's objects deleted", func() bool {
		var l mcpv1alpha1.McpToolList
		if r.c.List(ctx, &l, client.InNamespace(owner.Namespace), client.Limit(1)) == nil && len(l.Items) == 0 {
			return true
		}
		_ = r.c.DeleteAllOf(ctx, &mcpv1alpha1.McpTool{}, client.InNamespace(owner.Namespace))
		return false
	})
}

// watchTools starts a controller-runtime cache of the McpTools of ns, and
// returns once it has synced; the returned function stops it.
func watchTools(b *testing.B, cfg *rest.Config, ns string) (stop func()) {
	b.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.GetInformer(context.Background(), &mcpv1alpha1.McpTool{}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Start(ctx)
	}()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		b.Fatal("the watch of the floor's tools did not sync")
	}
	return func() {
		cancel()
		<-done
	}
}

// floorImport writes, for each tool, what the importer writes for a new
// tool, the way it writes it, with nothing around it (no listing, no
// comparison, no bookkeeping, no watch): a server-side apply of the tool's
// identity, then a merge patch of its first status guarded by the
// resourceVersion the apply answered with. The status holds what the
// importer records for a new, disabled tool: the definition and the
// tool's view (names, effective class and approval, Ready). It returns
// the statuses it wrote, by remote name, for sameAsFloor.
func floorImport(ctx context.Context, c client.Client, owner *mcpv1alpha1.McpServer, tools []mcp.Tool) (map[string]mcpv1alpha1.McpToolStatus, error) {
	written := make(map[string]mcpv1alpha1.McpToolStatus, len(tools))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(applyConcurrency)
	for _, t := range tools {
		g.Go(func() error {
			name, err := toolname.ObjectName(owner.Name, t.Name)
			if err != nil {
				return err
			}
			obj := mcpac.McpTool(name, owner.Namespace).
				WithLabels(map[string]string{mcpv1alpha1.LabelServer: owner.Name}).
				WithSpec(mcpac.McpToolSpec().
					WithServerRef(mcpac.LocalObjectReference().WithName(owner.Name)).
					WithRemoteName(t.Name))
			if err := c.Apply(gctx, obj, client.FieldOwner("floor")); err != nil {
				return err
			}
			before := &mcpv1alpha1.McpTool{}
			if err := fromApplied(obj, before); err != nil {
				return err
			}
			after := before.DeepCopy()
			after.Status = floorStatus(owner, t, before.Generation)
			patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
			if err := c.Status().Patch(gctx, after, patch, client.FieldOwner("floor-status")); err != nil {
				return err
			}
			mu.Lock()
			written[t.Name] = after.Status
			mu.Unlock()
			return nil
		})
	}
	return written, g.Wait()
}

// fromApplied reads the object an apply answered with.
func fromApplied(obj *mcpac.McpToolApplyConfiguration, into *mcpv1alpha1.McpTool) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// floorStatus is the status the importer records for t, new and disabled,
// on a server declared as owner is (approval required by default).
func floorStatus(owner *mcpv1alpha1.McpServer, t mcp.Tool, generation int64) mcpv1alpha1.McpToolStatus {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	sum := sha256.Sum256(t.InputSchema)
	approval := true
	s := mcpv1alpha1.McpToolStatus{
		DefinitionHash:            "sha256:" + hex.EncodeToString(sum[:]),
		Title:                     t.Title,
		Description:               t.Description,
		LocalName:                 toolname.LocalName(owner.Name, t.Name),
		Group:                     toolname.Group(owner.Name),
		EffectiveDataClass:        owner.Spec.DataClass,
		EffectiveApprovalRequired: &approval,
		Effect:                    mcpv1alpha1.EffectNonIdempotentWrite,
		RequiresAdmin:             true,
		ObservedGeneration:        generation,
		Conditions: []metav1.Condition{
			{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded,
				Message: "offered by the server at the last import", ObservedGeneration: generation, LastTransitionTime: now},
			{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Disabled",
				Message: "the tool is not enabled (spec.enabled)", ObservedGeneration: generation, LastTransitionTime: now},
		},
	}
	if len(t.InputSchema) > 0 {
		s.InputSchema = &apiextensionsv1.JSON{Raw: t.InputSchema}
	}
	if a := t.Annotations; a != nil {
		h := mcpv1alpha1.ToolHints{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
		if h != (mcpv1alpha1.ToolHints{}) {
			s.Hints = &h
		}
	}
	return s
}

// sameAsFloor checks that the floor wrote what the import did: every
// imported tool's status equals the floor's of the same remote tool, but
// for times and the definition hash, whose value the floor does not
// compute (it has the same length).
func sameAsFloor(ctx context.Context, c client.Reader, ns string, floor map[string]mcpv1alpha1.McpToolStatus) error {
	var l mcpv1alpha1.McpToolList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(l.Items) != len(floor) {
		return fmt.Errorf("the import wrote %d tools, the floor %d", len(l.Items), len(floor))
	}
	plain := func(s mcpv1alpha1.McpToolStatus) string {
		s = *s.DeepCopy()
		s.DefinitionHash = strings.Repeat("0", len(s.DefinitionHash))
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	for i := range l.Items {
		t := &l.Items[i]
		f, ok := floor[t.Spec.RemoteName]
		if !ok {
			return fmt.Errorf("the import wrote %s, which the floor did not", t.Spec.RemoteName)
		}
		if got, want := plain(t.Status), plain(f); got != want {
			return fmt.Errorf("the floor's status of %s is not the importer's:\nimport: %s\nfloor:  %s", t.Spec.RemoteName, got, want)
		}
	}
	return nil
}

// probeTarget serves many MCP endpoints from one stateless go-sdk server
// with no tools: /s/<i>/mcp is server i. It records when each server was
// contacted with server/discover, which is one probe (and the first leg
// of an import) of a 2026-07-28 client.
type probeTarget struct {
	url   string
	mu    sync.Mutex
	times [][]time.Time
	total atomic.Int64
}

func startProbeTarget(b *testing.B, n int) *probeTarget {
	s := sdk.NewServer(&sdk.Implementation{Name: "probe-target", Version: "1"},
		&sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	p := &probeTarget{times: make([][]time.Time, n)}
	mux := http.NewServeMux()
	mux.HandleFunc("/s/{i}/mcp", func(w http.ResponseWriter, req *http.Request) {
		i, err := strconv.Atoi(req.PathValue("i"))
		if err != nil || i < 0 || i >= n {
			http.NotFound(w, req)
			return
		}
		if req.Header.Get("Mcp-Method") == "server/discover" {
			p.mu.Lock()
			p.times[i] = append(p.times[i], time.Now())
			p.mu.Unlock()
			p.total.Add(1)
		}
		req.URL.Path = "/mcp"
		h.ServeHTTP(w, req)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	p.url = "http://" + ln.Addr().String()
	return p
}

// worstLateness is the longest a server of p waited for a probe in the
// window from start to end beyond one interval: every gap between
// consecutive probes of a server inside the window, and the gap from a
// server's last probe to the window's end. The scheduler adds up to a
// tenth of the interval as jitter, which is counted as lateness here.
func (p *probeTarget) worstLateness(start, end time.Time, interval time.Duration) time.Duration {
	var worst time.Duration
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ts := range p.times {
		last := time.Time{}
		for _, t := range ts {
			if !last.IsZero() && t.After(start) {
				worst = max(worst, t.Sub(last)-interval)
			}
			last = t
		}
		worst = max(worst, end.Sub(last)-interval)
	}
	return worst
}

// allContacted reports whether every server of p was probed at least once.
func (p *probeTarget) allContacted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.times {
		if len(t) == 0 {
			return false
		}
	}
	return true
}

func (p *probeTarget) serverURL(i int) string {
	return p.url + "/s/" + strconv.Itoa(i) + "/mcp"
}

// createServers creates n McpServers, 16 at a time.
func createServers(b *testing.B, r *envtestRun, ns string, p *probeTarget, n int, interval time.Duration) {
	g := errgroup.Group{}
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			return r.c.Create(context.Background(), mcpServer(ns, fmt.Sprintf("s%04d", i), p.serverURL(i), interval))
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScaleProbe runs BENCH_SERVERS (1,000) McpServers with the API's
// minimum health interval (5s) and, after every server has been contacted
// once, watches a window of 12 intervals: probes achieved against probes
// scheduled, the worst lateness (time between two probes of a server beyond
// one interval), McpServer status writes per probe, and memory.
func BenchmarkScaleProbe(b *testing.B) {
	n := scaleServers()
	r := startEnvtest(b)
	p := startProbeTarget(b, n)
	for b.Loop() {
		r.startManager(b)
		r.namespace(b, "probe")
		createServers(b, r, "probe", p, n, probeInterval)
		await(b, 10*time.Minute, "every server contacted", p.allContacted)
		// Let the creation burst (imports, first status writes) pass.
		time.Sleep(2 * probeInterval)

		window := 12 * probeInterval
		probesBefore := p.total.Load()
		writesBefore := r.writes.get("mcpservers/status")
		start := time.Now()
		time.Sleep(window)
		end := time.Now()
		probes := p.total.Load() - probesBefore
		writes := r.writes.get("mcpservers/status") - writesBefore

		worst := p.worstLateness(start, end, probeInterval)
		// A server is scheduled once per interval plus a mean jitter of a
		// twentieth of it.
		scheduled := float64(n) * window.Seconds() / (probeInterval.Seconds() * 1.05)

		b.ReportMetric(float64(n), "servers")
		b.ReportMetric(probeInterval.Seconds(), "interval-s")
		b.ReportMetric(float64(probes), "probes")
		b.ReportMetric(scheduled, "scheduled")
		b.ReportMetric(float64(probes)/scheduled, "achieved/scheduled")
		b.ReportMetric(worst.Seconds(), "worst-late-s")
		b.ReportMetric(float64(writes)/float64(probes), "writes/probe")
		memory(b)
	}
}

// BenchmarkScaleCache fills the manager's cache with 10,000 McpTools (one
// import of 100 pages; BENCH_TOOLS) and 1,000 McpServers (BENCH_SERVERS),
// waits for the controllers to settle, and reports the manager's memory.
// The manager runs as the chart deploys it: the manager binary with
// --components=controllers, a process of its own with the chart's
// GOMEMLIMIT, so that its memory is what a user sees, apart from the MCP
// servers and the benchmark's client, which stay in this process.
func BenchmarkScaleCache(b *testing.B) {
	n := scaleServers()
	r := startEnvtest(b)
	big := mcpserver.Start(b, mcpserver.Options{Tools: scaleTools() - len(mcpserver.BuiltinTools()), PageSize: importPageSize})
	p := startProbeTarget(b, n)
	binary := buildManager(b)
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	testproc.WriteKubeconfig(b, kubeconfig, r.cfg, "")
	ctx := context.Background()
	for b.Loop() {
		m := startControllers(b, binary, kubeconfig, "--leader-elect=false")
		r.namespace(b, "cache")
		tickets := mcpServer("cache", "tickets", big.URL, 0)
		tickets.Spec.OperationTimeout = &metav1.Duration{Duration: 2 * time.Minute}
		bigCatalog(tickets)
		if err := r.c.Create(ctx, tickets); err != nil {
			b.Fatal(err)
		}
		// The default interval (60s): this scenario measures what is held,
		// not how fast it is probed.
		createServers(b, r, "cache", p, n-1, 0)
		await(b, 30*time.Minute, "the import and every server synced", func() bool {
			select {
			case <-m.done:
				b.Fatalf("the manager exited: %v\n%s", m.cmd.ProcessState, readTail(m.log))
			default:
			}
			var list mcpv1alpha1.McpServerList
			if r.c.List(ctx, &list, client.InNamespace("cache")) != nil {
				return false
			}
			synced := 0
			for _, s := range list.Items {
				if meta.IsStatusConditionTrue(s.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced) &&
					(s.Name != "tickets" || (s.Status.Tools != nil && s.Status.Tools.Imported == int32(scaleTools()))) {
					synced++
				}
			}
			return synced == n
		}, func() string { return readTail(m.log) })
		// What the manager spent from its start until every server synced:
		// the import, a thousand first probes and the status writes, with
		// the garbage collector's share that its GOGC decides.
		cpu := cpuOfPID(b, m.cmd.Process.Pid)
		time.Sleep(5 * time.Second) // the tool controller's last status writes
		b.ReportMetric(float64(n), "servers")
		b.ReportMetric(float64(scaleTools()), "tools")
		b.ReportMetric(float64(m.gogc), "manager-gogc")
		if m.gogcSet {
			b.ReportMetric(1, "manager-gogc-override")
		}
		b.ReportMetric(cpu.Seconds(), "manager-cpu-s")
		m.memory(b)
	}
}

// controllersProc is the manager running the controllers as a process of
// its own, with its profiles served on pprof.
type controllersProc struct {
	*managerProc
	pprof   string
	gogc    int  // the GOGC it runs with
	gogcSet bool // gogc is BENCH_MANAGER_GOGC's, not the chart's
}

// startControllers runs the manager binary with the controllers only, as
// the chart runs it: GOMEMLIMIT from the chart's memory limit, the
// chart's gcPercent as GOGC (BENCH_MANAGER_GOGC overrides it), tool-change listeners off (the scenario measures
// the cache, not a thousand open streams). It differs from the chart in
// what a single envtest needs: plain-HTTP metrics off, the API client's rate
// limit raised as the in-process scenarios raise it (they measure the
// operator, not the limiter), and logs at error level only (the reconcile
// lines at this scale would cost CPU, not memory). Its Go profiles are
// served on a loopback port for this benchmark to read the live heap.
// extra holds the caller's further flags: leader election (the cache
// scenario turns it off, having no namespace of the manager's own to hold
// the lease in) and a shard's selector.
func startControllers(b *testing.B, binary, kubeconfig string, extra ...string) *controllersProc {
	b.Helper()
	pprof := testproc.FreeAddr(b)
	s := procSpec{what: "the manager", binary: binary, kubeconfig: kubeconfig, args: []string{
		"--components=controllers",
		"--metrics-bind-address=0",
		"--pprof-bind-address=" + pprof,
		"--allow-private-networks",
		"--listen-tool-changes=false",
		"--kube-api-qps=1000", "--kube-api-burst=2000",
		"--zap-log-level=error",
	}}
	s.args = append(s.args, extra...)
	limit := chartManagerMemoryLimit(b)
	// BENCH_MANAGER_GOMEMLIMIT replaces the chart's limit (a number of
	// bytes or, as the runtime reads it, e.g. 100MiB) to compare a soft
	// memory limit with a GOGC.
	if v := os.Getenv("BENCH_MANAGER_GOMEMLIMIT"); v != "" {
		limit = v
	}
	if limit != "" {
		s.env = append(s.env, "GOMEMLIMIT="+limit)
	}
	// The chart's gcPercent; BENCH_MANAGER_GOGC overrides it to compare
	// settings.
	gogc, set := 100, false // the runtime's default
	if v := chartManagerGOGC(b); v != nil {
		gogc = *v
	}
	if v := os.Getenv("BENCH_MANAGER_GOGC"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("BENCH_MANAGER_GOGC=%q: want a positive number", v)
		}
		gogc, set = n, true
	}
	if gogc != 100 {
		s.env = append(s.env, "GOGC="+strconv.Itoa(gogc))
	}
	return &controllersProc{managerProc: startManagerProc(b, s), pprof: pprof, gogc: gogc, gogcSet: set}
}

// chartManagerGOGC is the GOGC the chart gives the manager (gcPercent in
// its values.yaml); nil if the chart leaves the runtime's default.
func chartManagerGOGC(b *testing.B) *int {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "mcp-catalog-operator", "values.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var values struct {
		GCPercent *int `json:"gcPercent"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		b.Fatalf("the chart's values.yaml: %v", err)
	}
	return values.GCPercent
}

// chartManagerMemoryLimit is the GOMEMLIMIT the chart gives the manager:
// its container's memory limit (resources.limits.memory in values.yaml) in
// bytes; empty if the chart sets none.
func chartManagerMemoryLimit(b *testing.B) string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "mcp-catalog-operator", "values.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var values struct {
		Resources struct {
			Limits map[string]string `json:"limits"`
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		b.Fatalf("the chart's values.yaml: %v", err)
	}
	v := values.Resources.Limits["memory"]
	if v == "" {
		return ""
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		b.Fatalf("the chart's resources.limits.memory %q: %v", v, err)
	}
	return strconv.FormatInt(q.Value(), 10)
}

// memory reports the manager process's resident set, at its peak (VmHWM)
// and now (VmRSS, and its anonymous part RssAnon), and its live heap: HeapAlloc right after a collection,
// which the heap profile's ?gc=1 runs in the process, and HeapInuse, the
// spans that hold it. BENCH_MANAGER_HEAP_PROFILE names a file to write
// that heap profile to, for `go tool pprof`.
func (c *controllersProc) memory(b *testing.B) {
	b.Helper()
	pid := c.cmd.Process.Pid
	// Read before the collection below, which does not shrink the resident
	// set at once but would take the measurement away from steady state.
	rss, peak := procStatusMiB(b, pid, "VmRSS"), procStatusMiB(b, pid, "VmHWM")
	anon := procStatusMiB(b, pid, "RssAnon")
	text := c.heapProfile(b, "gc=1&debug=1")
	if path := os.Getenv("BENCH_MANAGER_HEAP_PROFILE"); path != "" {
		if err := os.WriteFile(path, c.heapProfile(b, "gc=1"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rss, "rss-MiB")
	b.ReportMetric(peak, "rss-peak-MiB")
	// The rest of the resident set is file pages, nearly all the binary's
	// code and read-only data.
	b.ReportMetric(anon, "rss-anon-MiB")
	b.ReportMetric(memStat(b, text, "HeapAlloc")/(1<<20), "heap-MiB")
	b.ReportMetric(memStat(b, text, "HeapInuse")/(1<<20), "heap-inuse-MiB")
	// Collections since the start, the profile's own among them.
	b.ReportMetric(memStat(b, text, "NumGC"), "manager-gcs")
}

// heapProfile reads the manager's heap profile with the query given
// (gc=1 collects first; debug=1 is the text form, which lists MemStats).
func (c *controllersProc) heapProfile(b *testing.B, query string) []byte {
	b.Helper()
	return heapProfileAt(b, c.pprof, query)
}

// heapProfileAt reads the heap profile a manager process serves on its
// pprof address.
func heapProfileAt(b *testing.B, pprof, query string) []byte {
	b.Helper()
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Get("http://" + pprof + "/debug/pprof/heap?" + query)
	if err != nil {
		b.Fatalf("reading the manager's heap profile: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("reading the manager's heap profile: %v %s", err, resp.Status)
	}
	return body
}

// memStat finds "# name = value" in a heap profile's text form, where the
// runtime lists its MemStats.
func memStat(b *testing.B, profile []byte, name string) float64 {
	b.Helper()
	sc := bufio.NewScanner(bytes.NewReader(profile))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# "+name+" = "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatalf("the heap profile's %s: %v", name, err)
			}
			return n
		}
	}
	b.Fatalf("the heap profile has no %s", name)
	return 0
}

// procStatusMiB reads one of the kB fields of /proc/PID/status.
func procStatusMiB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				b.Fatalf("/proc/%d/status %s: %v", pid, field, err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
