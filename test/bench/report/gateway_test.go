package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// gatewayRun is benchmark output of the gateway's era mode, cost, flood
// and sessions scenarios: the 2025-11-25 era misses its CPU target, the
// discover request its bytes, and the flood its latency.
func gatewayRun() string {
	var b strings.Builder
	b.WriteString("BenchmarkGateway-2 1 1 ns/op 0.40 c1-added-p50-ms 0.70 c1-era2025-added-p50-ms 0.20 c1-direct-p50-ms 0.30 c1-era2025-direct-p50-ms " +
		"220 c64-gateway-cpu-us/call 400 c64-direct-agent-cpu-us/call 500 c64-era2025-gateway-cpu-us/call 700 c64-era2025-direct-agent-cpu-us/call " +
		"0.91 c64-throughput-ratio 0.85 c64-era2025-throughput-ratio 0.8 c64-era2025-throughput-ratio-min 0.9 c64-era2025-throughput-ratio-max\n")
	for _, t := range []string{"1000", "10000"} {
		for _, era := range []string{eraModern, eraInitialize} {
			fmt.Fprintf(&b, "BenchmarkGatewayList/tools=%s/era=%s-2 50 4400000 ns/op 0.13 alloc-bytes/served-byte 3300000 served-bytes 5000 cpu-us/list\n", t, era)
		}
	}
	for _, size := range []int{10, 100, 1000, 10000} {
		grow := 1.0
		if size == 10000 {
			grow = 1.5 // the modern call grows
		}
		fmt.Fprintf(&b, "BenchmarkGatewayCost/tools=%d/era=2026-07-28/op=call-2 2000 1000000 ns/op %.0f alloc-bytes/req %.0f cpu-us/req\n", size, 45000*grow, 400.0)
		fmt.Fprintf(&b, "BenchmarkGatewayCost/tools=%d/era=2026-07-28/op=discover-2 4000 600000 ns/op 472000 alloc-bytes/req 590 cpu-us/req\n", size)
		fmt.Fprintf(&b, "BenchmarkGatewayCost/tools=%d/era=2025-11-25/op=call-2 2000 1000000 ns/op 42000 alloc-bytes/req 380 cpu-us/req\n", size)
		fmt.Fprintf(&b, "BenchmarkGatewayCost/tools=%d/era=2025-11-25/op=ping-2 18000 120000 ns/op 14600 alloc-bytes/req 120 cpu-us/req\n", size)
	}
	b.WriteString("BenchmarkGatewayCost/direct/era=2025-11-25/op=ping-2 18000 120000 ns/op 4900 alloc-bytes/req 110 cpu-us/req\n")
	b.WriteString("BenchmarkGatewayFlood-2 1 1 ns/op 9.15 list-MiB 256 gateway-memory-limit-MiB 16 flood-connections 4 flood-agents 30 quiet-calls " +
		"5.1 quiet-alone-p50-ms 7.5 quiet-alone-p95-ms 20.4 quiet-flood-p50-ms 30 quiet-flood-p95-ms 4.0 quiet-flood/alone-p50 0 quiet-failed " +
		"3.4 flood-lists/s 535 flood-refused/s 31 flood-MiB/s 0.12 gateway-cpu-cores 156 gateway-rss-before-MiB 188 gateway-rss-after-MiB 202.5 gateway-rss-peak-MiB 30 gateway-heap-MiB 15.6 load-avg-1m\n")
	b.WriteString("BenchmarkGatewaySessions-2 1 1 ns/op 10000 sessions -0.04 shared-heap-KiB/session 0 shared-stack-KiB/session 8.3 shared-rss-KiB/session 0 shared-connections-held 950 shared-sessions/s " +
		"9.8 own-heap-KiB/session 8 own-stack-KiB/session 23.4 own-rss-KiB/session 10000 own-connections-held 685 own-sessions/s\n")
	return b.String()
}

func renderGateway(t *testing.T, out string) (string, results) {
	t.Helper()
	r := results{}
	r.parse(strings.NewReader(out))
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	gatewayListSection(p, r)
	gatewayErasSection(p, r)
	gatewayCostSection(p, r, "images/gateway-cost.svg")
	gatewayFloodSection(p, r)
	gatewaySessionsSection(p, r)
	return b.String(), r
}

