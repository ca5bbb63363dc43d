// Package drift explains how a tool's definition changed, in categories a
// reviewer acts on: its text changed, instruction-like text or URLs were
// added, hidden characters are present, its input schema accepts more than
// before, its hints promise less, or the arguments it mirrors into HTTP
// headers changed. Inspect runs the checks that need no earlier definition
// on a tool seen for the first time.
//
// A report names where each finding is (a field, or a JSON pointer into
// the input schema) and what kind of change it is, never the text or values
// the server sent: reports go to status, Events and logs, and the server's
// text is untrusted. The package reads nothing but its arguments, and
// never decides anything: an approval stays a person's.
package drift

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Category is one kind of change a reviewer acts on.
type Category string

// The categories, each a fixed CamelCase word.
const (
	// TextChanged: the title, the description, the title hint, or a title
	// or description inside the input schema changed.
	TextChanged Category = "TextChanged"
	// InstructionsAdded: text an agent reads gained instruction-like
	// phrases (addressing the model, hiding things from the user) or URLs.
	InstructionsAdded Category = "InstructionsAdded"
	// HiddenCharacters: the definition holds characters a person does not
	// see (Hidden): C0 and C1 controls, zero-width and other
	// default-ignorable characters, bidirectional controls, variation
	// selectors, or characters of the Unicode tag block; or the import
	// removed control characters from it (Definition.Removed).
	HiddenCharacters Category = "HiddenCharacters"
	// SchemaWidened: the input schema accepts arguments it refused before
	// (a property added, a requirement removed, a type or enum loosened,
	// additional properties allowed, a limit removed or raised).
	SchemaWidened Category = "SchemaWidened"
	// SchemaChanged: the input schema changed without accepting more (it
	// was narrowed, or changed in a way that does not loosen it).
	SchemaChanged Category = "SchemaChanged"
	// OutputSchemaWidened: the output schema admits results it refused
	// before (as SchemaWidened reads an input schema), or was removed, so
	// that structured results are no longer checked.
	OutputSchemaWidened Category = "OutputSchemaWidened"
	// OutputSchemaChanged: the output schema changed without admitting
	// more, or was added.
	OutputSchemaChanged Category = "OutputSchemaChanged"
	// HintsRelaxed: a hint promises less: read-only became writing,
	// non-destructive became destructive, or closed world became open.
	HintsRelaxed Category = "HintsRelaxed"
	// HintsChanged: a hint changed without promising less.
	HintsChanged Category = "HintsChanged"
	// HeadersChanged: the arguments mirrored into Mcp-Param-* HTTP headers
	// (x-mcp-header in the input schema) changed.
	HeadersChanged Category = "HeadersChanged"
)

// Categories is every category, in the order reports sort them.
var Categories = []Category{HeadersChanged, HiddenCharacters, HintsChanged, HintsRelaxed, InstructionsAdded, OutputSchemaChanged, OutputSchemaWidened, SchemaChanged, SchemaWidened, TextChanged}

// Definition is what drift compares of a tool.
type Definition struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the JSON Schema of the arguments; empty means none.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the structured results; empty
	// means the server sent none (results are then not checked).
	OutputSchema json.RawMessage
	Hints        *Hints
	// Removed are the places (as reports name them: "description",
	// "inputSchema/properties/q/description", ...) from which the import
	// removed control characters the server sent (StripControls). The
	// definition no longer holds them, so only this says they were there.
	Removed []string
}

// Hints are the server's annotations, as sent (nil: not sent).
type Hints struct {
	Title       string
	ReadOnly    *bool
	Destructive *bool
	Idempotent  *bool
	OpenWorld   *bool
}

// Report is what drift found: the categories, sorted and each once, and
// short details ("<Category> <where>: <what>"), sorted, each once, and at
// most MaxDetails of them.
type Report struct {
	Categories []Category
	Details    []string
}

// Has reports whether c is among the report's categories.
func (r Report) Has(c Category) bool { return slices.Contains(r.Categories, c) }

