package main

import (
	"fmt"
	"strings"
	"testing"
)

// fleetRun is benchmark output of the fleet scenario with two shards, the
// east shard's probes late and its writes per probe above the goal.
func fleetRun(busy, defaultCores string) string {
	return "BenchmarkScaleFleet-2 1 1 ns/op 0.30 apiserver-cores 0.05 etcd-cores 0.05 bench-process-cores " +
		"0.80 apiserver-runq-wait 0.10 etcd-runq-wait 18.5 machine-load1 19 nice " +
		busy + " machine-busy 2 machine-cpus 3000 servers 30 interval-s 315 window-s 2 shards " +
		"1500 shard-default-servers 0.99 shard-default-on-time/scheduled 0.100 shard-default-writes/probe 50 shard-default-rss-MiB 60 shard-default-rss-peak-MiB " + defaultCores + " shard-default-cores 0.40 shard-default-runq-wait 1000 shard-default-probes 1500 shard-default-status-writes " +
		"1500 shard-east-servers 0.90 shard-east-on-time/scheduled 0.120 shard-east-writes/probe 55 shard-east-rss-MiB 70 shard-east-rss-peak-MiB 0.05 shard-east-cores 0.30 shard-east-runq-wait 900 shard-east-probes\n"
}

func render(t *testing.T, out string) string {
	t.Helper()
	r := results{}
	r.parse(strings.NewReader(out))
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	fleetSection(p, r)
	targetsSection(p, r)
	return b.String()
}

func TestFleetReportsTheWorstShardAndTheLimit(t *testing.T) {
	// The machine saturated, the fleet's own processes using 0.5 of its
	// 2 cores: other work held it back.
	got := render(t, fleetRun("1.0", "0.05"))
	for _, want := range []string{
		"| default | 1500 |",
		"| east | 1500 |",
		"| 1500 (0.1000; 1.000) |",
		"worst 90.0% **missed**",
		"worst 0.1200 **missed**",
		"largest 55.0 MiB settled, 70.0 MiB at its peak",
		"| fleet of 3000 servers at 30 s across 2 shards: probes on time / scheduled, worst shard | ≥ 0.98 | 0.90 | **missed** |",
		"| fleet of 3000 servers at 30 s across 2 shards: each shard's RSS, largest shard settled / at its peak | reported | 55.0 / 70.0 MiB | |",
		"other work on the machine 1.50",
		"the limit was the shared machine",
		"the kube-apiserver waited 0.80 s a second for a CPU, etcd 0.10 and the shards 0.70 (load average 18.5 on 2 CPUs)",
		"At the 16.58 ms of shard CPU a probe took, the schedule needs 1.58 cores for the shards.",
		"| kube-apiserver | 0.30 | 0.80 |",
		"scheduling priority, nice 19;",
		"the scenario's processes spent more time waiting for a CPU than running",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	// The machine saturated by the fleet's own processes: the largest of
	// them is named.
	got = render(t, fleetRun("1.0", "1.20"))
	if !strings.Contains(got, "the shards used the most of them") {
		t.Errorf("the report does not name the shards as the limit:\n%s", got)
	}
	// CPU to spare: the limit is not CPU.
	got = render(t, fleetRun("0.5", "0.05"))
	if !strings.Contains(got, "The CPUs were not saturated") {
		t.Errorf("the report does not say the CPUs had room:\n%s", got)
	}
}

func TestFleetNotMeasured(t *testing.T) {
	got := render(t, "")
	if !strings.Contains(got, "## 11. A fleet across shards (envtest)\n\nNot measured") ||
		!strings.Contains(got, "| fleet across shards: each shard's RSS | reported | not measured | |") {
		t.Errorf("an absent fleet run is not reported as not measured:\n%s", got)
	}
}
