package drift

import (
	"math"
	"reflect"
	"slices"
	"strings"
)

// Keyword groups of JSON Schema, by how a change of them is read.
var (
	// upper bounds: removed or raised, the schema accepts more.
	upperLimits = []string{"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains"}
	// lower bounds: removed or lowered, the schema accepts more.
	lowerLimits = []string{"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains"}
	// subschemas that apply to parts of an instance and default to true.
	openSubschemas = []string{"additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems", "propertyNames", "contains"}
	// restrictions that cannot be compared: removed or changed, the schema
	// may accept more.
	opaque = []string{"pattern", "format", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "contentMediaType", "contentEncoding", "$ref", "$dynamicRef"}
	// schema maps keyed by name.
	namedSubschemas = []string{"properties", "patternProperties", "$defs", "definitions"}
	// lists of alternatives: a longer list accepts more.
	alternatives = []string{"anyOf", "oneOf"}
	// what compareSchema leaves to others: texts (TextChanged) and headers
	// (HeadersChanged).
	notSchema = []string{"title", "description", "x-mcp-header"}
)

// compareSchema reports how schema b differs from schema a at pointer p.
func compareSchema(f *findings, p string, a, b any, depth int) {
	where := "inputSchema" + p
	if depth > maxDepth {
		if !reflect.DeepEqual(a, b) {
			f.add(SchemaWidened, where, "too deeply nested to compare")
		}
		return
	}
	if a == false || b == false {
		switch {
		case a == false && b != false:
			f.add(SchemaWidened, where, "accepts values it refused")
		case a != false && b == false:
			f.add(SchemaChanged, where, "now refuses every value")
		}
		return
	}
	am, aok := asSchema(a)
	bm, bok := asSchema(b)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			f.add(SchemaWidened, where, "not comparable")
		}
		return
	}
	for _, k := range keys(am, bm) {
		av, inA := am[k]
		bv, inB := bm[k]
		if slices.Contains(notSchema, k) || (inA && inB && reflect.DeepEqual(av, bv)) {
			continue
		}
		compareKeyword(f, p, k, av, bv, inA, inB, depth)
	}
}

// compareKeyword reports how keyword k of a schema at p changed; at least
// one of inA and inB is true, and the values differ.
func compareKeyword(f *findings, p, k string, av, bv any, inA, inB bool, depth int) {
	where := "inputSchema" + p
	kp := pointer(p, k)
	switch {
	case k == "type":
		compareTypes(f, where, av, bv, inA, inB)
	case k == "enum":
		switch {
		case !inB:
			f.add(SchemaWidened, where, "enum removed")
		case !inA:
			f.add(SchemaChanged, where, "enum added")
		case subset(bv, av):
			f.add(SchemaChanged, where, "enum narrowed")
		default:
			f.add(SchemaWidened, where, "enum value added")
		}
	case k == "const":
		f.add(changed(inA, true), where, "const "+changeWord(inB, changeWord(inA, "changed", "added"), "removed"))
	case k == "required":
		compareRequired(f, p, av, bv)
	case slices.Contains(namedSubschemas, k):
		compareNamed(f, p, k, av, bv, depth)
	case slices.Contains(openSubschemas, k):
		compareOpen(f, p, k, av, bv, inA, inB, depth)
	case k == "prefixItems" || k == "allOf":
		// Removing an entry drops a constraint; adding one adds one.
		compareList(f, kp, av, bv, depth, SchemaWidened, SchemaChanged)
	case slices.Contains(alternatives, k):
		if !inA {
			f.add(SchemaChanged, where, k+" added")
			return
		}
		if !inB {
			f.add(SchemaWidened, where, k+" removed")
			return
		}
		compareList(f, kp, av, bv, depth, SchemaChanged, SchemaWidened)
	case slices.Contains(upperLimits, k):
		compareLimit(f, where, k, av, bv, inA, inB, func(x, y float64) bool { return y > x })
	case slices.Contains(lowerLimits, k):
		compareLimit(f, where, k, av, bv, inA, inB, func(x, y float64) bool { return y < x })
	case k == "multipleOf":
		x, xok := av.(float64)
		y, yok := bv.(float64)
		if inA && inB && xok && yok && x > 0 && isMultiple(y, x) {
			f.add(SchemaChanged, where, "multipleOf narrowed")
			return
		}
		f.add(changed(inA, true), where, "multipleOf "+changeWord(inB, "changed", "removed"))
	case k == "uniqueItems":
		if av == true && bv != true {
			f.add(SchemaWidened, where, "uniqueItems removed")
			return
		}
		f.add(SchemaChanged, where, "uniqueItems changed")
	case slices.Contains(opaque, k):
		f.add(changed(inA, true), where, k+" "+changeWord(inB, changeWord(inA, "changed", "added"), "removed"))
	default:
		f.add(SchemaChanged, where, safeKeyword(k)+" "+changeWord(inB, changeWord(inA, "changed", "added"), "removed"))
	}
}

