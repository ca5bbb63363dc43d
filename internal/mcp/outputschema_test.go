package mcp

import (
	"strings"
	"testing"
)

// validateTool reads one definition as an import does.
func validateTool(t *testing.T, def string) (Tool, string) {
	t.Helper()
	tp, ok := parseTape([]byte(def))
	if !ok {
		t.Fatalf("not JSON: %s", def)
	}
	n := getNormalizer()
	defer putNormalizer(n)
	tool, _, reason := validateToolAt(n, tp, 0)
	return tool, reason
}

func TestOutputSchemaKept(t *testing.T) {
	const in = `"inputSchema":{"type":"object"}`
	tests := []struct {
		name, def, want, reason string
	}{
		{"none", `{"name":"a",` + in + `}`, "", ""},
		{"null", `{"name":"a",` + in + `,"outputSchema":null}`, "", ""},
		{"canonical", `{"name":"a",` + in + `,"outputSchema":{ "type":"object", "properties":{"z":{"type":"number","maximum":1.50},"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}}`,
			`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]},"z":{"maximum":1.50,"type":"number"}},"type":"object"}`, ""},
		{"an array's schema", `{"name":"a",` + in + `,"outputSchema":{"type":"array","items":{"type":"string"}}}`, `{"items":{"type":"string"},"type":"array"}`, ""},
		{"not an object", `{"name":"a",` + in + `,"outputSchema":true}`, "", SkipInvalidSchema},
		{"a nested duplicate", `{"name":"a",` + in + `,"outputSchema":{"type":"object","properties":{"n":{"type":"string","type":"number"}}}}`, "", SkipInvalidSchema},
		{"too large", `{"name":"a",` + in + `,"outputSchema":{"description":"` + strings.Repeat("x", MaxOutputSchemaBytes) + `"}}`, "", SkipInvalidSchema},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, reason := validateTool(t, tc.def)
			if reason != tc.reason || string(tool.OutputSchema) != tc.want {
				t.Errorf("output schema %s (skipped: %q), want %s (%q)", tool.OutputSchema, reason, tc.want, tc.reason)
			}
		})
	}
}
