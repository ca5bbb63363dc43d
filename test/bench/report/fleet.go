package main

import (
	"fmt"
	"slices"
	"strings"
)

const fleetBench = "BenchmarkScaleFleet"

// Targets of the fleet (issue #23): probes on time per shard, and McpServer
// status writes per probe of an unchanged server.
const (
	fleetOnTimeGoal = 0.98
	fleetWritesGoal = 0.1
)

// fleetShards are the shards the fleet scenario reported, the default
// instance first: the names of its "shard-<name>-servers" metrics.
func fleetShards(r results) []string {
	var names []string
	for unit := range r[fleetBench] {
		if name, ok := strings.CutPrefix(unit, "shard-"); ok {
			if name, ok := strings.CutSuffix(name, "-servers"); ok {
				names = append(names, name)
			}
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "default":
			return -1
		case b == "default":
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// fleetFigures is what the targets need of a fleet run: the worst shard's
// figures and the largest resident sets.
type fleetFigures struct {
	measured        bool
	servers, iv     float64
	shards          int
	onTime, writes  float64 // worst shard: lowest on time, most writes per probe
	rss, peak       float64 // largest shard
	onTimeOK, wrOK  bool
	apiserver, etcd float64 // cores over the window
	bench, fleetCPU float64 // the benchmark process; the shards together
	busy, cpus      float64 // the machine: busy share, CPUs
	load            float64 // the machine's load average at the window's end
	others          float64 // cores used by every other process
	// Run-queue wait over the window, in seconds per second: how much more
	// CPU a process wanted than it got. hasWait is false for a run from
	// before it was measured.
	apiWait, etcdWait, fleetWait float64
	hasWait                      bool
	probes, window               float64 // the shards' probes together; seconds
}

func fleet(r results) fleetFigures {
	f := fleetFigures{}
	get := func(unit string) float64 { v, _ := r.get(fleetBench, unit); return v }
	if _, ok := r.get(fleetBench, "servers"); !ok {
		return f
	}
	names := fleetShards(r)
	if len(names) == 0 {
		return f
	}
	f.measured = true
	f.servers, f.iv, f.shards = get("servers"), get("interval-s"), len(names)
	f.onTime = 1e9
	for _, s := range names {
		sh := func(unit string) float64 { return get("shard-" + s + "-" + unit) }
		f.onTime = min(f.onTime, sh("on-time/scheduled"))
		f.writes = max(f.writes, sh("writes/probe"))
		f.rss = max(f.rss, sh("rss-MiB"))
		f.peak = max(f.peak, sh("rss-peak-MiB"))
		f.fleetCPU += sh("cores")
		f.fleetWait += sh("runq-wait")
		f.probes += sh("probes")
	}
	f.onTimeOK, f.wrOK = f.onTime >= fleetOnTimeGoal, f.writes <= fleetWritesGoal
	f.apiserver, f.etcd, f.bench = get("apiserver-cores"), get("etcd-cores"), get("bench-process-cores")
	f.busy, f.cpus, f.load = get("machine-busy"), get("machine-cpus"), get("machine-load1")
	f.apiWait, f.etcdWait = get("apiserver-runq-wait"), get("etcd-runq-wait")
	_, f.hasWait = r.get(fleetBench, "apiserver-runq-wait")
	f.window = get("window-s")
	f.others = max(0, f.busy*f.cpus-f.apiserver-f.etcd-f.bench-f.fleetCPU)
	return f
}

func fleetSection(p printer, r results) {
	p("## 11. A fleet across shards (envtest)\n\n")
	f := fleet(r)
	if !f.measured {
		p("Not measured (needs KUBEBUILDER_ASSETS).\n\n")
		return
	}
	get := func(unit string) float64 { v, _ := r.get(fleetBench, unit); return v }
	names := fleetShards(r)
	p("`BenchmarkScaleFleet`: %s McpServers at a %s s health interval across\n", num(f.servers), num(f.iv))
	p("%d controller instances, as the chart runs them for `sharding.shards: [%s]`\n", f.shards, strings.Join(names[1:], ", "))
	p("(docs/install.md, docs/adr/019-sharding.md): the default instance with\n")
	p("`--watch-label-selector=!sharding.mcp.catalog.dev/key` and one instance\n")
	p("per named shard, each the manager binary with the controllers only, a\n")
	p("process of its own (GOMEMLIMIT from the chart's memory limit, as in\n")
	p("section 5; leader election off: one replica each, and on a loaded machine\n")
	p("a missed lease renewal would end a shard), against one envtest control\n")
	p("plane. Server *i* goes to instance *i* mod %d, in one of a few\n", f.shards)
	p("namespaces, and is its own endpoint of one in-process go-sdk server. Each\n")
	p("instance reaches the API server through its own proxy in the benchmark\n")
	p("process, which counts its writes. ")
	if f.shards == 3 {
		p("Three instances is the install guide's example\n")
		p("(two named shards) and puts each at about %.0f servers, %.0f probes a\n", f.servers/3, f.servers/3/f.iv)
		p("second: within the probe rate one instance keeps at 1,000 servers every\n")
		p("5 s (section 4), and under its memory target's scale (section 5) in\n")
		p("objects held, as these servers have no tools.\n\n")
	} else {
		p("Each instance holds about %.0f servers.\n\n", f.servers/float64(f.shards))
	}
	p("Once every server was contacted (%.0f s after the first was created;\n", get("first-contact-s"))
	p("creating them took %.0f s) and one more interval passed, a window of\n", get("create-s"))
	p("%.0f s is watched: one lastContactTime refresh cycle, twelve probes at the\n", get("window-s"))
	p("interval and its mean jitter, so that every unchanged server's one\n")
	p("refresh falls in it once whatever its phase. Nothing about the servers\n")
	p("changes, so every probe is an unchanged one. A probe is on time when it\n")
	p("comes within the interval, the scheduler's jitter (a tenth of it) and\n")
	p("a second after the server's previous one; scheduled probes are servers ×\n")
	p("window ÷ (interval × 1.05).\n\n")

	p("| shard | servers | probes achieved / scheduled | on time / scheduled | worst lateness | status writes (per probe; per server) | CPU | CPU per probe | RSS settled (anon) | RSS peak | live heap |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range names {
		sh := func(unit string) float64 { return get("shard-" + s + "-" + unit) }
		p("| %s | %s | %s / %.0f (%s) | %s | %.2f s | %s (%.4f; %.3f) | %.3f cores | %.2f ms | %.1f MiB (%.1f) | %.1f MiB | %.1f MiB |\n",
			s, num(sh("servers")), num(sh("probes")), sh("scheduled"), percent1(sh("achieved/scheduled")),
			percent1(sh("on-time/scheduled")), sh("worst-late-s"), num(sh("status-writes")), sh("writes/probe"), share(sh("status-writes"), sh("servers")),
			sh("cores"), 1000*share(sh("cores")*f.window, sh("probes")),
			sh("rss-MiB"), sh("rss-anon-MiB"), sh("rss-peak-MiB"), sh("heap-MiB"))
	}
	p("\nCPU over the window, in cores (CPU seconds per second). *Waiting* is the\n")
	p("time the process's threads were ready to run but had no CPU (run-queue\n")
	p("wait, /proc/PID/task/*/schedstat), in the same unit: what it wanted\n")
	p("beyond what it got. CPU per probe above is the shard's CPU over its\n")
	p("probes, everything it did in the window included.\n\n")
	wait := func(w float64) string {
		if !f.hasWait {
			return "not measured"
		}
		return fmt.Sprintf("%.2f", w)
	}
	p("| process | CPU | waiting |\n|---|---:|---:|\n")
	p("| kube-apiserver | %.2f | %s |\n| etcd | %.2f | %s |\n| the %d shards together | %.2f | %s |\n",
		f.apiserver, wait(f.apiWait), f.etcd, wait(f.etcdWait), f.shards, f.fleetCPU, wait(f.fleetWait))
	p("| the benchmark process (MCP endpoints, API proxies, client) | %.2f | |\n", f.bench)
	p("| everything else on the machine | %.2f | |\n", f.others)
	p("| the machine: busy share of its %s CPUs | %s | |\n", num(f.cpus), percent(f.busy))
	if f.hasWait {
		p("| the machine: load average (1 min) at the window's end | %.1f | |\n", f.load)
	}
	if nice, ok := r.get(fleetBench, "nice"); ok {
		p("\nThe scenario's processes (envtest's included) inherit the benchmark's\n")
		p("scheduling priority, nice %s; other work on the machine may run at\n", num(nice))
		p("another.\n")
	}
	p("\n")

	p("Targets: every shard keeps ≥ 98%% of its probes on time: worst %s %s;\n", percent1(f.onTime), verdict(f.onTimeOK))
	p("≤ %s McpServer status writes per unchanged probe: worst %.4f %s; each\n", num(fleetWritesGoal), f.writes, verdict(f.wrOK))
	p("shard's RSS is in the table (largest %.1f MiB settled, %.1f MiB at its peak).\n\n", f.rss, f.peak)
	p("An unchanged server's status is written when its lastContactTime is ten\n")
	p("intervals old (docs/architecture.md, Probe): at the tenth probe, so one\n")
	p("write per ten probes is the design, and a shard whose probes come late\n")
	p("reaches that age in fewer of them. The design's figure is the goal\n")
	p("itself, so a write or a probe more or less in one window decides the\n")
	p("verdict; the figure is given to four places for that reason, beside the\n")
	p("writes per server: one per server is one refresh per cycle.\n\n")
	if !f.onTimeOK || !f.wrOK {
		p("**Where the limit is.** %s\n\n", fleetLimit(f))
	}
}

// fleetLimit says, from the window's CPU figures, what held a missed target
// back.
func fleetLimit(f fleetFigures) string {
	ours := f.apiserver + f.etcd + f.fleetCPU + f.bench
	figures := fmt.Sprintf("The machine was %s busy over the window; the kube-apiserver used %.2f cores, etcd %.2f, the shards %.2f together and the benchmark process %.2f, other work on the machine %.2f.",
		percent(f.busy), f.apiserver, f.etcd, f.fleetCPU, f.bench, f.others)
	if f.hasWait {
		figures += fmt.Sprintf(" Meanwhile the kube-apiserver waited %.2f s a second for a CPU, etcd %.2f and the shards %.2f (load average %.1f on %s CPUs).",
			f.apiWait, f.etcdWait, f.fleetWait, f.load, num(f.cpus))
	}
	if f.probes > 0 && f.window > 0 {
		perProbe := f.fleetCPU * f.window / f.probes
		need := f.servers / (f.iv * 1.05) * perProbe
		figures += fmt.Sprintf(" At the %.2f ms of shard CPU a probe took, the schedule needs %.2f cores for the shards.", 1000*perProbe, need)
	}
	switch {
	case f.busy >= 0.9 && f.others > ours:
		waited := ""
		if f.hasWait && f.apiWait+f.etcdWait+f.fleetWait > f.apiserver+f.etcd+f.fleetCPU {
			waited = ", and the scenario's processes spent more time waiting for a CPU than running"
		}
		return figures + " The CPUs were saturated, mostly by work that is not this benchmark's" + waited + ": the limit was the shared machine, not the control plane or the shards, whose own CPU stayed small. The target is not shown on this machine at this load."
	case f.busy >= 0.9:
		top, name := f.apiserver, "the kube-apiserver"
		if f.etcd > top {
			top, name = f.etcd, "etcd"
		}
		if f.fleetCPU > top {
			top, name = f.fleetCPU, "the shards"
		}
		if f.bench > top {
			name = "the benchmark process"
		}
		return figures + fmt.Sprintf(" The CPUs were saturated and %s used the most of them: that was the limit.", name)
	default:
		return figures + " The CPUs were not saturated: the limit is not CPU, and neither the control plane nor the shards ran out of it."
	}
}
