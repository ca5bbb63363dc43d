package mcp

import (
	"bytes"
	"encoding/json"
)

// MaxOutputSchemaBytes bounds a tool's output schema as stored, like the
// normalised input schema: it is kept in a Kubernetes object's status.
const MaxOutputSchemaBytes = MaxNormalizedSchemaBytes

// outputSchemaAt reads the output schema at entry i of t: the schema as the
// server sent it, in a canonical form (members sorted, numbers as written,
// no insignificant space), so that a server merely reordering it does not
// change a definition's hash. Unlike the input schema it is not reduced to
// a subset: it is what structured results are checked against, and a
// subset would check less than the server promised. It is rejected whole
// when it is not an object, repeats a member name anywhere (which member
// a validator would read is unknowable), or is too large.
func outputSchemaAt(t *tape, i int) (json.RawMessage, bool) {
	if t.e[i].kind != kObject {
		return nil, false
	}
	for k, end := i, t.next(i); k < end; k++ {
		if t.e[k].kind == kObject && t.hasDuplicate(k) {
			return nil, false
		}
	}
	return CanonicalJSON(t.raw(i), MaxOutputSchemaBytes)
}

// CanonicalJSON is raw, a JSON value, with object members sorted, numbers
// as written and no insignificant space; false when raw is not JSON or the
// result is longer than limit bytes. HTML characters are not escaped.
func CanonicalJSON(raw []byte, limit int) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil, false
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if len(out) > limit {
		return nil, false
	}
	return out, true
}
