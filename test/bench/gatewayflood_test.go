package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/utils/ptr"

	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testproc"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The flood: namespace A's catalog and how it is listed.
const (
	// floodTools tools of about floodSchemaBytes each: a catalog of about
	// 9 MiB, as one of the large servers agents are pointed at.
	floodTools       = 151
	floodSchemaBytes = 61 << 10
	// floodConnections lists are in flight at once, each on a connection
	// of its own.
	floodConnections = 16
	// floodWarm is how long the flood runs before the quiet agent's calls
	// during it begin.
	floodWarm = 5 * time.Second
	// quietEvery paces the quiet agent's calls.
	quietEvery = time.Second
)

// floodAgents is how many agent processes share the flood's connections
// (4, each with a quarter of them; BENCH_FLOOD_AGENTS overrides it): one
// Node.js process reads its lists on one CPU, so that several are needed
// for the flood to take what the machine has.
func floodAgents() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_FLOOD_AGENTS")); err == nil && n > 0 && n <= floodConnections {
		return n
	}
	return 4
}

// quietCalls is how many calls the quiet agent makes alone and again
// during the flood (30 each, one a second; BENCH_FLOOD_CALLS overrides
// it).
func quietCalls() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_FLOOD_CALLS")); err == nil && n > 0 {
		return n
	}
	return 30
}

