package bench

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
)

// mailSchema is the input schema of a mail-sending tool, as an importer
// stores it.
const mailSchema = `{"type":"object","properties":{
	"from":{"type":"string","description":"Sender address."},
	"to":{"type":"array","items":{"type":"string"},"description":"Recipients."},
	"cc":{"type":"array","items":{"type":"string"},"description":"Copies."},
	"subject":{"type":"string","description":"Subject line."},
	"body":{"type":"string","description":"Plain-text body."}
},"required":["from","to","subject","body"]}`

// mailRules are five rules of the kind a platform team writes for such a
// tool, and the sender the gateway fixes.
var mailRules = &mcpv1alpha1.ArgumentRules{
	Fixed: []mcpv1alpha1.FixedArgument{{Name: "from", Value: `"agents@example.com"`}},
	Rules: []mcpv1alpha1.ArgumentRule{
		{Name: "to-domain", Expression: `args.to.all(r, r.endsWith('@example.com'))`},
		{Name: "few-recipients", Expression: `args.to.size() + (has(args.cc) ? args.cc.size() : 0) <= 10`},
		{Name: "cc-domain", Expression: `!has(args.cc) || args.cc.all(r, r.endsWith('@example.com'))`},
		{Name: "subject", Expression: `args.subject.size() <= 200 && !args.subject.lowerAscii().contains('password')`},
		{Name: "body-size", Expression: `args.body.size() <= 65536`},
	},
}

// mailArguments are one call's arguments as the gateway decodes them
// (numbers would be json.Number): three recipients, one copy, a 1 KiB body.
func mailArguments(b *testing.B) map[string]any {
	var m map[string]any
	raw, _ := json.Marshal(map[string]any{
		"to":      []string{"ana@example.com", "bo@example.com", "cy@example.com"},
		"cc":      []string{"team@example.com"},
		"subject": "Weekly report",
		"body":    strings.Repeat("All systems nominal. ", 50),
	})
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkArgumentRules is what the gateway's rules stage spends on one
// call of a tool with five rules and a fixed argument (apply: the fixed
// argument set, the arguments converted for CEL once, the five programs
// evaluated within their cost limits: without tracking, since each rule's
// bound shows this call cannot reach its limit), against the same stage
// for a tool without rules (none), and what compiling the five costs,
// once per version of the tool (compile).
func BenchmarkArgumentRules(b *testing.B) {
	schema := []byte(mailSchema)
	b.Run("compile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := argrules.Compile(schema, argrules.Layer{Rules: mailRules}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name  string
		rules *mcpv1alpha1.ArgumentRules
	}{{"none", nil}, {"apply", mailRules}} {
		b.Run(c.name, func(b *testing.B) {
			p, err := argrules.Compile(schema, argrules.Layer{Rules: c.rules})
			if err != nil {
				b.Fatal(err)
			}
			args := mailArguments(b)
			b.ReportAllocs()
			cpu := cpuOfSelf(b)
			for b.Loop() {
				if _, refused := p.Apply(args); refused != nil {
					b.Fatalf("refused: %s", refused.Text())
				}
			}
			b.ReportMetric(float64((cpuOfSelf(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if c.rules != nil {
				b.ReportMetric(float64(len(c.rules.Rules)), "rules")
			}
		})
	}
}

// hostileRule is the rule of the regular-expression attack: a legal
// pattern of 3,600 bytes, (?:a?){1000} three hundred times, which Go's
// regexp compiles to 600,000 instructions.
var hostileRule = mcpv1alpha1.ArgumentRule{Name: "hostile", Expression: `args.s.matches('` + strings.Repeat(`(?:a?){1000}`, 300) + `')`}

// BenchmarkHostileRule is what compiling the attack's rule costs (refused
// now, before its pattern is compiled: held-B/op is what stays in memory
// after a collection), and what the nested-lists attack costs per call: a
// "no duplicate recipients" rule over 18 recipients of 1,025 nested
// values each (within the arguments rules run on: stopped at its cost
// limit) and over 100 (beyond them: refused before the rule runs).
func BenchmarkHostileRule(b *testing.B) {
	b.Run("compile-pattern", func(b *testing.B) {
		b.ReportAllocs()
		var keep []*argrules.Program
		before := heapInUse()
		for b.Loop() {
			p, _ := argrules.Compile(nil, argrules.Layer{Rules: &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{hostileRule}}})
			keep = append(keep, p)
		}
		b.ReportMetric(float64(heapInUse()-before)/float64(b.N), "held-B/op")
		_ = keep
	})
	for _, n := range []int{18, 100} {
		b.Run(fmt.Sprintf("nested-duplicates-%d", n), func(b *testing.B) {
			p, err := argrules.Compile(nil, argrules.Layer{Rules: &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{
				{Name: "no-duplicates", Expression: `args.to.all(x, args.to.exists_one(y, y == x))`},
			}}})
			if err != nil {
				b.Fatal(err)
			}
			list := make([]any, n)
			for i := range list {
				var v any = "x"
				for range 9 {
					v = []any{v, v}
				}
				list[i] = []any{v, fmt.Sprint(i)}
			}
			args := map[string]any{"to": list}
			b.ReportAllocs()
			for b.Loop() {
				if _, refused := p.Apply(args); refused == nil {
					b.Fatal("the rule passed")
				}
			}
		})
	}
}

// BenchmarkCompiledRuleMemory is what one compiled rule holds in memory
// (held-B/op), against what Program.Weight estimates (weight-B/op): a
// rule of 4,000 bytes comparing arguments, and one of a pattern of 4,002
// instructions.
func BenchmarkCompiledRuleMemory(b *testing.B) {
	long := `args.a == 'x'` + strings.Repeat(` || args.a == 'x'`, 234)
	for _, c := range []struct{ name, expr string }{
		{"long-expression", long},
		{"large-pattern", `args.s.matches('(?:a?){1000}(?:b?){1000}')`},
	} {
		b.Run(c.name, func(b *testing.B) {
			rules := &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{{Name: "r", Expression: c.expr}}}
			var keep []*argrules.Program
			before := heapInUse()
			for b.Loop() {
				p, err := argrules.Compile(nil, argrules.Layer{Rules: rules})
				if err != nil {
					b.Fatal(err)
				}
				keep = append(keep, p)
			}
			b.ReportMetric(float64(heapInUse()-before)/float64(b.N), "held-B/op")
			b.ReportMetric(float64(keep[0].Weight()), "weight-B/op")
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
