package bench

import (
	"encoding/json"
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