func TestGatewayErasCostFloodAndSessions(t *testing.T) {
	got, r := renderGateway(t, gatewayRun())
	for _, want := range []string{
		"| 10000 | 2025-11-25 | 3.15 MiB | 0.13 |",
		"| gateway CPU per call ≤ 0.6× the agents' and upstream's of a direct call (64 agents) | 0.55× **met** | 0.71× **missed** |",
		"| p50 added latency ≤ 0.5 ms (one agent) | 0.40 ms **met** | 0.70 ms **missed** |",
		"| 460.9 KiB **missed** | 14.3 KiB **met** |",
		"| a tools/list allocates ≤ 2× the bytes it serves (the larger of 1,000 and 10,000 tools) | 0.13 **met** | 0.13 **met** |",
		"A server/discover is not one of the requests the front door answers",
		"| gateway ÷ direct throughput, 64 agents | 91% | 85% (80–90%) |",
		"![Bytes allocated and CPU per request against the caller's catalog size, per era](images/gateway-cost.svg)",
		"| direct (the client alone) | - | - | - | 4.8 KiB, 110 µs |",
		"| 10,000 | 65.9 KiB, 400 µs | 41.0 KiB, 380 µs | 460.9 KiB, 590 µs | 14.3 KiB, 120 µs |",
		"| tools/call, 2026-07-28 | 1.50× **grows** | 1.00× **flat** |",
		"| ping, 2025-11-25 | 1.00× **flat** | 1.00× **flat** |",
		"Targets: B's p50 during the flood ≤ 3× its p50 alone: 4.00× **missed**; none of B's calls failed: 0 **met**; the gateway's peak RSS within its 256 MiB: 202.5 MiB **met**.",
		"| A's lists answered a second (MiB a second) | 3.4 (31.0) |",
		"each on its own connection 23.4 KiB of resident set **missed** (17.8 KiB held in heap and stacks); the sessions alone 0.0 KiB held **met**.",
		"| connections the gateway held open for them | 0 | 10000 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}

	// The plot is well-formed SVG with a line per series and a marker per
	// catalog size.
	svg := costPlot(r)
	dec := xml.NewDecoder(strings.NewReader(svg))
	counts := map[string]int{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the plot is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
	// Two panels of four series; markers at four sizes each.
	if counts["svg"] != 1 || counts["polyline"] != 8 || counts["circle"] != 32 {
		t.Errorf("the plot has %v, want 1 svg, 8 polylines and 32 circles", counts)
	}
	if !strings.Contains(svg, "ping target, 64 KiB") || !strings.Contains(svg, "10,000") {
		t.Errorf("the plot lacks the target line or the axis labels:\n%s", svg)
	}
}

func TestGatewaySectionsNotMeasured(t *testing.T) {
	got, r := renderGateway(t, "")
	for _, want := range []string{
		"### What a tools/list costs the gateway\n\nNot measured",
		"### Each era agents speak\n\nNot measured",
		"### A request's cost against the caller's catalog\n\nNot measured",
		"### One namespace's flood beside another's agent\n\nNot measured",
		"### Idle sessions\n\nNot measured",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if costPlot(r) != "" {
		t.Error("a plot was drawn without the cost scenario's figures")
	}
}

func TestOAuthIdentifySection(t *testing.T) {
	section := func(out string) string {
		r := results{}
		r.parse(strings.NewReader(out))
		var b strings.Builder
		oauthSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, r)
		return b.String()
	}
	line := func(cpu, during string) string {
		return "BenchmarkOAuthIdentify-2 50000 14000 ns/op " + cpu + " cpu-ns/op " + during + " idp-requests 2.000 idp-requests-first 3995 B/op 38 allocs/op\n"
	}
	got := section(line("12450", "0") + line("13263", "0") + line("13437", "0"))
	for _, want := range []string{
		"| 13.26 µs | 14.00 µs | 3995 | 38 | 2 | 0 |",
		"≤ 20 µs of CPU per request: 13.26 µs **met**",
		"after the first: 0 **met**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	// One run that asked the provider is a miss, whatever the median.
	got = section(line("12450", "0") + line("21000", "1") + line("23000", "0"))
	for _, want := range []string{"21.00 µs **missed**", "after the first: 1 **missed**"} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if got := section(""); !strings.Contains(got, "Not measured.") {
		t.Errorf("without the benchmark: %s", got)
	}
}

// The typed-result section gives each path and era its figures, and
// judges the gateway's own path in each era against the target.
func TestGatewayTypedSection(t *testing.T) {
	var in strings.Builder
	for _, row := range []struct {
		path, era string
		gc        int
		peak      float64
	}{
		{"gateway", eraModern, 1, 1.6}, {"gateway", eraModern, 100, 4.1}, {"gateway", eraInitialize, 1, 2.4}, {"gateway", eraInitialize, 100, 4.4},
		{"sdk", eraModern, 1, 5.2}, {"sdk", eraInitialize, 1, 5.1},
	} {
		fmt.Fprintf(&in, "BenchmarkGatewayTypedResult/path=%s/era=%s/gc=%d-2 24 1 ns/op 16.1 alloc-MiB/call 3.22 alloc-x 6.667 answer-MiB %.2f peak-MiB/call %.2f peak-x\n",
			row.path, row.era, row.gc, row.peak*5, row.peak)
	}
	r := results{}
	r.parse(strings.NewReader(in.String()))
	var b strings.Builder
	gatewayTypedSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, r)
	got := b.String()
	for _, want := range []string{
		"| gateway | 2026-07-28 | 16.1 MiB, 3.22× | 8.0 MiB, 1.60× | 20.5 MiB, 4.10× |",
		"| SDK | 2025-11-25 | 16.1 MiB, 3.22× | 25.5 MiB, 5.10× | - |",
		"is 6.67 MiB",
		"2026-07-28 1.60× **met**; 2025-11-25 2.40× **missed**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	b.Reset()
	gatewayTypedSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, results{})
	if !strings.Contains(b.String(), "Not measured") {
		t.Errorf("unmeasured: %s", b.String())
	}
}

// The large-arguments section gives each kind of arguments and era its
// figures, and says whether the upstream received them intact.
func TestGatewayArgsSection(t *testing.T) {
	var in strings.Builder
	for _, row := range []struct {
		kind, era   string
		gc          int
		alloc, peak float64
	}{
		{"plain", eraModern, 1, 1.9, 2.73}, {"plain", eraModern, 100, 1.86, 6.39}, {"plain", eraInitialize, 1, 1.89, 2.28},
		{"unsorted", eraInitialize, 1, 11.77, 4.78}, {"unsorted", eraInitialize, 100, 7.61, 9.07},
	} {
		fmt.Fprintf(&in, "BenchmarkGatewayLargeArguments/args=%s/era=%s/gc=%d-2 20 27215826 ns/op %.3f alloc-MiB/call %.3f alloc-x 900.0 args-KiB %.3f peak-MiB/call %.3f peak-x 1.000 received-intact 808.6 string-KiB\n",
			row.kind, row.era, row.gc, row.alloc, row.alloc*1024/900, row.peak, row.peak*1024/900)
	}
	r := results{}
	r.parse(strings.NewReader(in.String()))
	var b strings.Builder
	gatewayArgsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, r)
	got := b.String()
	for _, want := range []string{
		"### A call carrying large arguments",
		"carry one string, 900 KiB of arguments",
		"| plain | 2026-07-28 | 1.90 MiB, 2.16× | 2.73 MiB, 3.11× | 6.39 MiB, 7.27× | yes |",
		"| plain | 2025-11-25 | 1.89 MiB, 2.15× | 2.28 MiB, 2.59× | - | yes |",
		"| unsorted | 2025-11-25 | 11.77 MiB, 13.39× | 4.78 MiB, 5.44× | 9.07 MiB, 10.32× | yes |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| escaped |") || strings.Contains(got, "target") {
		t.Errorf("a kind not measured, or a target, was reported:\n%s", got)
	}
	b.Reset()
	gatewayArgsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, results{})
	if !strings.Contains(b.String(), "### A call carrying large arguments\n\nNot measured") {
		t.Errorf("unmeasured: %s", b.String())
	}
}