// changed is SchemaWidened for a restriction the old schema had (inA) that
// was removed or changed (widens), and SchemaChanged for one it gains.
func changed(inA, widens bool) Category {
	if inA && widens {
		return SchemaWidened
	}
	return SchemaChanged
}

// asSchema reads a schema as its keywords: true is the empty schema.
func asSchema(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case bool:
		return map[string]any{}, x
	case map[string]any:
		return x, true
	}
	return nil, false
}

// keys is the sorted union of two maps' keys.
func keys(a, b map[string]any) []string {
	ks := make([]string, 0, len(a)+len(b))
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// safeKeyword names an unknown keyword in a detail: a known word, or
// "a keyword" for one the server made up.
func safeKeyword(k string) string {
	if len(k) <= 32 && strings.IndexFunc(k, func(r rune) bool {
		return !(r == '$' || r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return k
	}
	return "a keyword"
}

// typeSet is a type keyword as a set; ok is false when it is not one.
func typeSet(v any) (map[string]bool, bool) {
	s := map[string]bool{}
	switch x := v.(type) {
	case string:
		s[x] = true
	case []any:
		for _, e := range x {
			t, ok := e.(string)
			if !ok {
				return nil, false
			}
			s[t] = true
		}
	default:
		return nil, false
	}
	return s, true
}

func compareTypes(f *findings, where string, av, bv any, inA, inB bool) {
	if !inB {
		f.add(SchemaWidened, where, "type removed")
		return
	}
	if !inA {
		f.add(SchemaChanged, where, "type added")
		return
	}
	as, aok := typeSet(av)
	bs, bok := typeSet(bv)
	if !aok || !bok {
		f.add(SchemaWidened, where, "type not comparable")
		return
	}
	for t := range bs {
		if !as[t] && !(t == "integer" && as["number"]) {
			f.add(SchemaWidened, where, "type loosened")
			return
		}
	}
	f.add(SchemaChanged, where, "type narrowed")
}

// subset reports whether every element of list a is in list b.
func subset(a, b any) bool {
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if !aok || !bok {
		return false
	}
	for _, x := range al {
		if !slices.ContainsFunc(bl, func(y any) bool { return reflect.DeepEqual(x, y) }) {
			return false
		}
	}
	return true
}

func compareRequired(f *findings, p string, av, bv any) {
	names := func(v any) map[string]bool {
		m := map[string]bool{}
		if l, ok := v.([]any); ok {
			for _, e := range l {
				if s, ok := e.(string); ok {
					m[s] = true
				}
			}
		}
		return m
	}
	a, b := names(av), names(bv)
	for n := range a {
		if !b[n] {
			f.add(SchemaWidened, "inputSchema"+pointer(pointer(p, "properties"), n), "no longer required")
		}
	}
	for n := range b {
		if !a[n] {
			f.add(SchemaChanged, "inputSchema"+pointer(pointer(p, "properties"), n), "now required")
		}
	}
	if len(a) == len(b) && !reflect.DeepEqual(av, bv) {
		// Same names in another order, or not a list of names.
		f.add(SchemaChanged, "inputSchema"+pointer(p, "required"), "changed")
	}
}

// compareNamed compares maps of schemas (properties and the like): an
// entry added to properties or patternProperties accepts more, one removed
// accepts less (or the same, when other keywords allow it).
func compareNamed(f *findings, p, k string, av, bv any, depth int) {
	am, aok := av.(map[string]any)
	bm, bok := bv.(map[string]any)
	kp := pointer(p, k)
	if av == nil {
		am, aok = map[string]any{}, true
	}
	if bv == nil {
		bm, bok = map[string]any{}, true
	}
	if !aok || !bok {
		f.add(SchemaWidened, "inputSchema"+kp, "not comparable")
		return
	}
	definitions := k == "$defs" || k == "definitions"
	for _, n := range keys(am, bm) {
		x, inA := am[n]
		y, inB := bm[n]
		np := pointer(kp, n)
		switch {
		case !inA && definitions:
			f.add(SchemaChanged, "inputSchema"+np, "definition added")
		case !inA:
			f.add(SchemaWidened, "inputSchema"+np, "property added")
		case !inB:
			f.add(SchemaChanged, "inputSchema"+np, changeWord(definitions, "definition removed", "property removed"))
		default:
			compareSchema(f, np, x, y, depth+1)
		}
	}
}

// compareOpen compares a subschema that is true when absent.
func compareOpen(f *findings, p, k string, av, bv any, inA, inB bool, depth int) {
	if !inA {
		av = true
	}
	if !inB {
		bv = true
	}
	_, al := av.([]any)
	_, bl := bv.([]any)
	switch {
	case al && bl:
		compareList(f, pointer(p, k), av, bv, depth, SchemaWidened, SchemaChanged)
		return
	case al || bl:
		f.add(SchemaWidened, "inputSchema"+pointer(p, k), "changed form")
		return
	}
	if (k == "additionalProperties" || k == "unevaluatedProperties") && av == false && bv != false {
		f.add(SchemaWidened, "inputSchema"+p, "additional properties allowed")
		return
	}
	compareSchema(f, pointer(p, k), av, bv, depth+1)
}

// compareList compares lists of schemas entry by entry; an entry only in
// a is reported as shorter, an entry only in b as longer.
func compareList(f *findings, p string, av, bv any, depth int, shorter, longer Category) {
	al, aok := av.([]any)
	bl, bok := bv.([]any)
	if av == nil {
		aok = true
	}
	if bv == nil {
		bok = true
	}
	if !aok || !bok {
		f.add(SchemaWidened, "inputSchema"+p, "not comparable")
		return
	}
	for i := range min(len(al), len(bl)) {
		compareSchema(f, pointer(p, itoa(i)), al[i], bl[i], depth+1)
	}
	switch {
	case len(al) > len(bl):
		f.add(shorter, "inputSchema"+p, "entry removed")
	case len(bl) > len(al):
		f.add(longer, "inputSchema"+p, "entry added")
	}
}

func compareLimit(f *findings, where, k string, av, bv any, inA, inB bool, looser func(x, y float64) bool) {
	x, xok := av.(float64)
	y, yok := bv.(float64)
	switch {
	case !inB:
		f.add(SchemaWidened, where, k+" removed")
	case !inA:
		f.add(SchemaChanged, where, k+" added")
	case !xok || !yok:
		// Draft 4's boolean exclusive bounds, or not a number.
		f.add(SchemaWidened, where, k+" changed")
	case looser(x, y):
		f.add(SchemaWidened, where, k+" loosened")
	default:
		f.add(SchemaChanged, where, k+" tightened")
	}
}

// isMultiple reports whether y is a whole multiple of x.
func isMultiple(y, x float64) bool {
	q := y / x
	return q >= 1 && !math.IsInf(q, 0) && math.Abs(q-math.Round(q)) < 1e-9
}

// headers maps the JSON pointer of every property annotated x-mcp-header,
// reached from the root through properties only (where the annotation
// counts), to its header name.
func headers(schema any) map[string]string {
	h := map[string]string{}
	var visit func(p string, s any, depth int)
	visit = func(p string, s any, depth int) {
		m, ok := s.(map[string]any)
		if !ok || depth > maxDepth {
			return
		}
		if name, ok := m["x-mcp-header"].(string); ok && p != "" {
			h[p] = strings.ToLower(name)
		}
		props, _ := m["properties"].(map[string]any)
		for n, c := range props {
			visit(pointer(pointer(p, "properties"), n), c, depth+1)
		}
	}
	visit("", schema, 0)
	return h
}

func compareHeaders(f *findings, a, b map[string]string) {
	for p, name := range b {
		old, ok := a[p]
		switch {
		case !ok:
			f.add(HeadersChanged, "inputSchema"+p, "header added")
		case old != name:
			f.add(HeadersChanged, "inputSchema"+p, "header renamed")
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			f.add(HeadersChanged, "inputSchema"+p, "header removed")
		}
	}
}

// compareHints reports hints that promise less (HintsRelaxed) or changed
// otherwise (HintsChanged). An absent hint has the default MCP gives it:
// not read-only, destructive, not idempotent, open world.
func compareHints(f *findings, a, b *Hints) {
	if a == nil {
		a = &Hints{}
	}
	if b == nil {
		b = &Hints{}
	}
	for _, h := range []struct {
		name     string
		x, y     *bool
		fallback bool
		// promise is the value that promises more.
		promise  bool
		relaxing string
	}{
		{"readOnlyHint", a.ReadOnly, b.ReadOnly, false, true, "read-only to writing"},
		{"destructiveHint", a.Destructive, b.Destructive, true, false, "non-destructive to destructive"},
		{"openWorldHint", a.OpenWorld, b.OpenWorld, true, false, "closed world to open world"},
		{"idempotentHint", a.Idempotent, b.Idempotent, false, true, ""},
	} {
		x, y := orDefault(h.x, h.fallback), orDefault(h.y, h.fallback)
		switch {
		case x == h.promise && y != h.promise && h.relaxing != "":
			f.add(HintsRelaxed, "hints."+h.name, h.relaxing)
		case x != y:
			f.add(HintsChanged, "hints."+h.name, "changed")
		case (h.x == nil) != (h.y == nil):
			f.add(HintsChanged, "hints."+h.name, changeWord(h.y == nil, "no longer stated", "now stated"))
		}
	}
}

func orDefault(b *bool, d bool) bool {
	if b == nil {
		return d
	}
	return *b
}
