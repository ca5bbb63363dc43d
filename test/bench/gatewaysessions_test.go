package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/test/testproc"
)

// idleSessions is how many sessions the sessions scenario opens each way
// (10,000; BENCH_SESSIONS overrides it).
func idleSessions() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_SESSIONS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// sharedConnections is how many connections the sessions that share them
// are made over.
const sharedConnections = 16

// BenchmarkGatewaySessions measures what idle sessions cost one gateway
// replica run as the chart runs it (the manager binary with
// --components=gateway --gateway-stateless, a process of its own, the
// chart's GOGC and GOMEMLIMIT): go-sdk client sessions pinned to
// 2025-11-25 (the initialize era, the only one with sessions) connect
// (initialize, notifications/initialized, and the GET for the server's
// event stream, which a stateless gateway answers 405) and then make no
// request. The stateless gateway keeps nothing for a session: its answer
// to initialize is the same bytes for every client, and every later
// request carries all it needs. What a session can leave behind is its
// connection, if its client keeps it open. So the sessions are opened
// twice: 10,000 over 16 shared connections (what the sessions themselves
// leave), then 10,000 more each on a connection of its own, kept open and
// idle as an agent's HTTP client keeps it (what an idle agent costs).
//
// Each figure is the gateway process's growth per session, read after a
// collection (its heap profile's ?gc=1): the live heap, the goroutine
// stacks, and the resident set (VmRSS). The resident set keeps what the
// runtime has not returned to the system, which with the chart's GOGC of
// 400 can be the garbage of the sessions' 30,000 requests; the live heap
// and the stacks are what the sessions hold. Target: ≤ 16 KiB per idle
// session (issue #31). The server closes a connection idle for two
// minutes (serve.go), so every session is measured within that.
func BenchmarkGatewaySessions(b *testing.B) {
	_, gwCPUs := cpuSplit(b)
	r := startEnvtest(b)
	binary := buildManager(b)
	const ns = "sessions"
	r.namespace(b, ns)
	createAgent(b, r, mcpServer(ns, "docs", "http://127.0.0.1:1/mcp", time.Hour))
	token := agentToken(b, r, ns)
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	testproc.WriteKubeconfig(b, kubeconfig, r.cfg, "")
	gw := startGatewayWith(b, gatewaySetup{binary: binary, kubeconfig: kubeconfig, auditFile: "-", gogc: chartGatewayGOGC(b), cpus: gwCPUs, pprof: true})
	url := "http://" + gw.addr + gateway.Path

	shared := &http.Transport{MaxIdleConns: sharedConnections, MaxIdleConnsPerHost: sharedConnections, MaxConnsPerHost: sharedConnections}
	// The token's review is cached before the first measurement, and the
	// shared connections are open.
	await(b, time.Minute, "a first session", func() bool {
		_, err := connectSessions(url, token, sharedConnections, func() http.RoundTripper { return shared })
		return err == nil
	})
	n := idleSessions()
	for b.Loop() {
		m0 := gatewayMemory(b, gw)
		start := time.Now()
		keepShared, err := connectSessions(url, token, n, func() http.RoundTripper { return shared })
		if err != nil {
			b.Fatal(err)
		}
		m1 := gatewayMemory(b, gw)
		sharedTook := time.Since(start)
		start = time.Now()
		keepOwn, err := connectSessions(url, token, n, func() http.RoundTripper {
			// No idle timeout on the client's side: the connection stays
			// open until the gateway closes it.
			return &http.Transport{MaxIdleConnsPerHost: 1}
		})
		if err != nil {
			b.Fatal(err)
		}
		ownTook := time.Since(start)
		m2 := gatewayMemory(b, gw)
		if ownTook > time.Minute {
			b.Fatalf("opening %d sessions on their own connections took %s: the first ones may be closed as idle before they are counted", n, ownTook)
		}
		per := func(after, before float64) float64 { return (after - before) / float64(n) / (1 << 10) }
		b.ReportMetric(float64(n), "sessions")
		b.ReportMetric(per(m1.heap, m0.heap), "shared-heap-KiB/session")
		b.ReportMetric(per(m1.stacks, m0.stacks), "shared-stack-KiB/session")
		b.ReportMetric(per(m1.rss, m0.rss), "shared-rss-KiB/session")
		b.ReportMetric(m1.fds-m0.fds, "shared-connections-held")
		b.ReportMetric(float64(n)/sharedTook.Seconds(), "shared-sessions/s")
		b.ReportMetric(per(m2.heap, m1.heap), "own-heap-KiB/session")
		b.ReportMetric(per(m2.stacks, m1.stacks), "own-stack-KiB/session")
		b.ReportMetric(per(m2.rss, m1.rss), "own-rss-KiB/session")
		b.ReportMetric(m2.fds-m1.fds, "own-connections-held")
		b.ReportMetric(float64(n)/ownTook.Seconds(), "own-sessions/s")
		b.ReportMetric(m0.rss/(1<<20), "gateway-rss-idle-MiB")
		b.ReportMetric(m2.rss/(1<<20), "gateway-rss-MiB")
		// The resident set less the binary's mapped pages: what counts
		// against GOMEMLIMIT, near enough.
		b.ReportMetric(procStatusMiB(b, gw.cmd.Process.Pid, "RssAnon"), "gateway-rss-anon-MiB")
		if limit, err := strconv.ParseFloat(chartGatewayMemoryLimit(b), 64); err == nil {
			b.ReportMetric(limit/(1<<20), "gateway-memory-limit-MiB")
		}
		b.ReportMetric(m2.heap/(1<<20), "gateway-heap-MiB")
		// Held until here, so that neither the sessions nor their
		// connections were let go of before they were counted.
		for _, s := range append(keepShared, keepOwn...) {
			_ = s.Close()
		}
	}
}

