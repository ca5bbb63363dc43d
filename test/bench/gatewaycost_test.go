package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// costTotals are the catalog sizes of the cost scenario: how many tools the
// caller may call. BENCH_COST_TOOLS (a comma-separated list) overrides
// them.
func costTotals() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("BENCH_COST_TOOLS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{10, 100, 1000, 10000}
	}
	return out
}

// costOps are the requests of the cost scenario in each era: a call of
// the echo tool, and the era's request that names nothing: a ping in the
// initialize era; 2026-07-28 has no ping (the go-sdk answers "method not
// found"), and its nearest is server/discover, which a client of that era
// sends where one of the initialize era would initialize.
func costOps(era string) []string {
	if era == eraModern {
		return []string{"call", "discover"}
	}
	return []string{"call", "ping"}
}

// BenchmarkGatewayCost measures what one request costs the gateway
// against the size of the caller's catalog: in namespaces whose agent may
// call 10, 100, 1,000 and 10,000 tools (each enabled, approved and Ready,
// with a schema of about 800 bytes; one of them the echo tool of an
// in-process stateless go-sdk server), the agent calls echo, and pings, in
// each era agents speak (2026-07-28, and 2025-11-25 as a client sends it
// once its stateless session is initialized; see costOps for the ping),
// over the real HTTP endpoint of a gateway running in this process,
// stateless as the chart runs it. A request pays for what it names, so the
// figures should not move with the catalog.
//
// The upstream server is a process of its own (upstreamproc_test.go), so
// alloc-bytes/req is what the gateway allocated per request, and the
// benchmark's own client (plain net/http, a few KiB); cpu-us/req is this
// process's CPU time per request, the same parts. "direct" makes the same
// requests of the upstream itself, by its own tool name: the client's
// share alone. The gateway audits to io.Discard (the records are built,
// not written), its budgets are raised out of the way, and no controller
// runs: the tools' status is written by the benchmark, before the
// gateway's cache starts, as the importer and the tool controller would
// write it.
func BenchmarkGatewayCost(b *testing.B) {
	r := startEnvtest(b)
	upURL := startUpstream(b)
	tokens := map[int]string{}
	for _, total := range costTotals() {
		tokens[total] = costNamespace(b, r, fmt.Sprintf("cost-%d", total), upURL, total)
	}
	addr := startStatelessGateway(b, r)
	local := toolname.LocalName("docs", mcpserver.ToolEcho)
	hc := &http.Client{}
	for _, era := range gatewayEras {
		for _, op := range costOps(era) {
			b.Run(fmt.Sprintf("direct/era=%s/op=%s", era, op), func(b *testing.B) {
				measureCost(b, &costRequester{hc: hc, url: upURL, era: era, op: op, tool: mcpserver.ToolEcho})
			})
		}
	}
	for _, total := range costTotals() {
		for _, era := range gatewayEras {
			for _, op := range costOps(era) {
				b.Run(fmt.Sprintf("tools=%d/era=%s/op=%s", total, era, op), func(b *testing.B) {
					measureCost(b, &costRequester{hc: hc, url: "http://" + addr + gateway.Path, token: tokens[total], era: era, op: op, tool: local})
				})
			}
		}
	}
}

// measureCost makes c's request until the benchmark has its iterations,
// after a warm-up (the gateway's review caches, connections), and reports
// the bytes allocated and the CPU time of this process per request.
func measureCost(b *testing.B, c *costRequester) {
	b.Helper()
	var last error
	await(b, time.Minute, "a first "+c.op+" answered", func() bool { last = c.do(); return last == nil },
		func() string { return fmt.Sprintf("(last: %v)", last) })
	for range 20 {
		if err := c.do(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuOfSelf(b)
	n := 0
	for b.Loop() {
		if err := c.do(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	cpu := cpuOfSelf(b) - cpu0
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n), "alloc-bytes/req")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n), "cpu-us/req")
}

// costRequester makes one kind of request (a call of tool, or a ping) of
// one era with plain net/http, reading each answer into one reused
// buffer.
type costRequester struct {
	hc                        *http.Client
	url, token, era, op, tool string
	buf                       bytes.Buffer
}

func (c *costRequester) body() string {
	switch {
	case c.op == "ping":
		return `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	case c.op == "discover":
		return `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + modernMeta + `}}}`
	case c.era == eraInitialize:
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":{"text":"hello"}}}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":{"text":"hello"},"_meta":{` + modernMeta + `}}}`
}

// do makes the request once and checks its answer.
func (c *costRequester) do() error {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(c.body()))
	if err != nil {
		return err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", c.era)
	switch {
	case c.op == "discover":
		h.Set("Mcp-Method", "server/discover")
	case c.era == eraModern:
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", c.tool)
	}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	want := map[string]string{"call": `"text":"hello"`, "ping": `"result":{}`, "discover": `"supportedVersions":`}[c.op]
	if resp.StatusCode != http.StatusOK || !bytes.Contains(c.buf.Bytes(), []byte(want)) || bytes.Contains(c.buf.Bytes(), []byte(`"isError":true`)) {
		return fmt.Errorf("%s %s: status %d: %.300s", c.era, c.op, resp.StatusCode, c.buf.String())
	}
	return nil
}

// costNamespace creates namespace ns with the McpServer docs at url, an
// agent RBAC and an access policy allow every tool, and total tools the
// agent may call: echo and total-1 others with small schemas. It returns
// the agent's token.
func costNamespace(b *testing.B, r *envtestRun, ns, url string, total int) string {
	b.Helper()
	ctx := context.Background()
	r.namespace(b, ns)
	srv := mcpServer(ns, "docs", url, time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	g.Go(func() error { return createTool(gctx, r.c, ns, "docs", mcpserver.ToolEcho, []byte(echoSchema), true) })
	for i := 1; i < total; i++ {
		g.Go(func() error {
			return createTool(gctx, r.c, ns, "docs", fmt.Sprintf("tool_%05d", i), listSchema(i, smallSchemaBytes), true)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	// The gateway's cache starts after this, from a list that holds them
	// all.
	var tools mcpv1alpha1.McpToolList
	if err := r.c.List(ctx, &tools, client.InNamespace(ns)); err != nil || len(tools.Items) != total {
		b.Fatalf("namespace %s holds %d tools (%v), want %d", ns, len(tools.Items), err, total)
	}
	return agentToken(b, r, ns)
}

// echoSchema is the input schema of the upstream's echo tool.
const echoSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// startStatelessGateway starts a gateway in this process against r,
// stateless as the chart runs it, auditing to nowhere and with budgets out
// of the way (a run answers hundreds of MiB in seconds, past a
// ServiceAccount's default bytes budget), and returns its address.
func startStatelessGateway(b *testing.B, r *envtestRun) string {
	b.Helper()
	ready := make(chan string, 1)
	startManager(b, r.mcfg, func(o *manager.Options) {
		o.Components = manager.ComponentsGateway
		o.GatewayAddr, o.GatewayInsecure, o.GatewayReady = "127.0.0.1:0", true, ready
		o.GatewayAudit = io.Discard
		o.GatewayStateless = true
		o.GatewayBudgets = unboundBudgets
	})
	select {
	case addr := <-ready:
		return addr
	case <-time.After(time.Minute):
		b.Fatal("the gateway did not start listening")
		return ""
	}
}