// Limits of a report: how many details it lists, and how long the place a
// detail names may be.
const (
	MaxDetails   = 32
	MaxDetailLen = 256
	maxWhere     = 160
	// maxDepth is how deep schemas are compared; a difference below it is
	// reported as a widening, since it cannot be shown not to be one.
	maxDepth = 64
)

// finding is one thing drift found.
type finding struct {
	cat   Category
	where string
	what  string
}

type findings []finding

func (f *findings) add(cat Category, where, what string) {
	*f = append(*f, finding{cat: cat, where: where, what: what})
}

func (f findings) report() Report {
	var r Report
	cats := map[Category]bool{}
	details := map[string]bool{}
	for _, x := range f {
		cats[x.cat] = true
		details[clipDetail(string(x.cat)+" "+safeWhere(x.where)+": "+x.what)] = true
	}
	for _, c := range Categories {
		if cats[c] {
			r.Categories = append(r.Categories, c)
		}
	}
	for d := range details {
		r.Details = append(r.Details, d)
	}
	slices.Sort(r.Details)
	if len(r.Details) > MaxDetails {
		more := len(r.Details) - (MaxDetails - 1)
		r.Details = append(r.Details[:MaxDetails-1], fmt.Sprintf("and %d more", more))
	}
	return r
}

// Compare explains how next differs from prev. Two equal definitions give
// an empty report; any other pair gives at least one category.
func Compare(prev, next Definition) Report {
	var f findings
	ps, pok := parse(prev.InputSchema)
	ns, nok := parse(next.InputSchema)
	pall, nall := schemas{in: ps, out: parseOutput(prev.OutputSchema)}, schemas{in: ns, out: parseOutput(next.OutputSchema)}
	pt, nt := texts(prev, pall), texts(next, nall)
	for where, t := range nt {
		if o, ok := pt[where]; !ok || o != t {
			f.add(TextChanged, where, changeWord(ok, "changed", "added"))
		}
	}
	for where := range pt {
		if _, ok := nt[where]; !ok {
			f.add(TextChanged, where, "removed")
		}
	}
	hidden(&f, next, nall)
	instructions(&f, strs(prev, pall), strs(next, nall))
	switch {
	case !pok || !nok:
		if !slices.Equal(prev.InputSchema, next.InputSchema) {
			f.add(SchemaWidened, "inputSchema", "not comparable")
		}
	default:
		compareSchema(&f, "", ps, ns, 0)
		compareHeaders(&f, headers(ps), headers(ns))
	}
	compareOutput(&f, prev.OutputSchema, next.OutputSchema)
	compareHints(&f, prev.Hints, next.Hints)
	if prev.Name != next.Name {
		f.add(TextChanged, "name", "changed")
	}
	return f.report()
}

// Inspect runs the checks that need no earlier definition, for a tool seen
// for the first time: hidden characters, and instruction-like text or URLs.
func Inspect(d Definition) Report {
	var f findings
	s, _ := parse(d.InputSchema)
	all := schemas{in: s, out: parseOutput(d.OutputSchema)}
	hidden(&f, d, all)
	instructions(&f, nil, strs(d, all))
	return f.report()
}

func changeWord(existed bool, yes, no string) string {
	if existed {
		return yes
	}
	return no
}

// parse decodes a schema; an empty one is the schema that accepts
// anything. ok is false for bytes that are not JSON.
func parse(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return true, true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return v, true
}

// safeWhere makes a place printable ASCII and short: a place can hold a
// property name the server chose.
func safeWhere(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxWhere {
			b.WriteString("...")
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func clipDetail(s string) string {
	if len(s) <= MaxDetailLen {
		return s
	}
	return s[:MaxDetailLen-3] + "..."
}

// tokenEscaper escapes a JSON pointer token (RFC 6901).
var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer appends a JSON pointer token to p.
func pointer(p, token string) string {
	return p + "/" + tokenEscaper.Replace(token)
}