// gatewayMem is what a gateway process holds, after a collection.
type gatewayMem struct{ rss, heap, stacks, fds float64 }

// gatewayMemory collects in the gateway process (its heap profile's
// ?gc=1) and then reads its live heap, its goroutine stacks, its resident
// set and how many descriptors it holds open, in bytes and descriptors.
func gatewayMemory(b *testing.B, g *gatewayProc) gatewayMem {
	b.Helper()
	heap := heapProfileAt(b, g.pprof, "gc=1&debug=1")
	pid := g.cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	return gatewayMem{
		rss:    procStatusMiB(b, pid, "VmRSS") * (1 << 20),
		heap:   memStat(b, heap, "HeapAlloc"),
		stacks: stackInuse(b, heap),
		fds:    float64(len(fds)),
	}
}

// stackInuse is the goroutine stacks' bytes in a heap profile's text
// form, whose MemStats list them as "# Stack = inuse / sys".
func stackInuse(b *testing.B, profile []byte) float64 {
	b.Helper()
	for line := range strings.SplitSeq(string(profile), "\n") {
		if v, ok := strings.CutPrefix(line, "# Stack = "); ok {
			inuse, _, _ := strings.Cut(v, " ")
			n, err := strconv.ParseFloat(inuse, 64)
			if err != nil {
				b.Fatalf("the heap profile's stacks %q: %v", v, err)
			}
			return n
		}
	}
	b.Fatal("the heap profile lists no stacks")
	return 0
}

// connectSessions connects n go-sdk client sessions pinned to 2025-11-25
// to url, each over the transport transport returns for it, 32 at a time,
// and returns them, still open.
func connectSessions(url, token string, n int, transport func() http.RoundTripper) ([]*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "idle-agent", Version: "1"}, nil)
	out := make([]*sdk.ClientSession, n)
	var g errgroup.Group
	g.SetLimit(32)
	for i := range out {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			hc := &http.Client{Transport: bearer{token: token, next: transport()}}
			s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: eraInitialize})
			if err != nil {
				return fmt.Errorf("session %d: %w", i, err)
			}
			out[i] = s
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		for _, s := range out {
			if s != nil {
				_ = s.Close()
			}
		}
		return nil, err
	}
	return out, nil
}
