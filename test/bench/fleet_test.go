package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/test/testproc"
)

// Scale of the fleet scenario (issue #23). BENCH_FLEET_SERVERS,
// BENCH_FLEET_INTERVAL (5s to 30s) and BENCH_FLEET_SHARDS (named shards,
// 1 to 4) change it for a quick run; docs/benchmarks.md states what ran.
const (
	fleetServers  = 5000
	fleetInterval = 30 * time.Second
	// The install guide's example, sharding.shards: [east, west]: with the
	// default instance, three controller processes.
	fleetNamedShards = 2
	// The servers are spread over a few namespaces, as teams would own
	// them, so that no shard runs into the per-namespace share of its
	// workers because of how the benchmark names things.
	fleetNamespaces = 5
)

// fleetShardNames are the names of the named shards, in order.
var fleetShardNames = []string{"east", "west", "north", "south"}

// fleetScale is the scenario's size: servers, health interval and named
// shards.
func fleetScale(b *testing.B) (servers int, interval time.Duration, named int) {
	b.Helper()
	servers, interval, named = fleetServers, fleetInterval, fleetNamedShards
	if v := os.Getenv("BENCH_FLEET_SERVERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("BENCH_FLEET_SERVERS=%q: want a positive number", v)
		}
		servers = n
	}
	if v := os.Getenv("BENCH_FLEET_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		// Above 30s the 6 minute cap of lastContactTime's age, not
		// twelve intervals, would set the refresh cycle the window is
		// made of.
		if err != nil || d < 5*time.Second || d > 30*time.Second {
			b.Fatalf("BENCH_FLEET_INTERVAL=%q: want a duration from 5s to 30s", v)
		}
		interval = d
	}
	if v := os.Getenv("BENCH_FLEET_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > len(fleetShardNames) {
			b.Fatalf("BENCH_FLEET_SHARDS=%q: want 1 to %d named shards", v, len(fleetShardNames))
		}
		named = n
	}
	return servers, interval, named
}

// apiProxy is one shard's way to the API server: a reverse proxy in this
// process that counts the shard's writes by resource, as countingTransport
// counts those of a manager running in this process. The shard's
// kubeconfig names the proxy (plain HTTP on loopback); the proxy reaches
// the API server with the control plane's administrator certificate.
type apiProxy struct {
	url    string
	writes *writeCounter
}

func startAPIProxy(b *testing.B, cfg *rest.Config) *apiProxy {
	b.Helper()
	target, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w := &writeCounter{counts: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &countingTransport{w: w, next: rt},
		// Watches are streams: every event goes on at once.
		FlushInterval: -1,
		// A shard's requests cancelled as it stops are not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: rp, ReadHeaderTimeout: time.Minute}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	return &apiProxy{url: "http://" + ln.Addr().String(), writes: w}
}

// fleetShard is one controller instance of the fleet.
type fleetShard struct {
	name     string // "default" for the instance that takes unlabelled servers
	label    string // the value of the shard label its servers carry; "" for default
	servers  int
	proxy    *apiProxy
	proc     *controllersProc
	cpu      time.Duration // at the window's start
	wait     time.Duration // run-queue wait at the window's start
	writes   int           // McpServer status writes at the window's start
	probeSet func(i int) bool
}

// probeStats is what the probes of a set of servers came to in a window.
type probeStats struct {
	probes int           // probes in the window
	onTime int           // of which came within due of the server's previous probe
	worst  time.Duration // longest wait for a probe beyond one interval
}

// stats counts the probes of the servers that in selects, between start
// and end.
// A probe is on time when it comes at most due after the server's previous
// one. Lateness is measured as worstLateness measures it.
func (p *probeTarget) stats(in func(i int) bool, start, end time.Time, interval, due time.Duration) probeStats {
	var s probeStats
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ts := range p.times {
		if !in(i) {
			continue
		}
		last := time.Time{}
		for _, t := range ts {
			if t.After(end) {
				break
			}
			if t.After(start) {
				s.probes++
				if !last.IsZero() {
					if t.Sub(last) <= due {
						s.onTime++
					}
					s.worst = max(s.worst, t.Sub(last)-interval)
				}
			}
			last = t
		}
		s.worst = max(s.worst, end.Sub(last)-interval)
	}
	return s
}

// childPID finds the process this process started whose command is name
// (envtest starts kube-apiserver and etcd as children).
func childPID(b *testing.B, name string) int {
	b.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended since the listing
		}
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || end < open {
			continue
		}
		// After the command: state, then the parent's pid.
		fields := strings.Fields(string(raw[end+1:]))
		if len(fields) < 2 || string(raw[open+1:end]) != name {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == self {
			return pid
		}
	}
	b.Fatalf("no process %s started by this one", name)
	return 0
}

