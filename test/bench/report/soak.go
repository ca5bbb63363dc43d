package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-catalog/operator/test/bench/soakstat"
)

// The soak's section sits between these lines, so that `make soak` can
// rewrite it in a file `make bench` wrote, and `make bench` renders it
// from the same results file.
const (
	soakBegin = "<!-- soak:begin -->\n"
	soakEnd   = "<!-- soak:end -->\n"
	// soakHeading is the section's title, written before soakBegin.
	soakHeading = "## 12. A soak (envtest)\n\n"
)

// readSoak reads a soak's results; a missing file is no soak (nil).
func readSoak(path string) (*soakstat.Results, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var res soakstat.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

// soakSection writes the soak's section, heading and markers included.
func soakSection(p printer, res *soakstat.Results, path string) {
	p("%s%s", soakHeading, soakBegin)
	soakBody(p, res, path)
	p("%s\n", soakEnd)
}

// replaceSoak puts the soak's section, rendered from res, in doc: in place
// of the one there, or before the controller scale targets if there is
// none.
func replaceSoak(doc string, res *soakstat.Results, path string) (string, error) {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	if i := strings.Index(doc, soakBegin); i >= 0 {
		j := strings.Index(doc[i:], soakEnd)
		if j < 0 {
			return "", errors.New("the soak section has no end marker")
		}
		soakBody(p, res, path)
		return doc[:i+len(soakBegin)] + b.String() + doc[i+j:], nil
	}
	at := strings.Index(doc, "## Controller scale targets")
	if at < 0 {
		return "", errors.New("no soak section and no \"## Controller scale targets\" to put one before")
	}
	soakSection(p, res, path)
	return doc[:at] + b.String() + doc[at:], nil
}

func soakBody(p printer, res *soakstat.Results, path string) {
	if res == nil {
		p("No soak recorded yet: `make soak` runs one and writes `%s`.\n\n", path)
		return
	}
	s := res.Setup
	dur := res.Duration.D()
	p("Rendered from `%s`, which `make soak` wrote for a run\n", path)
	p("started %s (SOAK_DURATION=%s); `make bench` renders the same file\n", res.Date.Format("2006-01-02 15:04 MST"), dur)
	p("again and `make soak` rewrites only this section.\n")
	p("Machine: %s; %s.\n\n", res.Machine, res.Go)
	p("For %s: the controllers as one process and %d gateway replicas, each the\n", dur, s.Replicas)
	p("manager binary as the chart runs it, against one envtest control plane;\n")
	p("%d steady and %d flapping upstream MCP servers, each a process of its own\n", s.SteadyUpstreams, s.FlapUpstreams)
	p("(a flapping one is killed for %s in every %s, staggered, so its probes flip\n", s.FlapDown.D(), s.FlapPeriod.D())
	p("Reachable and Ready both ways); every upstream's catalog changes every %s\n", s.ChurnPeriod.D())
	p("(one enabled tool's description, one tool added and one removed), found by\n")
	p("imports every %s and on a flapping server's return. Agents, go-sdk clients,\n", s.ImportInterval.D())
	p("%d per protocol era (2025-11-25 and 2026-07-28) on each replica, call an echo\n", s.AgentsPerEra)
	if s.ApprovalPeriod > 0 {
		p("tool one call after another with %s between, and once every %s a tool\n", s.AgentPause.D(), s.ApprovalPeriod.D())
	} else {
		p("tool one call after another with %s between; every %s call is of a tool\n", s.AgentPause.D(), ordinal(s.ApprovalEvery))
	}
	p("that needs approval, which a person (another user, through the admission\n")
	p("policy of `config/policy`) approves; the same person re-approves each drifted\n")
	p("definition. Over the run: %d calls answered, %d approvals decided, %d flaps,\n", s.Calls, s.Approvals, s.Flaps)
	p("%d drifted definitions re-approved.\n\n", s.Reapprovals)

	p("Every %s, each process's resident set (`VmRSS` of `/proc/PID/status`", res.Sample.D())
	if hasMetric(res, "rss-anon") {
		p(",\nand its anonymous part `RssAnon`: the rest is file pages, nearly all\n")
		p("the binary's code, paged in as code paths first run")
	}
	p(") and,\n")
	p("from its metrics, Go heap in use (`go_memstats_heap_inuse_bytes`) and\n")
	p("goroutines (`go_goroutines`) are sampled")
	if hasMetric(res, "go-held") {
		p(", and where the rest of a Go process's memory\n")
		p("sits: heap idle and kept from the kernel (`heap_idle` less `heap_released`),\n")
		p("goroutine stacks (`stack_inuse`), the runtime's own structures (`sys` less\n")
		p("`heap_sys` and `stack_sys`), all it holds from the kernel (`sys` less\n")
		p("`heap_released`) and, where sampled, the heap goal (`next_gc`)")
	}
	p("; kube-apiserver and etcd by their\n")
	p("resident set only; the flapping upstreams not at all (each lives at most one\n")
	p("flap period). The first %s (a tenth of the run) is warm-up, sampled\n", res.Warmup.D())
	p("but not fitted. A series is **flat** when the growth its\n")
	p("least-squares line makes over the fitted window is within noise:\n")
	p("|slope × window| ≤ max(%g × the residual standard deviation around the\n", soakstat.FlatNoiseK)
	p("line, %g%% of the mean); **rising** when it grows by more, as a leak\n", 100*soakstat.FlatMeanFraction)
	p("would; falling when it shrinks by more. The residual term is what the\n")
	p("series' own scatter (a collected heap's saw, requests in flight) hides; the mean term\n")
	p("keeps a series without scatter from being called growing for one more\n")
	p("goroutine. A growth smaller than the bound is not detected by a run of\n")
	p("this length: the table shows both, so what was ruled out can be read off.\n\n")

	p("| process | metric | mean | slope per hour | growth over the window | bound | verdict |\n")
	p("|---|---|---:|---:|---:|---:|---|\n")
	var rising []string
	for _, sr := range res.Series {
		f := soakstat.Analyse(sr, float64(res.Warmup))
		unit := " MiB"
		if sr.Metric == "goroutines" {
			unit = ""
		}
		flat := "flat"
		switch {
		case f.Rising:
			flat = "**rising**"
			rising = append(rising, sr.Process+" "+metricName(sr.Metric))
		case !f.Flat:
			flat = "falling"
		}
		p("| %s | %s | %.1f%s | %+.2f%s/h | %+.2f%s | %.2f%s | %s |\n", sr.Process, metricName(sr.Metric),
			f.Mean, unit, f.SlopePerHour, unit, f.Growth, unit, f.Bound, unit, flat)
	}
	p("\n")
	explained := soakRetention(p, res)

	n := int(math.Ceil(float64(res.Duration)/float64(res.Bucket) - 1e-9))
	p("Counts per %s bucket (errors are judged for a spike: a bucket more than\n", res.Bucket.D())
	p("%g × √max(m, 1) above the mean m of the other buckets; the rest are\n", soakstat.SpikeK)
	p("events, shown for what the run did):\n\n")
	p("| counter |")
	for k := range n {
		p(" %s |", (time.Duration(k+1) * res.Bucket.D()).Round(time.Second))
	}
	p(" spike |\n|---|")
	for range n {
		p("---:|")
	}
	p("---|\n")
	noSpike := true
	for _, c := range res.Counts {
		bk := soakstat.Buckets(c, float64(res.Bucket), float64(res.Duration))
		p("| %s |", c.Name)
		for _, v := range bk {
			p(" %s |", num(v))
		}
		switch spikes := soakstat.Spikes(bk); {
		case !c.Errors:
			p(" (events) |\n")
		case len(spikes) == 0:
			p(" none |\n")
		default:
			noSpike = false
			var at []string
			for _, i := range spikes {
				at = append(at, fmt.Sprintf("bucket %d", i+1))
			}
			p(" **%s** |\n", strings.Join(at, ", "))
		}
	}
	p("\n")
	if len(rising) == 0 {
		p("No series rising beyond its noise. ")
	} else {
		p("Rising beyond noise: %s. ", strings.Join(rising, "; "))
	}
	if len(explained) > 0 {
		p("Of the Go processes whose resident set rose, %s hold no more than the largest heap they reached, or than after warm-up (the table above the counts). ", strings.Join(explained, ", "))
	}
	p("No error spike: %s.\n\n", yesNo(noSpike))
}

// soakRetention writes, for each Go process whose runtime's holdings were
// sampled, how its memory compares with the largest heap it reached
// (soakstat.Retained), and returns those whose held memory that explains:
// heap in use flat, and held within the heap's own scatter of its largest
// heap plus the runtime's structures and stacks throughout.
func soakRetention(p printer, res *soakstat.Results) []string {
	by := map[string]map[string]soakstat.Series{}
	var order []string
	for _, s := range res.Series {
		if by[s.Process] == nil {
			by[s.Process] = map[string]soakstat.Series{}
			order = append(order, s.Process)
		}
		by[s.Process][s.Metric] = s
	}
	var explained []string
	header := false
	for _, proc := range order {
		m := by[proc]
		heap, ok1 := m["heap"]
		held, ok2 := m["go-held"]
		other, ok3 := m["runtime-other"]
		stacks, ok4 := m["stacks"]
		anon, ok5 := m["rss-anon"]
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			continue
		}
		if !header {
			p("Where a Go process's memory went: what its runtime holds from the kernel\n")
			p("against what it would hold if it kept the largest heap it reached (the\n")
			p("running maximum of the sampled heap in use, plus the runtime's structures\n")
			p("and stacks). The runtime gives idle heap back to the kernel only above\n")
			p("its heap goal (GOGC, and GOMEMLIMIT as the chart sets it), so a heap that\n")
			p("reaches a new peak now and then leaves the process holding more after\n")
			p("each, and no more after that: a step up that stays, not a leak. A gap\n")
			p("within the heap's own scatter (its residual around its line) reads as\n")
			p("kept; samples every %s miss peaks between them.\n\n", res.Sample.D())
			p("| process | resident set, anonymous: growth | all the runtime holds: growth | largest heap reached: growth | largest gap | heap in use | reading |\n")
			p("|---|---:|---:|---:|---:|---|---|\n")
			header = true
		}
		w := float64(res.Warmup)
		fa, fh, fheap := soakstat.Analyse(anon, w), soakstat.Analyse(held, w), soakstat.Analyse(heap, w)
		r := soakstat.Retained(heap, other, stacks, held, w)
		heapState := "flat"
		switch {
		case fheap.Rising:
			heapState = "**rising**"
		case !fheap.Flat:
			heapState = "falling"
		}
		var reading string
		switch {
		case !fh.Rising:
			// Its resident set can still grow, into memory the runtime
			// already held and touches for the first time.
			reading = "holds no more than after warm-up"
		case fheap.Rising:
			reading = "heap in use rising"
		case r.Samples > 0 && r.Gap <= fheap.Residual:
			reading = "keeps its largest heap"
		default:
			reading = "**not explained** by its largest heap"
		}
		if (fa.Rising || fh.Rising) && !fheap.Rising && !strings.HasPrefix(reading, "**") {
			explained = append(explained, proc)
		}
		p("| %s | %+.2f MiB | %+.2f MiB | %+.2f MiB | %.2f MiB (scatter %.2f) | %s | %s |\n", proc, fa.Growth, fh.Growth, r.PeakGrowth, r.Gap, fheap.Residual, heapState, reading)
	}
	if header {
		p("\n")
	}
	return explained
}

// hasMetric reports whether any series of res is of metric m (older
// results lack some).
func hasMetric(res *soakstat.Results, m string) bool {
	for _, s := range res.Series {
		if s.Metric == m {
			return true
		}
	}
	return false
}

func metricName(m string) string {
	switch m {
	case "rss":
		return "resident set"
	case "rss-anon":
		return "resident set, anonymous"
	case "heap":
		return "Go heap in use"
	case "heap-kept":
		return "Go heap idle, kept from the kernel"
	case "stacks":
		return "goroutine stacks"
	case "runtime-other":
		return "Go runtime's own structures"
	case "go-held":
		return "all the Go runtime holds from the kernel"
	case "heap-goal":
		return "Go heap goal (next collection)"
	}
	return m
}

// ordinal is n as "10th", "2nd".
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

func yesNo(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "**no**"
}
