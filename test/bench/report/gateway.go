package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The eras agents speak, as the gateway benchmarks name them.
const (
	eraModern     = "2026-07-28"
	eraInitialize = "2025-11-25"
)

// Targets of the gateway per era (issue #31): a request that names
// nothing allocates at most pingGoalBytes; a list at most listGoal times
// the bytes it serves.
const (
	pingGoalBytes = 64 << 10
	listGoal      = 2.0
	// flatGoal is how much a request's cost may grow from the smallest
	// catalog to the largest and still be called flat: the list's
	// criterion for tools the caller cannot see.
	flatGoal = 1.25
)

// Targets of the flood and of idle sessions (issue #31).
const (
	floodLatencyGoal  = 3.0
	sessionGoalKiB    = 16.0
	defaultGatewayMiB = 256.0
)

// pingOp is the request of an era that names nothing: a ping in the
// initialize era, server/discover in 2026-07-28, which has no ping.
func pingOp(era string) string {
	if era == eraModern {
		return "discover"
	}
	return "ping"
}

// gatewayErasSection sets the gateway's targets side by side for the two
// eras agents speak.
func gatewayErasSection(p printer, r results) {
	const n = "BenchmarkGateway"
	p("### Each era agents speak\n\n")
	_, hasEra := r.get(n, "c1-era2025-added-p50-ms")
	_, hasCost := r.get(costBench+"/tools=10/era="+eraInitialize+"/op=ping", "alloc-bytes/req")
	_, hasList := r.get(listBench+"1000/era="+eraInitialize, "alloc-bytes/served-byte")
	if !hasEra && !hasCost && !hasList {
		p("Not measured (needs KUBEBUILDER_ASSETS, two CPUs and taskset).\n\n")
		return
	}
	p("The rows above are the 2026-07-28 revision, which our client speaks. Most\n")
	p("agents' clients speak the initialize era today (2025-11-25: the TypeScript\n")
	p("SDK's, IDE agents'), which the stateless gateway's front door answers\n")
	p("itself (initialize, ping, tools/list, tools/call; no session is kept).\n")
	p("`BenchmarkGateway`'s era mode makes the direct run and the run through the\n")
	p("gateway auditing to standard output again with go-sdk client sessions\n")
	p("pinned to 2025-11-25 (`ClientSessionOptions.ProtocolVersion`), one per\n")
	p("agent, opened before the measurement and kept as an agent keeps its\n")
	p("session; its direct run is the same client against the upstream in the\n")
	p("same revision, so each era is compared with its own client. The gateway's\n")
	p("call to the upstream is of 2026-07-28 in both. The direct figure the CPU\n")
	p("target divides by is each era's own client and the upstream answering\n")
	p("that era, and the two eras' differ (below), so the same work in the\n")
	p("gateway can be a different share of each.\n\n")
	if hasEra {
		p("| | 2026-07-28 (our client) | 2025-11-25 (go-sdk client) |\n|---|---:|---:|\n")
		row := func(what, unit, format string) {
			a, _ := r.get(n, strings.ReplaceAll(unit, "ERA", ""))
			b, _ := r.get(n, strings.ReplaceAll(unit, "ERA", "era2025-"))
			p("| %s | "+format+" | "+format+" |\n", what, a, b)
		}
		row("direct p50, one agent", "c1-ERAdirect-p50-ms", "%.2f ms")
		row("gateway p50, one agent", "c1-ERAgateway-p50-ms", "%.2f ms")
		row("added p50, one agent", "c1-ERAadded-p50-ms", "%.2f ms")
		row("agents+upstream CPU per direct call, 64 agents", "c64-ERAdirect-agent-cpu-us/call", "%.0f µs")
		row("agents+upstream CPU per call via the gateway, 64 agents", "c64-ERAgateway-agent-cpu-us/call", "%.0f µs")
		row("gateway CPU per call, 64 agents", "c64-ERAgateway-cpu-us/call", "%.0f µs")
		p("| gateway ÷ direct throughput, 64 agents | %s | %s |\n\n", shareSpread(r, n, "c64-throughput-ratio"), shareSpread(r, n, "c64-era2025-throughput-ratio"))
	}
	p("| target | 2026-07-28 | 2025-11-25 |\n|---|---|---|\n")
	cell := func(v float64, ok, measured bool, format string) string {
		if !measured {
			return "not measured"
		}
		return fmt.Sprintf(format+" %s", v, verdict(ok))
	}
	var cpu, added, ping, list []string
	for _, era := range []string{eraModern, eraInitialize} {
		prefix := ""
		if era == eraInitialize {
			prefix = "era2025-"
		}
		gw, ok1 := r.get(n, "c64-"+prefix+"gateway-cpu-us/call")
		direct, ok2 := r.get(n, "c64-"+prefix+"direct-agent-cpu-us/call")
		x := share(gw, direct)
		cpu = append(cpu, cell(x, direct > 0 && x <= 0.6, ok1 && ok2, "%.2f×"))
		a, ok := r.get(n, "c1-"+prefix+"added-p50-ms")
		added = append(added, cell(a, a <= 0.5, ok, "%.2f ms"))
		worst, measured := worstCost(r, era, pingOp(era), "alloc-bytes/req")
		ping = append(ping, cell(worst/1024, worst <= pingGoalBytes, measured, "%.1f KiB"))
		l, measured := worstList(r, era)
		list = append(list, cell(l, l <= listGoal, measured, "%.2f"))
	}
	p("| gateway CPU per call ≤ 0.6× the agents' and upstream's of a direct call (64 agents) | %s | %s |\n", cpu[0], cpu[1])
	p("| p50 added latency ≤ 0.5 ms (one agent) | %s | %s |\n", added[0], added[1])
	p("| a ping allocates ≤ 64 KiB (2026-07-28 has no ping: its server/discover; the largest over the catalog sizes below, the client's few KiB included) | %s | %s |\n", ping[0], ping[1])
	p("| a tools/list allocates ≤ 2× the bytes it serves (the larger of 1,000 and 10,000 tools) | %s | %s |\n\n", list[0], list[1])
	gwM, _ := r.get(n, "c64-gateway-cpu-us/call")
	gwI, _ := r.get(n, "c64-era2025-gateway-cpu-us/call")
	dM, _ := r.get(n, "c64-direct-agent-cpu-us/call")
	dI, okI := r.get(n, "c64-era2025-direct-agent-cpu-us/call")
	if okI && dI > 0 && dM > 0 && (gwI/dI > 0.6) != (gwM/dM > 0.6) {
		p("At 64 agents the gateway spent %.0f µs of CPU per call in 2026-07-28 and\n", gwM)
		p("%.0f µs in 2025-11-25, where a direct call cost the agents and the\n", gwI)
		p("upstream %.0f and %.0f µs: the two verdicts differ on a gateway CPU %.0f%%\n", dM, dI, 100*math.Abs(gwI/gwM-1))
		p("apart and a direct call %.0f%% apart.\n\n", 100*math.Abs(dI/dM-1))
	}
	if viaI, ok := r.get(n, "c64-era2025-gateway-agent-cpu-us/call"); ok && okI {
		viaM, _ := r.get(n, "c64-gateway-agent-cpu-us/call")
		p("The throughput at 64 agents is what the agents' one CPU can drive, and\n")
		p("through the gateway it holds more per call in 2025-11-25 (%.0f µs against\n", viaI)
		p("%.0f direct) than in 2026-07-28 (%.0f against %.0f): through the gateway\n", dI, viaM, dM)
		p("the upstream in that process answers the gateway's call, which is of\n")
		p("2026-07-28 whatever the agent's era, where directly it answers the\n")
		p("agent's. The gateway's own CPU per call differs little between the eras.\n\n")
	}
	if worst, ok := worstCost(r, eraModern, "discover", "alloc-bytes/req"); ok && worst > pingGoalBytes {
		p("A server/discover is not one of the requests the front door answers\n")
		p("itself (internal/gateway/wire.go): the go-sdk's server machinery answers\n")
		p("it, whose cost per request (a session built for it, decodes into fresh\n")
		p("buffers) step 4 of \"Gateway changes\" below measured for calls. It does\n")
		p("not grow with the catalog (below): the server built for it offers\n")
		p("nothing. A client of 2026-07-28 sends it once, where one of the\n")
		p("initialize era initializes.\n\n")
	}
}