// BenchmarkGatewayFlood is one namespace's agent flooding the gateway
// beside another's that calls now and then (issue #31): the gateway as the
// chart runs it (the manager binary with --components=gateway
// --gateway-stateless, a process of its own on CPUs of its own, the
// chart's GOGC, GOMEMLIMIT from its memory limit of 256 MiB, and the
// chart's default budgets) against envtest. Namespace A holds a catalog of
// 151 tools of about 61 KiB each (about 9 MiB listed) and an agent that
// lists it on 16 connections at once, each listing again as soon as its
// list returned, whatever the answer: the official TypeScript SDK's client
// (test/tsagent), in several processes that share the 16 connections.
// Namespace B's agent, the same client, calls the echo tool of a stateless
// go-sdk server (a process of its own) once a second: alone first, then
// during the flood, each time in an agent process of its own.
//
// Every agent is a separate process on this machine, where in a cluster
// it would be on another: the flooding processes run at the lowest
// priority (nice 19) so that what their reading of 9 MiB answers costs
// this machine's CPUs is not what decides B's latency; they take the CPU
// time that the gateway, B and the upstream leave. The figures say how hard
// they flooded: lists answered and refused a second, and the gateway's
// CPU. No controller runs: every tool's status is written by the
// benchmark, as the importer and the tool controller would write it.
//
// Targets: B's p50 during the flood ≤ 3× its p50 alone; none of B's calls
// failed; the gateway's peak resident set (VmHWM) within its 256 MiB.
func BenchmarkGatewayFlood(b *testing.B) {
	_, gwCPUs := cpuSplit(b)
	if _, err := tsagent.Dir(); err != nil {
		b.Skipf("the flood's agents are the TypeScript SDK's client: %v", err)
	}
	r := startEnvtest(b)
	upURL := startUpstream(b)
	binary := buildManager(b)
	tokenA := floodNamespace(b, r, "flood-a")
	tokenB := quietNamespace(b, r, "flood-b", upURL)

	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	testproc.WriteKubeconfig(b, kubeconfig, r.cfg, "")
	gw := startGatewayWith(b, gatewaySetup{binary: binary, kubeconfig: kubeconfig, auditFile: "-", gogc: chartGatewayGOGC(b), cpus: gwCPUs, chartBudgets: true, pprof: true})
	pid := gw.cmd.Process.Pid
	url := "http://" + gw.addr + gateway.Path
	local := toolname.LocalName("docs", mcpserver.ToolEcho)
	ctx := context.Background()

	// The bytes of one list, as the initialize era's client is answered
	// it; and each agent served, once the gateway's cache has the
	// policies.
	l := &toolLister{url: url, token: tokenA, era: eraInitialize, hc: &http.Client{}}
	var served, listed int
	var last error
	await(b, time.Minute, "namespace A's catalog listed", func() bool {
		served, listed, last = l.list()
		return last == nil && listed == floodTools
	}, func() string { return fmt.Sprintf("(last: %d tools, %v)", listed, last) })
	await(b, time.Minute, "namespace B's call answered", func() bool {
		res, err := tsagent.Run(ctx, url, tokenB, tsagent.Call(local, callArgs))
		return err == nil && len(res.Steps) == 1 && res.Steps[0].Error == nil && res.Steps[0].Text() == "hello"
	})
	res, err := tsagent.Run(ctx, url, tokenA, tsagent.List())
	if err != nil || len(res.Steps) != 1 || res.Steps[0].Error != nil || len(res.Steps[0].Tools) != floodTools {
		b.Fatalf("namespace A's agent listed %+v (%v), want %d tools", res, err, floodTools)
	}

	n, agents := quietCalls(), floodAgents()
	for b.Loop() {
		b.ReportMetric(float64(served)/(1<<20), "list-MiB")
		if limit, err := strconv.ParseFloat(chartGatewayMemoryLimit(b), 64); err == nil {
			b.ReportMetric(limit/(1<<20), "gateway-memory-limit-MiB")
		}
		b.ReportMetric(float64(floodConnections), "flood-connections")
		b.ReportMetric(float64(agents), "flood-agents")
		b.ReportMetric(float64(n), "quiet-calls")
		rssBefore := procStatusMiB(b, pid, "VmRSS")
		// Namespace A's budgets fill up again meanwhile.
		alone := quietRun(b, ctx, url, tokenB, local, n)

		cpu0, t0 := gw.cpu(b), time.Now()
		// Long enough to cover B's agent: its start, its untimed call and
		// its paced calls, with a margin on a loaded machine.
		length := floodWarm + time.Duration(n)*quietEvery + 15*time.Second
		flood := make([]*tsagent.Agent, agents)
		for i := range flood {
			conns := floodConnections / agents
			if i < floodConnections%agents {
				conns++
			}
			a, err := tsagent.Start(ctx, url, tokenA, tsagent.Options{Wrapper: []string{"nice", "-n", "19"}}, tsagent.Lists(conns, length))
			if err != nil {
				b.Fatal(err)
			}
			flood[i] = a
		}
		time.Sleep(floodWarm)
		during := quietRun(b, ctx, url, tokenB, local, n)
		var g errgroup.Group
		outcomes := make([]tsagent.Outcome, agents)
		for i, a := range flood {
			g.Go(func() error {
				res, err := a.Wait()
				if err != nil {
					return err
				}
				if res.Connect.Error != nil || len(res.Steps) != 1 || res.Steps[0].Error != nil {
					connect := "ok"
					if res.Connect.Error != nil {
						connect = res.Connect.Error.Error()
					}
					return fmt.Errorf("a flooding agent: connect %s, %+v", connect, res.Steps)
				}
				outcomes[i] = res.Steps[0]
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		wall := time.Since(t0).Seconds()
		cpu := gw.cpu(b) - cpu0
		var lists, refused int
		for _, o := range outcomes {
			lists += o.N
			refused += o.Failed
			if o.Listed != 0 && o.Listed != floodTools {
				b.Fatalf("a flooding agent's list named %d tools, want %d", o.Listed, floodTools)
			}
			if o.FirstError != "" {
				b.Logf("a flooding agent's first failed list: %s", o.FirstError)
			}
		}
		b.ReportMetric(float64(alone.P50us)/1e3, "quiet-alone-p50-ms")
		b.ReportMetric(float64(alone.P95us)/1e3, "quiet-alone-p95-ms")
		b.ReportMetric(float64(during.P50us)/1e3, "quiet-flood-p50-ms")
		b.ReportMetric(float64(during.P95us)/1e3, "quiet-flood-p95-ms")
		b.ReportMetric(float64(during.P50us)/float64(alone.P50us), "quiet-flood/alone-p50")
		b.ReportMetric(float64(alone.Failed+during.Failed), "quiet-failed")
		b.ReportMetric(float64(lists)/wall, "flood-lists/s")
		b.ReportMetric(float64(refused)/wall, "flood-refused/s")
		b.ReportMetric(float64(lists)*float64(served)/(1<<20)/wall, "flood-MiB/s")
		b.ReportMetric(cpu.Seconds()/wall, "gateway-cpu-cores")
		b.ReportMetric(rssBefore, "gateway-rss-before-MiB")
		b.ReportMetric(procStatusMiB(b, pid, "VmRSS"), "gateway-rss-after-MiB")
		b.ReportMetric(procStatusMiB(b, pid, "VmHWM"), "gateway-rss-peak-MiB")
		// What the gateway holds, against what its GOGC lets garbage
		// take before a collection: the live heap after one.
		heap := heapProfileAt(b, gw.pprof, "gc=1&debug=1")
		b.ReportMetric(memStat(b, heap, "HeapAlloc")/(1<<20), "gateway-heap-MiB")
		b.ReportMetric(loadAverage(b), "load-avg-1m")
	}
}

// quietRun is B's agent: a process that calls the echo tool n times, one
// call a second, and reports their latencies and how many failed (a
// failed connection or step counts as every call failed).
func quietRun(b *testing.B, ctx context.Context, url, token, tool string, n int) tsagent.Outcome {
	b.Helper()
	res, err := tsagent.Run(ctx, url, token, tsagent.PacedCalls(tool, callArgs, n, quietEvery))
	if err != nil {
		b.Fatal(err)
	}
	if res.Connect.Error != nil || len(res.Steps) != 1 || res.Steps[0].Error != nil {
		b.Logf("B's agent failed: connect %v, %+v", res.Connect.Error, res.Steps)
		return tsagent.Outcome{N: n, Failed: n + 1}
	}
	o := res.Steps[0]
	if o.FirstError != "" {
		b.Logf("B's first failed call: %s", o.FirstError)
	}
	return o
}

// floodNamespace creates namespace A: the McpServer big with floodTools
// tools of about floodSchemaBytes each, every one enabled, approved and
// Ready, and an agent RBAC and an access policy allow them all. It returns
// the agent's token. The server's address is never called: a list reads
// only the tools.
func floodNamespace(b *testing.B, r *envtestRun, ns string) string {
	b.Helper()
	ctx := context.Background()
	r.namespace(b, ns)
	srv := mcpServer(ns, "big", "http://127.0.0.1:1/mcp", time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range floodTools {
		g.Go(func() error {
			return createTool(gctx, r.c, ns, "big", fmt.Sprintf("tool_%05d", i), listSchema(i, floodSchemaBytes), true)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return agentToken(b, r, ns)
}

// quietNamespace creates namespace B: the McpServer docs at url with its
// echo tool enabled, approved and Ready, and an agent allowed to call it.
// It returns the agent's token.
func quietNamespace(b *testing.B, r *envtestRun, ns, url string) string {
	b.Helper()
	r.namespace(b, ns)
	srv := mcpServer(ns, "docs", url, time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	if err := createTool(context.Background(), r.c, ns, "docs", mcpserver.ToolEcho, []byte(echoSchema), true); err != nil {
		b.Fatal(err)
	}
	return agentToken(b, r, ns)
}
