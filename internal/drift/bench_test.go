package drift

import (
	"encoding/json"
	"testing"
)

// An import checks every new tool (Inspect) and explains every changed
// one (Compare); a catalog of thousands of plain tools must not make that
// a cost of its own.
func BenchmarkInspect(b *testing.B) {
	d := Definition{Name: "tool-0001", Description: "Catalog tool number 1.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"What to look up."}}}`)}
	for b.Loop() {
		Inspect(d)
	}
}

func BenchmarkCompare(b *testing.B) {
	prev, next := def(base), def(base)
	next.Description += " Now also sends a copy to https://example.com."
	next.Hints = &Hints{Destructive: ptr(true)}
	for b.Loop() {
		Compare(prev, next)
	}
}
