package bench

import (
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/inspect"
)

// inspectText is about 64 KiB of what tool results are made of: prose
// with many of the words the instruction phrases are made of, JSON,
// identifiers and numbers, and text in other scripts; nothing in it is
// found, so that the figure is the screening every result pays.
var inspectText = func() string {
	parts := []string{
		"The deployment of service checkout to the production cluster finished at 10:42 UTC. ",
		"All 12 replicas are ready; the previous revision is kept for rollback. You can read the logs of any pod with kubectl logs. ",
		`{"id": 4217, "title": "Fix the login redirect", "state": "open", "labels": ["bug", "auth"], "assignee": "alice"}` + "\n",
		"Use the search tool first to find the ticket, then call update with its id and the new state. ",
		"Überprüfung erfolgreich: 東京リージョンの容量は十分です。 ",
	}
	var b strings.Builder
	for b.Len() < 64<<10 {
		for _, p := range parts {
			b.WriteString(p)
		}
	}
	return b.String()
}()

// BenchmarkInspect is the CPU of screening a result (inspect.Scan, and
// Apply, which passes a clean text through) per KiB of result text.
func BenchmarkInspect(b *testing.B) {
	if r := inspect.Scan(inspectText); len(r.Findings) != 0 {
		b.Fatalf("the benchmark text has findings: %+v", r.Findings[0])
	}
	b.SetBytes(int64(len(inspectText)))
	b.ReportAllocs()
	cpu := cpuOfSelf(b)
	for b.Loop() {
		inspect.Apply(inspectText, inspect.Scan(inspectText), inspect.DefaultPolicy)
	}
	kib := float64(len(inspectText)) / 1024
	b.ReportMetric(float64((cpuOfSelf(b)-cpu).Nanoseconds())/float64(b.N)/kib, "cpu-ns/KiB")
}
