package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/test/bench/soakstat"
)

// soakRun is a 20-minute soak sampled every minute: a flat gateway heap,
// a controllers' resident set that grows 1 MiB a minute, no failed call
// and a burst of reconcile errors in the third bucket.
func soakRun() *soakstat.Results {
	res := &soakstat.Results{
		Date: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), Machine: "a CPU, 2 cores", Go: "go1.26",
		Duration: 1200, Warmup: 120, Sample: 60, Bucket: 300,
		Setup: soakstat.Setup{Replicas: 2, SteadyUpstreams: 2, FlapUpstreams: 2, FlapPeriod: 120, FlapDown: 30,
			ChurnPeriod: 120, ImportInterval: 60, AgentsPerEra: 1, AgentPause: 0.25, ApprovalEvery: 10,
			Calls: 4000, Approvals: 400, Flaps: 20, Reapprovals: 18},
	}
	heap := soakstat.Series{Process: "gateway-0", Metric: "heap"}
	rss := soakstat.Series{Process: "controllers", Metric: "rss"}
	calls := soakstat.Count{Name: "agents: calls failed", Errors: true}
	recErrs := soakstat.Count{Name: "controllers: reconcile errors", Errors: true}
	imports := soakstat.Count{Name: "controllers: imports"}
	for i := 0; i <= 20; i++ {
		t := float64(60 * i)
		heap.T, heap.V = append(heap.T, t), append(heap.V, 20+float64(i%2))
		rss.T, rss.V = append(rss.T, t), append(rss.V, 60+float64(i))
		calls.T, calls.V = append(calls.T, t), append(calls.V, 0)
		e := 0.0
		if i >= 12 {
			e = 30
		}
		recErrs.T, recErrs.V = append(recErrs.T, t), append(recErrs.V, e)
		imports.T, imports.V = append(imports.T, t), append(imports.V, float64(4*i))
	}
	anon := rss
	anon.Metric = "rss-anon"
	res.Series = []soakstat.Series{heap, rss, anon}
	res.Counts = []soakstat.Count{calls, recErrs, imports}
	return res
}

func renderSoak(res *soakstat.Results) string {
	var b strings.Builder
	soakSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, res, "test/bench/testdata/soak.json")
	return b.String()
}

func TestSoakSectionJudgesEverySeriesAndBucket(t *testing.T) {
	got := renderSoak(soakRun())
	for _, want := range []string{
		soakHeading + soakBegin,
		"started 2026-12-07 12:00 UTC (SOAK_DURATION=20m0s)",
		"4000 calls answered, 400 approvals decided, 20 flaps,",
		"The first 2m0s (a tenth of the run) is warm-up, sampled",
		"| gateway-0 | Go heap in use | 20.5 MiB |",
		"| flat |",
		"| controllers | resident set | 71.0 MiB | +60.00 MiB/h | +18.00 MiB |",
		"| controllers | resident set, anonymous | 71.0 MiB |",
		"and its anonymous part `RssAnon`: the rest is file pages",
		"| **rising** |",
		"| counter | 5m0s | 10m0s | 15m0s | 20m0s | spike |",
		"| agents: calls failed | 0 | 0 | 0 | 0 | none |",
		"| controllers: reconcile errors | 0 | 0 | 30 | 0 | **bucket 3** |",
		"| controllers: imports | 20 | 20 | 20 | 20 | (events) |",
		"Rising beyond noise: controllers resident set; controllers resident set, anonymous. No error spike: **no**.",
		soakEnd,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if got := renderSoak(nil); !strings.Contains(got, "No soak recorded yet: `make soak` runs one and writes `test/bench/testdata/soak.json`.") {
		t.Errorf("without results: %s", got)
	}
}

// TestSoakOnlyRewritesItsSection: `make soak` rewrites the soak's section
// of a report `make bench` wrote and leaves every other byte alone, and a
// report without the section gets it before the controller targets.
func TestSoakOnlyRewritesItsSection(t *testing.T) {
	before := "# Benchmarks\n\n## 11. A fleet\n\nfleet figures\n\n"
	after := "## Controller scale targets\n\ntargets\n"
	doc := before + renderSoak(nil) + after
	got, err := replaceSoak(doc, soakRun(), "test/bench/testdata/soak.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := before + renderSoak(soakRun()) + after; got != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	got, err = replaceSoak(before+after, soakRun(), "test/bench/testdata/soak.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := before + renderSoak(soakRun()) + after; got != want {
		t.Errorf("inserted:\n%s\nwant:\n%s", got, want)
	}
	if _, err := replaceSoak(before+soakHeading+soakBegin+"cut short", soakRun(), "x"); err == nil {
		t.Error("a section without its end marker was rewritten")
	}
}

// TestTheCommittedSoakIsRendered: the results file `make soak` commits is
// read and rendered by the full report, as `make bench` writes it, and
// the committed docs/benchmarks.md holds that rendering.
func TestTheCommittedSoakIsRendered(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	path := "test/bench/testdata/soak.json"
	res, err := readSoak(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if res == nil {
		t.Skip("no soak committed yet")
	}
	var b strings.Builder
	write(&b, results{}, res, path, 0, "images/gateway-cost.svg")
	section := renderSoak(res) // with the same path
	if !strings.Contains(b.String(), section) {
		t.Error("the full report does not hold the soak's section")
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), section) {
		t.Error("docs/benchmarks.md does not hold the committed soak's section: run `go run ./test/bench/report -soak-only`")
	}
}