// runQueueWait is the time the threads of process pid that are alive now
// have spent runnable but waiting for a CPU (the second field of
// /proc/PID/task/TID/schedstat): how much more CPU the process wanted than
// it got.
func runQueueWait(b *testing.B, pid int) time.Duration {
	b.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	var wait time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended since the listing
		}
		fields := strings.Fields(string(raw))
		if len(fields) < 2 {
			b.Fatalf("/proc/%d/task/%s/schedstat: %q", pid, t.Name(), raw)
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/task/%s/schedstat: %v", pid, t.Name(), err)
		}
		wait += time.Duration(ns)
	}
	return wait
}

// niceness is this process's nice value, which the processes it starts
// (envtest's, the shards) inherit.
func niceness(b *testing.B) int {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		b.Fatal(err)
	}
	// Fields from after the command: state is the 3rd field of the line,
	// nice the 19th.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 17 {
		b.Fatalf("/proc/self/stat has %d fields after the command", len(fields))
	}
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		b.Fatalf("/proc/self/stat: %v", err)
	}
	return n
}

// loadAverage is the machine's load over the last minute: how many threads
// were running or waiting for a CPU, on average.
func loadAverage(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		b.Fatalf("/proc/loadavg: %q", raw)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		b.Fatalf("/proc/loadavg: %v", err)
	}
	return v
}

// machineCPU is the CPU time the machine spent busy (everything but idle
// and I/O wait) and in all, over all its CPUs, from /proc/stat, in ticks,
// and how many CPUs it has.
func machineCPU(b *testing.B) (busy, total int64, cpus int) {
	b.Helper()
	f, err := os.Open("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && strings.HasPrefix(fields[0], "cpu") && fields[0] != "cpu" {
			cpus++
		}
		if len(fields) < 6 || fields[0] != "cpu" {
			continue
		}
		// user nice system idle iowait irq softirq steal; guest time is
		// already inside user and nice.
		for i, v := range fields[1:min(len(fields), 9)] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("/proc/stat: %v", err)
			}
			total += n
			if i != 3 && i != 4 {
				busy += n
			}
		}
	}
	if total == 0 {
		b.Fatal("/proc/stat has no cpu line")
	}
	return busy, total, cpus
}

