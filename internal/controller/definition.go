package controller

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/drift"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// withoutControls is t with the control characters (C0, C1 and DEL, but
// newline and tab) removed from every string of it an agent reads: the
// title, the description, the title hint, every string in the input
// schema (descriptions and enum values; property names and the other
// strings the normaliser keeps cannot hold any), and every string of the
// output schema. It returns the places it
// removed some from, as drift names them, so that the record of the
// definition says they were there (docs/adr/045-what-is-stored-is-what-is-served.md).
// What is hashed, stored, served and shown is the text without them; the
// text between them stays.
func withoutControls(t mcp.Tool) (mcp.Tool, []string) {
	var removed []string
	strip := func(where string, s *string) {
		if clean, ok := drift.StripControls(*s); ok {
			*s, removed = clean, append(removed, where)
		}
	}
	strip("title", &t.Title)
	strip("description", &t.Description)
	if t.Annotations != nil {
		a := *t.Annotations
		strip("hints.title", &a.Title)
		t.Annotations = &a
	}
	if schema, where := schemaWithoutControls(t.InputSchema, "inputSchema"); len(where) > 0 {
		t.InputSchema, removed = schema, append(removed, where...)
	}
	if schema, where := schemaWithoutControls(t.OutputSchema, "outputSchema"); len(where) > 0 {
		t.OutputSchema, removed = schema, append(removed, where...)
	}
	return t, removed
}

// schemaWithoutControls is a schema (the input schema, normalised, or the
// output schema, canonical; root names which) with the control characters
// removed from its strings, in its form again, and the places they were
// removed from; the schema itself, and no places, when it has none. Only a
// schema whose bytes hold a control (jsonHasControl) is decoded.
func schemaWithoutControls(raw json.RawMessage, root string) (json.RawMessage, []string) {
	if !jsonHasControl(raw) {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw, nil
	}
	var where []string
	v = stripStrings(v, root, &where)
	if len(where) == 0 {
		return raw, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return raw, nil
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	// Removing characters from strings keeps a valid schema valid; the
	// normaliser (or, for an output schema, the canonical encoding) writes
	// it in its form again.
	if root == "outputSchema" {
		if canon, ok := mcp.CanonicalJSON(out, len(out)); ok {
			out = canon
		}
	} else if norm, err := mcp.NormalizeSchema(out); err == nil {
		out = norm
	}
	return out, where
}

// jsonHasControl reports whether JSON text holds a control character that
// StripControls removes: escaped (\r, \b, \f, or \u for a C0 or C1
// control or DEL), or written as it is (DEL, or a C1 control as UTF-8, C2
// 80 to C2 9F; JSON allows both unescaped). Newline and tab, escaped, are
// not. It reads the bytes once and decodes nothing, so that the schemas
// of an import (descriptions often hold \n) are not decoded for it.
func jsonHasControl(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			return true
		case c == '\\' && i+1 < len(b):
			i++
			switch b[i] {
			case 'r', 'b', 'f':
				return true
			case 'u':
				if i+4 < len(b) && b[i+1] == '0' && b[i+2] == '0' {
					hi, lo := b[i+3], b[i+4]
					n, ok := hexByte(hi, lo)
					if ok && n != '\n' && n != '\t' && (n < 0x20 || (n >= 0x7f && n <= 0x9f)) {
						return true
					}
				}
			}
		}
	}
	return false
}

// hexByte is the byte two hexadecimal digits write.
func hexByte(hi, lo byte) (byte, bool) {
	h, ok1 := hexDigit(hi)
	l, ok2 := hexDigit(lo)
	return h<<4 | l, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// pointerToken escapes a JSON pointer token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

// stripStrings removes control characters from every string below v,
// recording the JSON pointer (prefixed by p) of each it changed.
func stripStrings(v any, p string, where *[]string) any {
	switch x := v.(type) {
	case string:
		if clean, ok := drift.StripControls(x); ok {
			*where = append(*where, p)
			return clean
		}
	case map[string]any:
		for k, c := range x {
			x[k] = stripStrings(c, p+"/"+pointerToken.Replace(k), where)
		}
	case []any:
		for i, c := range x {
			x[i] = stripStrings(c, p+"/"+strconv.Itoa(i), where)
		}
	}
	return v
}

// definitionHash fingerprints what a human approves when enabling a tool:
// its name, title, description, normalised input schema, hints and output
// schema. The JSON is canonical (object keys sorted), so the hash does not
// change when a server merely reorders keys. The output schema is hashed
// only when the server sent one: a tool without one hashes exactly as it
// did before output schemas were kept, so that keeping them re-gated no
// tool whose definition did not change (docs/adr/062-typed-results.md).
func definitionHash(t mcp.Tool) string {
	var schema any
	if len(t.InputSchema) > 0 {
		// The schema was normalised by the client and is valid JSON.
		_ = json.Unmarshal(t.InputSchema, &schema)
	}
	doc := map[string]any{
		"name":        t.Name,
		"title":       t.Title,
		"description": t.Description,
		"inputSchema": schema,
		"hints":       hintsOf(t.Annotations),
	}
	if len(t.OutputSchema) > 0 {
		var out any
		_ = json.Unmarshal(t.OutputSchema, &out)
		doc["outputSchema"] = out
	}
	b, err := json.Marshal(doc)
	if err != nil {
		// Only values decoded from JSON are in doc, so this cannot happen;
		// an empty hash would never equal an approved one.
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func hintsOf(a *mcp.ToolAnnotations) *mcpv1alpha1.ToolHints {
	if a == nil {
		return nil
	}
	h := &mcpv1alpha1.ToolHints{
		Title:           clip(a.Title, 256),
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: a.DestructiveHint,
		IdempotentHint:  a.IdempotentHint,
		OpenWorldHint:   a.OpenWorldHint,
	}
	if *h == (mcpv1alpha1.ToolHints{}) {
		return nil
	}
	return h
}
