package drift

import (
	"encoding/json"
	"slices"
	"strings"
)

// schemas are a definition's parsed schemas, for the checks that read the
// strings of both: the input schema, and the output schema (nil when there
// is none).
type schemas struct{ in, out any }

// each calls fn with each schema that is there and the place it is named
// under.
func (s schemas) each(fn func(root string, schema any)) {
	fn("inputSchema", s.in)
	if s.out != nil {
		fn("outputSchema", s.out)
	}
}

// parseOutput decodes an output schema; nil when there is none or it is
// not JSON (compareOutput reports that).
func parseOutput(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	v, ok := parse(raw)
	if !ok {
		return nil
	}
	return v
}

// compareOutput reports how the output schema changed. It is read as the
// input schema is, with the categories of its own: a schema that admits
// results it refused is one that checks less of what reaches the agent.
// One added is a change (results are now checked); one removed a widening
// (they no longer are).
func compareOutput(f *findings, prev, next json.RawMessage) {
	if slices.Equal(prev, next) {
		return
	}
	switch {
	case len(prev) == 0:
		f.add(OutputSchemaChanged, "outputSchema", "added")
		return
	case len(next) == 0:
		f.add(OutputSchemaWidened, "outputSchema", "removed")
		return
	}
	ps, pok := parse(prev)
	ns, nok := parse(next)
	if !pok || !nok {
		f.add(OutputSchemaWidened, "outputSchema", "not comparable")
		return
	}
	var in findings
	compareSchema(&in, "", ps, ns, 0)
	for _, x := range in {
		cat := OutputSchemaChanged
		if x.cat == SchemaWidened {
			cat = OutputSchemaWidened
		}
		f.add(cat, "outputSchema"+strings.TrimPrefix(x.where, "inputSchema"), x.what)
	}
	if len(in) == 0 {
		// Only keywords compareSchema does not read (annotations) differ.
		f.add(OutputSchemaChanged, "outputSchema", "changed")
	}
}