// BenchmarkScaleFleet runs a fleet of 5,000 McpServers (BENCH_FLEET_SERVERS)
// at a 30 s health interval across the controller shards the chart renders
// for sharding.shards: [east, west]: the default instance
// (--watch-label-selector=!sharding.mcp.catalog.dev/key) and one instance
// per named shard, each the manager binary with the controllers only, a
// process of its own, against one envtest control plane. Server i goes to instance i mod 3 (unlabelled, or
// labelled east or west) and is its own endpoint of one in-process go-sdk
// server. Each instance reaches the API server through a proxy in this
// process that counts its writes.
//
// Once every server was contacted and one interval passed, a window of one
// lastContactTime refresh cycle is watched (twelve probes at the interval
// and its mean jitter: 6.3 minutes at 30 s), so that every unchanged server's
// one refresh falls in it once whatever its phase. Per shard it reports
// probes achieved and on time against scheduled, the worst lateness,
// McpServer status writes per probe (nothing changes, so every probe is an
// unchanged one), its CPU and its memory; and the CPU of the
// kube-apiserver, etcd, this process and the whole machine over the window,
// to say where the limit is when a target is missed.
func BenchmarkScaleFleet(b *testing.B) {
	n, interval, named := fleetScale(b)
	r := startEnvtest(b)
	apiPID, etcdPID := childPID(b, "kube-apiserver"), childPID(b, "etcd")
	p := startProbeTarget(b, n)
	binary := buildManager(b)
	shards := []*fleetShard{{name: "default"}}
	for _, name := range fleetShardNames[:named] {
		shards = append(shards, &fleetShard{name: name, label: name})
	}
	shardOf := func(i int) *fleetShard { return shards[i%len(shards)] }
	for _, s := range shards {
		s.probeSet = func(i int) bool { return shardOf(i) == s }
	}
	for i := range n {
		shardOf(i).servers++
	}
	ctx := context.Background()
	for b.Loop() {
		for _, s := range shards {
			s.proxy = startAPIProxy(b, r.cfg)
			kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
			testproc.WriteKubeconfig(b, kubeconfig, &rest.Config{Host: s.proxy.url}, "")
			// The selectors of the chart's deployment.yaml. Leader election
			// is off, as in the cache scenario: one replica per shard has
			// no one to elect, and on a loaded shared machine a lease
			// renewal that misses its deadline ends the process, which
			// would measure the machine, not the fleet. The selectors keep
			// the shards apart (BenchmarkScaleShards checks that, leases
			// included).
			args := []string{"--leader-elect=false"}
			if s.label == "" {
				args = append(args, "--watch-label-selector=!"+mcpv1alpha1.LabelShardKey)
			} else {
				args = append(args, "--watch-label-selector="+mcpv1alpha1.LabelShardKey+"="+s.label)
			}
			s.proc = startControllers(b, binary, kubeconfig, args...)
		}
		alive := func() {
			for _, s := range shards {
				select {
				case <-s.proc.done:
					b.Fatalf("shard %s exited: %v\n%s", s.name, s.proc.cmd.ProcessState, readTail(s.proc.log))
				default:
				}
			}
		}
		for k := range fleetNamespaces {
			r.namespace(b, fmt.Sprintf("fleet-%d", k))
		}

		createStart := time.Now()
		g := errgroup.Group{}
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error {
				srv := mcpServer(fmt.Sprintf("fleet-%d", i%fleetNamespaces), fmt.Sprintf("s%04d", i), p.serverURL(i), interval)
				if l := shardOf(i).label; l != "" {
					srv.Labels = map[string]string{mcpv1alpha1.LabelShardKey: l}
				}
				return r.c.Create(ctx, srv)
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		created := time.Since(createStart)
		await(b, 30*time.Minute, "every server contacted", func() bool {
			alive()
			return p.allContacted()
		})
		firstContact := time.Since(createStart)
		// Let the creation burst (first imports and their status writes)
		// pass.
		time.Sleep(interval)

		window := time.Duration(float64(controller.ContactRefreshIntervals) * 1.05 * float64(interval))
		for _, s := range shards {
			s.cpu = cpuOfPID(b, s.proc.cmd.Process.Pid)
			s.wait = runQueueWait(b, s.proc.cmd.Process.Pid)
			s.writes = s.proxy.writes.get("mcpservers/status")
		}
		apiCPU, etcdCPU, selfCPU := cpuOfPID(b, apiPID), cpuOfPID(b, etcdPID), cpuOfSelf(b)
		apiWait, etcdWait := runQueueWait(b, apiPID), runQueueWait(b, etcdPID)
		busy, total, _ := machineCPU(b)
		start := time.Now()
		time.Sleep(window)
		end := time.Now()
		alive()
		busy2, total2, cpus := machineCPU(b)
		cores := func(d time.Duration) float64 { return d.Seconds() / end.Sub(start).Seconds() }
		apiCores := cores(cpuOfPID(b, apiPID) - apiCPU)
		etcdCores := cores(cpuOfPID(b, etcdPID) - etcdCPU)
		selfCores := cores(cpuOfSelf(b) - selfCPU)
		// Run-queue wait in the same unit as CPU: seconds per second of
		// the window, i.e. how many of the process's threads were, on
		// average, ready to run but without a CPU.
		b.ReportMetric(cores(runQueueWait(b, apiPID)-apiWait), "apiserver-runq-wait")
		b.ReportMetric(cores(runQueueWait(b, etcdPID)-etcdWait), "etcd-runq-wait")

		b.ReportMetric(float64(n), "servers")
		b.ReportMetric(interval.Seconds(), "interval-s")
		b.ReportMetric(window.Seconds(), "window-s")
		b.ReportMetric(float64(len(shards)), "shards")
		b.ReportMetric(created.Seconds(), "create-s")
		b.ReportMetric(firstContact.Seconds(), "first-contact-s")
		b.ReportMetric(apiCores, "apiserver-cores")
		b.ReportMetric(etcdCores, "etcd-cores")
		b.ReportMetric(selfCores, "bench-process-cores")
		b.ReportMetric(float64(busy2-busy)/float64(total2-total), "machine-busy")
		b.ReportMetric(float64(cpus), "machine-cpus")
		b.ReportMetric(loadAverage(b), "machine-load1")
		b.ReportMetric(float64(niceness(b)), "nice")

		// A probe is on time when it comes within the interval, the
		// scheduler's jitter (a tenth of it) and a second.
		due := interval + interval/10 + time.Second
		perServer := window.Seconds() / (interval.Seconds() * 1.05)
		for _, s := range shards {
			st := p.stats(s.probeSet, start, end, interval, due)
			writes := s.proxy.writes.get("mcpservers/status") - s.writes
			pid := s.proc.cmd.Process.Pid
			scheduled := float64(s.servers) * perServer
			m := func(v float64, unit string) { b.ReportMetric(v, "shard-"+s.name+"-"+unit) }
			m(float64(s.servers), "servers")
			m(float64(st.probes), "probes")
			m(scheduled, "scheduled")
			m(float64(st.probes)/scheduled, "achieved/scheduled")
			m(float64(st.onTime)/scheduled, "on-time/scheduled")
			m(st.worst.Seconds(), "worst-late-s")
			m(float64(writes), "status-writes")
			m(float64(writes)/float64(max(st.probes, 1)), "writes/probe")
			m(cores(cpuOfPID(b, pid)-s.cpu), "cores")
			m(cores(runQueueWait(b, pid)-s.wait), "runq-wait")
			// The resident set before the heap profile's collection.
			m(procStatusMiB(b, pid, "VmRSS"), "rss-MiB")
			m(procStatusMiB(b, pid, "VmHWM"), "rss-peak-MiB")
			m(procStatusMiB(b, pid, "RssAnon"), "rss-anon-MiB")
			m(memStat(b, s.proc.heapProfile(b, "gc=1&debug=1"), "HeapAlloc")/(1<<20), "heap-MiB")
		}
	}
}

// TestProbeStats checks the fleet's count of probes on time against a
// schedule written out by hand: only the selected servers count, a probe
// after its due time is late, and a server not probed since well before
// the window's end is the worst lateness.
func TestProbeStats(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s ...float64) []time.Time {
		ts := make([]time.Time, len(s))
		for i, v := range s {
			ts[i] = start.Add(time.Duration(v * float64(time.Second)))
		}
		return ts
	}
	p := &probeTarget{times: [][]time.Time{
		at(-2, 10, 20, 30),        // on time throughout
		at(-2, 10, 25, 30),        // one probe 15 s after the previous: late
		at(-2, 10, 20, 30, 45),    // the last one after the window
		at(-5, 5, 10, 15, 20, 25), // not selected
		at(-2, 10),                // none for the last 30 s of the window
	}}
	end := start.Add(40 * time.Second)
	got := p.stats(func(i int) bool { return i != 3 }, start, end, 10*time.Second, 12*time.Second)
	want := probeStats{probes: 10, onTime: 9, worst: 20 * time.Second}
	if got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}
