package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// maxSchemaLines bounds what SchemaLines shows of one schema, and
// maxSchemaDepth how deep it goes.
const (
	maxSchemaLines = 2000
	maxSchemaDepth = 40
)

// SchemaLines shows an input schema as a person reads it: each argument
// under its name with its type and whether it is required, then its
// description as the model reads it (the literal text, not JSON, with
// hidden characters escaped by Printable), its enum values and its header
// annotation, and nested arguments indented below it. The schema's own
// description comes first. Argument names and enum values are the server's
// words and are served as they are; keywords the normaliser does not keep
// are shown as JSON. A schema that is not JSON is shown as it is.
func SchemaLines(raw []byte) []string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []string{"(none)"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out := []string{"(not valid JSON, shown as stored)"}
		return append(out, strings.Split(Printable(string(raw), true), "\n")...)
	}
	w := &schemaWriter{}
	root, ok := v.(map[string]any)
	if !ok {
		w.line(0, "schema: "+jsonText(v))
		return w.lines
	}
	if t, ok := root["type"]; ok {
		w.line(0, "type: "+typeText(t))
	}
	w.node(root, 0, 0)
	return w.lines
}

type schemaWriter struct {
	lines []string
	cut   bool
}

func (w *schemaWriter) line(indent int, s string) {
	switch {
	case len(w.lines) < maxSchemaLines:
		w.lines = append(w.lines, strings.Repeat("  ", indent)+s)
	case !w.cut:
		w.cut = true
		w.lines = append(w.lines, "(more not shown)")
	}
}

// node writes what a schema says besides its type (which the line naming
// it shows): description, enum, header, other keywords, items and
// properties.
func (w *schemaWriter) node(s map[string]any, indent, depth int) {
	if depth > maxSchemaDepth {
		w.line(indent, "(nested deeper than shown)")
		return
	}
	if d, ok := s["description"]; ok {
		w.text(indent, "description", d)
	}
	if e, ok := s["enum"].([]any); ok {
		vals := make([]string, len(e))
		for i, x := range e {
			vals[i] = valueText(x)
		}
		w.line(indent, "enum: "+strings.Join(vals, ", "))
	} else if e, ok := s["enum"]; ok {
		w.line(indent, "enum: "+jsonText(e))
	}
	if h, ok := s["x-mcp-header"]; ok {
		w.line(indent, "header (x-mcp-header): "+valueText(h))
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch k {
		case "type", "description", "enum", "x-mcp-header", "properties", "required", "items":
		default:
			w.line(indent, OneLine(k, 128)+": "+jsonText(s[k]))
		}
	}
	if items, ok := s["items"]; ok {
		w.child(indent, "items", items, false, depth)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			w.child(indent, "argument "+valueText(n), props[n], required[n], depth)
		}
	} else if p, ok := s["properties"]; ok {
		w.line(indent, "properties: "+jsonText(p))
	}
	if req, ok := s["required"]; ok && s["properties"] == nil {
		w.line(indent, "required: "+jsonText(req))
	}
}

// child writes a nested schema: a line naming it with its type, then what
// it says, indented.
func (w *schemaWriter) child(indent int, label string, v any, required bool, depth int) {
	c, ok := v.(map[string]any)
	if !ok {
		w.line(indent, label+": "+jsonText(v))
		return
	}
	head := label
	if t, ok := c["type"]; ok {
		head += ": " + typeText(t)
	}
	if required {
		head += ", required"
	}
	w.line(indent, head)
	w.node(c, indent+1, depth+1)
}

// text writes a server's text under a label: on the label's line when it
// is one line, below it otherwise.
func (w *schemaWriter) text(indent int, label string, v any) {
	s, ok := v.(string)
	if !ok {
		w.line(indent, label+": "+jsonText(v))
		return
	}
	lines := strings.Split(Printable(s, true), "\n")
	if len(lines) == 1 {
		w.line(indent, label+": "+lines[0])
		return
	}
	w.line(indent, label+":")
	for _, l := range lines {
		w.line(indent+1, l)
	}
}

// typeText is a type keyword as a person reads it: "string", or
// "string or null".
func typeText(t any) string {
	switch x := t.(type) {
	case string:
		return OneLine(x, 64)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = typeText(p)
		}
		return strings.Join(parts, " or ")
	}
	return jsonText(t)
}

// valueText is a value of the server's (an argument name, an enum value):
// a string in quotes with its characters as they are (hidden ones escaped,
// and a quote or backslash inside it written \" and \\ so that where it
// ends is plain), anything else as JSON.
func valueText(v any) string {
	s, ok := v.(string)
	if !ok {
		return jsonText(v)
	}
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
	return `"` + Printable(s, false) + `"`
}

// jsonText is v as compact JSON, on one line.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return OneLine(strings.TrimSpace(b.String()), 1024)
}