const (
	costBench = "BenchmarkGatewayCost"
	listBench = "BenchmarkGatewayList/tools="
)

// costSizes are the catalog sizes the cost scenario reported, smallest
// first.
func costSizes(r results) []int {
	seen := map[int]bool{}
	for name := range r {
		rest, ok := strings.CutPrefix(name, costBench+"/tools=")
		if !ok {
			continue
		}
		size, _, _ := strings.Cut(rest, "/")
		if n, err := strconv.Atoi(size); err == nil {
			seen[n] = true
		}
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func costName(size int, era, op string) string {
	return fmt.Sprintf("%s/tools=%d/era=%s/op=%s", costBench, size, era, op)
}

// worstCost is the largest figure of one request over the catalog sizes.
func worstCost(r results, era, op, unit string) (float64, bool) {
	worst, measured := 0.0, false
	for _, size := range costSizes(r) {
		if v, ok := r.get(costName(size, era, op), unit); ok {
			worst, measured = math.Max(worst, v), true
		}
	}
	return worst, measured
}

// worstList is the larger bytes allocated ÷ served of an era's lists.
func worstList(r results, era string) (float64, bool) {
	worst, measured := 0.0, false
	for _, t := range []string{"1000", "10000"} {
		if v, ok := r.get(listBench+t+"/era="+era, "alloc-bytes/served-byte"); ok {
			worst, measured = math.Max(worst, v), true
		}
	}
	return worst, measured
}

// costSeries are the lines of the cost plot: each era's call and the
// request that names nothing.
var costSeries = []struct {
	era, op, label, color string
	dashed                bool
}{
	{eraModern, "call", "tools/call, 2026-07-28", "#1f77b4", false},
	{eraInitialize, "call", "tools/call, 2025-11-25", "#ff7f0e", false},
	{eraModern, "discover", "server/discover, 2026-07-28", "#d62728", true},
	{eraInitialize, "ping", "ping, 2025-11-25", "#2ca02c", true},
}

// gatewayCostSection tabulates what one request costs against the
// caller's catalog, and points at the plot.
func gatewayCostSection(p printer, r results, plot string) {
	p("### A request's cost against the caller's catalog\n\n")
	sizes := costSizes(r)
	if len(sizes) == 0 {
		p("Not measured (needs KUBEBUILDER_ASSETS).\n\n")
		return
	}
	p("`BenchmarkGatewayCost`: in namespaces whose agent may call 10, 100, 1,000\n")
	p("and 10,000 tools (each enabled, approved and Ready, with a schema of about\n")
	p("800 bytes), the agent calls the echo tool of a stateless go-sdk server and\n")
	p("makes the request of its era that names nothing (a ping; 2026-07-28 has\n")
	p("none, and the go-sdk answers it \"method not found\", so its server/discover),\n")
	p("over the real HTTP endpoint of a gateway in the benchmark process,\n")
	p("stateless as the chart runs it, its budgets out of the way and its audit\n")
	p("records built but not written. The upstream server is a process of its\n")
	p("own, so bytes are what the gateway and the benchmark's own client (plain\n")
	p("net/http) allocated per request, and CPU the benchmark process's per\n")
	p("request, the same two; *direct* is the same requests made of the upstream\n")
	p("itself, the client's share alone. A request pays for what it names: flat\n")
	p("is the goal.\n\n")
	p("![Bytes allocated and CPU per request against the caller's catalog size, per era](%s)\n\n", plot)
	p("| tools the caller may call |")
	for _, s := range costSeries {
		p(" %s |", s.label)
	}
	p("\n|---:|")
	for range costSeries {
		p("---:|")
	}
	p("\n")
	cell := func(name string) string {
		b, ok := r.get(name, "alloc-bytes/req")
		if !ok {
			return "-"
		}
		cpu, _ := r.get(name, "cpu-us/req")
		return fmt.Sprintf("%.1f KiB, %.0f µs", b/1024, cpu)
	}
	p("| direct (the client alone) |")
	for _, s := range costSeries {
		p(" %s |", cell(fmt.Sprintf("%s/direct/era=%s/op=%s", costBench, s.era, s.op)))
	}
	p("\n")
	for _, size := range sizes {
		p("| %s |", tick(float64(size)))
		for _, s := range costSeries {
			p(" %s |", cell(costName(size, s.era, s.op)))
		}
		p("\n")
	}
	first, last := sizes[0], sizes[len(sizes)-1]
	p("\nFrom %s to %s tools (flat: within %.2f×):\n\n", tick(float64(first)), tick(float64(last)), flatGoal)
	p("| request | bytes | CPU |\n|---|---|---|\n")
	for _, s := range costSeries {
		var cells []string
		for _, unit := range []string{"alloc-bytes/req", "cpu-us/req"} {
			a, ok1 := r.get(costName(first, s.era, s.op), unit)
			b, ok2 := r.get(costName(last, s.era, s.op), unit)
			if !ok1 || !ok2 || a == 0 {
				cells = append(cells, "not measured")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2f× %s", b/a, flatVerdict(b/a <= flatGoal)))
		}
		p("| %s | %s | %s |\n", s.label, cells[0], cells[1])
	}
	p("\nCPU per request is the benchmark process's, measured with getrusage\n")
	p("over the run, so a shared machine's noise is in it; the bytes are\n")
	p("counted by the Go runtime and do not depend on the machine.\n\n")
}

func flatVerdict(ok bool) string {
	if ok {
		return "**flat**"
	}
	return "**grows**"
}

// costPlot is the cost scenario as an SVG: bytes allocated and CPU per
// request against the caller's catalog size, one line per era and
// request; empty when the scenario did not run.
func costPlot(r results) string {
	sizes := costSizes(r)
	if len(sizes) == 0 {
		return ""
	}
	var bytes, cpu []plotSeries
	for _, s := range costSeries {
		b := plotSeries{label: s.label, color: s.color, dashed: s.dashed}
		c := b
		for _, size := range sizes {
			if v, ok := r.get(costName(size, s.era, s.op), "alloc-bytes/req"); ok {
				b.points = append(b.points, plotPoint{float64(size), v / 1024})
			}
			if v, ok := r.get(costName(size, s.era, s.op), "cpu-us/req"); ok {
				c.points = append(c.points, plotPoint{float64(size), v})
			}
		}
		bytes, cpu = append(bytes, b), append(cpu, c)
	}
	return svgPlot("What one request costs the gateway against the caller's catalog", []plotPanel{
		{title: "KiB allocated per request", series: bytes, refs: []plotRef{{y: pingGoalBytes / 1024, label: "ping target, 64 KiB"}}},
		{title: "CPU µs per request (benchmark process)", series: cpu},
	})
}

// gatewayFloodSection reports one namespace's flood beside another's quiet
// agent.
func gatewayFloodSection(p printer, r results) {
	const n = "BenchmarkGatewayFlood"
	p("### One namespace's flood beside another's agent\n\n")
	ratio, ok := r.get(n, "quiet-flood/alone-p50")
	if !ok {
		p("Not measured (needs KUBEBUILDER_ASSETS, two CPUs, taskset and Node.js).\n\n")
		return
	}
	get := func(unit string) float64 { v, _ := r.get(n, unit); return v }
	limit, ok := r.get(n, "gateway-memory-limit-MiB")
	if !ok {
		limit = defaultGatewayMiB
	}
	p("`BenchmarkGatewayFlood`: the gateway as the chart runs it (the manager\n")
	p("binary with `--components=gateway --gateway-stateless`, a process of its\n")
	p("own on its own CPU, the chart's GOGC, `GOMEMLIMIT` from its memory limit of\n")
	p("%s MiB, and the chart's default budgets) against envtest. Namespace A holds\n", num(limit))
	p("151 tools of about 61 KiB each (%.1f MiB listed) and an agent that lists\n", get("list-MiB"))
	p("them on %s connections at once, each listing again as soon as its list\n", num(get("flood-connections")))
	p("returned, whatever the answer: the official TypeScript SDK's client\n")
	p("(2025-11-25), in %s processes sharing the connections. Namespace B's agent,\n", num(get("flood-agents")))
	p("the same client, calls an echo tool once a second, %s calls alone and %s\n", num(get("quiet-calls")), num(get("quiet-calls")))
	p("during the flood, each time an agent process of its own. Every agent runs\n")
	p("on this machine where in a cluster it would run on another, so the\n")
	p("flooding processes run at nice 19: they take the CPU the gateway, B and\n")
	p("the upstream leave, and their own reading of megabytes does not decide\n")
	p("B's latency. No controller runs; the tools' status is written by the\n")
	p("benchmark.\n\n")
	p("| figure | value |\n|---|---:|\n")
	p("| B's call p50 / p95 alone | %.2f / %.2f ms |\n", get("quiet-alone-p50-ms"), get("quiet-alone-p95-ms"))
	p("| B's call p50 / p95 during the flood | %.2f / %.2f ms |\n", get("quiet-flood-p50-ms"), get("quiet-flood-p95-ms"))
	p("| B's calls that failed (of %s) | %s |\n", num(2*get("quiet-calls")), num(get("quiet-failed")))
	p("| A's lists answered a second (MiB a second) | %.1f (%.1f) |\n", get("flood-lists/s"), get("flood-MiB/s"))
	p("| A's lists refused a second (429, over a budget) | %.0f |\n", get("flood-refused/s"))
	p("| gateway CPU during the flood | %.2f cores |\n", get("gateway-cpu-cores"))
	p("| gateway RSS before the flood / after it | %.1f / %.1f MiB |\n", get("gateway-rss-before-MiB"), get("gateway-rss-after-MiB"))
	p("| gateway RSS at its peak (VmHWM) | %.1f MiB |\n", get("gateway-rss-peak-MiB"))
	if heap, ok := r.get(n, "gateway-heap-MiB"); ok {
		p("| gateway live heap after the flood (after a collection) | %.1f MiB |\n", heap)
	}
	p("| load average (1 min) at the end | %.1f |\n\n", get("load-avg-1m"))
	failed, peak := get("quiet-failed"), get("gateway-rss-peak-MiB")
	p("Targets: B's p50 during the flood ≤ %.0f× its p50 alone: %.2f× %s; none of B's calls failed: %s %s; the gateway's peak RSS within its %s MiB: %.1f MiB %s.\n\n",
		floodLatencyGoal, ratio, verdict(ratio <= floodLatencyGoal), num(failed), verdict(failed == 0), num(limit), peak, verdict(peak <= limit))
	p("The chart's budgets bound the bytes A is answered (by default 32 MiB a\n")
	p("second for one ServiceAccount, 128 MiB in a burst: docs/gateway.md,\n")
	p("\"Budgets\"), so most of A's requests are refused before any work is done\n")
	p("for them; what A is answered is written from the bytes the list cache\n")
	p("keeps for each tool, not encoded again.")
	if heap, ok := r.get(n, "gateway-heap-MiB"); ok {
		p(" The live heap after the flood was %.1f MiB\n", heap)
		p("of a %.1f MiB resident set: the rest is mostly what the chart's GOGC of 400\n", get("gateway-rss-after-MiB"))
		p("lets garbage take between collections (the heap may grow to five times\n")
		p("the live heap), which `GOMEMLIMIT` bounds, and the binary's pages.")
	}
	p("\n\n")
}

// gatewaySessionsSection reports what idle sessions cost one replica.
func gatewaySessionsSection(p printer, r results) {
	const n = "BenchmarkGatewaySessions"
	p("### Idle sessions\n\n")
	sessions, ok := r.get(n, "sessions")
	if !ok {
		p("Not measured (needs KUBEBUILDER_ASSETS and two CPUs).\n\n")
		return
	}
	// Growth within the noise of a collection can come out a hair below
	// zero; it is shown as none.
	get := func(unit string) float64 {
		v, _ := r.get(n, unit)
		if v < 0 && v > -0.05 {
			return 0
		}
		return v
	}
	p("`BenchmarkGatewaySessions`: go-sdk client sessions pinned to 2025-11-25 (the\n")
	p("initialize era, the only one with sessions) connect to a gateway run as the\n")
	p("chart runs it (initialize, notifications/initialized, and the GET for the\n")
	p("server's event stream, answered 405) and then make no request. The\n")
	p("stateless gateway keeps nothing for a session: its answer to initialize\n")
	p("is the same bytes for every client, and each later request carries what it\n")
	p("needs. What an idle session can leave behind is its connection, if its\n")
	p("client keeps it open. So %s sessions are opened over %s shared\n", tick(sessions), "16")
	p("connections (what the sessions leave), then %s more each on a connection\n", tick(sessions))
	p("of its own kept open and idle, as an agent's HTTP client keeps it (what\n")
	p("an idle agent costs; the gateway keeps at most 1,024 connections idle,\n")
	p("closing the one idle longest past that, `--gateway-max-idle-connections`,\n")
	p("and closes any connection idle for two minutes: a client reconnects for\n")
	p("its next request). Each figure is the gateway process's growth per session, read\n")
	p("after a collection: the live heap and goroutine stacks are what the\n")
	p("sessions hold; the resident set also keeps what the runtime has not\n")
	p("returned to the system, such as the garbage of the sessions' requests.\n\n")
	p("| per session | over shared connections | each on its own connection |\n|---|---:|---:|\n")
	p("| live heap | %.2f KiB | %.2f KiB |\n", get("shared-heap-KiB/session"), get("own-heap-KiB/session"))
	p("| goroutine stacks | %.2f KiB | %.2f KiB |\n", get("shared-stack-KiB/session"), get("own-stack-KiB/session"))
	p("| resident set (VmRSS) | %.2f KiB | %.2f KiB |\n", get("shared-rss-KiB/session"), get("own-rss-KiB/session"))
	p("| connections the gateway held open for them | %s | %s |\n", num(math.Max(0, get("shared-connections-held"))), num(get("own-connections-held")))
	p("| sessions opened a second | %.0f | %.0f |\n\n", get("shared-sessions/s"), get("own-sessions/s"))
	held := func(prefix string) float64 {
		return get(prefix+"heap-KiB/session") + get(prefix+"stack-KiB/session")
	}
	own := get("own-rss-KiB/session")
	p("Target: %s idle sessions on one replica cost ≤ %.0f KiB each: each on its own connection %.1f KiB of resident set %s (%.1f KiB held in heap and stacks); the sessions alone %.1f KiB held %s.\n\n",
		tick(sessions), sessionGoalKiB, own, verdict(own <= sessionGoalKiB), held("own-"), held("shared-"), verdict(held("shared-") <= sessionGoalKiB))
	if rss, ok := r.get(n, "gateway-rss-MiB"); ok {
		limit, ok := r.get(n, "gateway-memory-limit-MiB")
		if !ok {
			limit = defaultGatewayMiB
		}
		p("With all %s sessions open the gateway's resident set was %.1f MiB", tick(2*sessions), rss)
		if anon, ok := r.get(n, "gateway-rss-anon-MiB"); ok {
			p(" (%.1f MiB\nof it anonymous memory, the rest mostly the binary's pages)", anon)
		}
		p(" and its live\nheap %.1f MiB, against the chart's memory limit of %s MiB (idle: %.1f MiB).\n\n", get("gateway-heap-MiB"), num(limit), get("gateway-rss-idle-MiB"))
	}
	p("What an open connection holds is net/http's: the goroutine that waits on\n")
	p("it (its stack: %.1f KiB a connection here) and the connection's 4 KiB read\n", get("own-stack-KiB/session"))
	p("and 4 KiB write buffers, which the server keeps for the connection's\n")
	p("life, with its state; the idle-connection bound is what keeps them from\n")
	p("growing with idle agents. The gateway keeps no state of its own for a\n")
	p("session.\n\n")
}

// typedBench names the typed-result scenario; typedPeakGoal is its target
// (issue #34): the gateway's peak heap per call in flight at most twice
// the image it passes.
const (
	typedBench    = "BenchmarkGatewayTypedResult"
	typedPeakGoal = 2.0
)

// gatewayTypedSection reports what a result carrying a 5 MiB image costs
// the gateway, per path and era.
func gatewayTypedSection(p printer, r results) {
	p("### A result carrying a 5 MiB image\n\n")
	name := func(path, era string, gc int) string {
		return fmt.Sprintf("%s/path=%s/era=%s/gc=%d", typedBench, path, era, gc)
	}
	if _, ok := r.get(name("gateway", eraModern, 1), "peak-x"); !ok {
		p("Not measured (needs KUBEBUILDER_ASSETS).\n\n")
		return
	}
	p("`BenchmarkGatewayTypedResult`: an agent calls a tool whose stateless go-sdk\n")
	p("server (a process of its own, answering `application/json`, chunked, as the\n")
	p("go-sdk writes it) returns a 5 MiB image and a caption, 4 calls in flight at\n")
	p("once, over the real HTTP endpoint of a gateway running in the benchmark\n")
	p("process, stateless as the chart runs it, the tool's `maxContentBytes` 6 MiB.\n")
	p("*gateway* is the gateway's own code (ADR 042's front door); *SDK* the same\n")
	p("calls with a progress token, which the front door leaves to the go-sdk's\n")
	p("server; *gateway, length said* an upstream that sends `Content-Length`;\n")
	p("*gateway, event stream* an upstream that answers with an event stream, as\n")
	p("the go-sdk's and the TypeScript SDK's servers do unless told otherwise.\n")
	p("Allocated is what the process allocated per call (the gateway's, and the\n")
	p("benchmark's client's few KiB). Peak is the highest heap in use\n")
	p("(`runtime/metrics`, sampled every 100 µs) above the idle heap measured\n")
	p("before the calls, per call in flight: with the collector at GOGC 1, so that\n")
	p("it is what the calls hold rather than garbage waiting for a collection, and\n")
	p("at the runtime's default of 100 (the chart's 400 lets garbage grow further,\n")
	p("bounded by `GOMEMLIMIT`). Ratios are to the image's 5 MiB; the answer, the\n")
	p("image in base64 and the rest, is %.2f MiB.\n\n", typedGet(r, name("gateway", eraModern, 1), "answer-MiB"))
	p("| path | era | allocated per call | peak per call in flight | peak, GOGC 100 |\n|---|---|---:|---:|---:|\n")
	cell := func(n, mibUnit, xUnit string) string {
		v, ok := r.get(n, xUnit)
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.1f MiB, %.2f×", typedGet(r, n, mibUnit), v)
	}
	for _, path := range []struct{ key, label string }{{"gateway", "gateway"}, {"sdk", "SDK"}, {"gateway-length", "gateway, length said"}, {"gateway-stream", "gateway, event stream"}} {
		for _, era := range []string{eraModern, eraInitialize} {
			n := name(path.key, era, 1)
			if _, ok := r.get(n, "peak-x"); !ok {
				continue
			}
			p("| %s | %s | %s | %s | %s |\n", path.label, era, cell(n, "alloc-MiB/call", "alloc-x"), cell(n, "peak-MiB/call", "peak-x"), cell(name(path.key, era, 100), "peak-MiB/call", "peak-x"))
		}
	}
	p("\nTargets: the gateway's own path, peak per call in flight ≤ %.0f× the image:", typedPeakGoal)
	sep := ""
	for _, path := range []struct{ key, label string }{{"gateway", ""}, {"gateway-stream", " (event stream)"}} {
		for _, era := range []string{eraModern, eraInitialize} {
			v, ok := r.get(name(path.key, era, 1), "peak-x")
			if !ok {
				continue
			}
			p("%s %s%s %.2f× %s", sep, era, path.label, v, verdict(v <= typedPeakGoal))
			sep = ";"
		}
	}
	p(".\n\nThe SDK's path is reported, with no target: it encodes the result\n")
	p("itself, then its JSON-RPC message, each a copy of the image's base64.\n\n")
}

// typedGet is a metric of the typed-result scenario, 0 when not measured.
func typedGet(r results, name, unit string) float64 {
	v, _ := r.get(name, unit)
	return v
}

// argsBench names the large-arguments scenario.
const argsBench = "BenchmarkGatewayLargeArguments"

// argsKinds are the scenario's arguments, as its sub-benchmarks name
// them.
var argsKinds = []string{"plain", "escaped", "unsorted"}

// gatewayArgsSection reports what a call carrying large arguments costs
// the gateway, per kind of arguments and era. It has no target.
func gatewayArgsSection(p printer, r results) {
	p("### A call carrying large arguments\n\n")
	name := func(kind, era string, gc int) string {
		return fmt.Sprintf("%s/args=%s/era=%s/gc=%d", argsBench, kind, era, gc)
	}
	first := name(argsKinds[0], eraModern, 1)
	if _, ok := r.get(first, "peak-x"); !ok {
		p("Not measured (needs KUBEBUILDER_ASSETS).\n\n")
		return
	}
	p("`BenchmarkGatewayLargeArguments`: an agent calls a tool whose arguments\n")
	p("carry one string, %.0f KiB of arguments as the request carries them (under\n", typedGet(r, first, "args-KiB"))
	p("the gateway's default bound on a request's body,\n")
	p("`--gateway-max-request-bytes`, 1 MiB), 4 calls in flight at once, over the\n")
	p("real HTTP endpoint of a gateway running in the benchmark process, stateless\n")
	p("as the chart runs it, with plain requests of the shapes the go-sdk's and the\n")
	p("TypeScript SDK's clients send in each era: the gateway's own path (its\n")
	p("front door). The tool's stateless go-sdk server (a process of its own)\n")
	p("answers small, the hash and length of the string it received, and every\n")
	p("call checks them: the benchmark fails unless the upstream received the\n")
	p("string byte for byte. The arguments are *plain*, printable ASCII that JSON\n")
	p("writes as it is; *escaped*, the text of a source file (lines, tabs,\n")
	p("quotes, backslashes) escaped as encoding/json escapes it; *unsorted*, the\n")
	p("same text followed by a short second member whose name sorts before it, as\n")
	p("a client that keeps its members in the order it wrote them (the TypeScript\n")
	p("SDK's) sends them. Allocated and peak are measured as for the image above,\n")
	p("at GOGC 1 and 100; ratios are to the arguments' size.\n\n")
	p("| arguments | era | allocated per call | peak per call in flight | peak, GOGC 100 | received byte for byte |\n|---|---|---:|---:|---:|---|\n")
	cell := func(n, mibUnit, xUnit string) string {
		v, ok := r.get(n, xUnit)
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.2f MiB, %.2f×", typedGet(r, n, mibUnit), v)
	}
	for _, kind := range argsKinds {
		for _, era := range []string{eraModern, eraInitialize} {
			n := name(kind, era, 1)
			if _, ok := r.get(n, "peak-x"); !ok {
				continue
			}
			intact := "no"
			if typedGet(r, n, "received-intact") == 1 {
				intact = "yes"
			}
			p("| %s | %s | %s | %s | %s | %s |\n", kind, era, cell(n, "alloc-MiB/call", "alloc-x"), cell(n, "peak-MiB/call", "peak-x"), cell(name(kind, era, 100), "peak-MiB/call", "peak-x"), intact)
		}
	}
	p("\nWhat the memory is, from a memory profile of this scenario\n")
	p("(`-memprofile`; the gateway runs in the benchmark process). Arguments in\n")
	p("the form encoding/json writes (plain and escaped: the gateway checks this\n")
	p("in one pass over their bytes, internal/gateway/arguments.go) are passed on\n")
	p("as they came, their hash that of their bytes, and a call allocates two\n")
	p("copies of them: the request's body, read whole into one buffer of its\n")
	p("length, of which the arguments are a slice, and the request the gateway's\n")
	p("client builds for the upstream (`mcp.encodeRequest`). Both are alive while\n")
	p("the call is sent, which is most of the peak per call in flight at GOGC 1.\n")
	p("Arguments not in that form (unsorted) are decoded and encoded again into\n")
	p("the canonical form the audit record's hash and an approval name, on top\n")
	p("of those two copies: the `json.Decoder` copies them into a buffer of its\n")
	p("own grown by doubling (about 2.3× their size allocated), the string is\n")
	p("unescaped and then made a Go string (a copy each), and encoding it again\n")
	p("writes it into the encoder's buffer and copies the result out. At GOGC 1\n")
	p("the collector empties encoding/json's pool of buffers between calls, so\n")
	p("that the encoder grows a buffer anew, by doubling, for each call: that is\n")
	p("the difference between the two collectors' bytes allocated for unsorted\n")
	p("arguments. At GOGC 100 the peak is mostly garbage of earlier calls not\n")
	p("yet collected.\n\n")
}
