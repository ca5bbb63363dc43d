package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Limits of the schema normaliser. A schema beyond them is rejected whole.
const (
	// MaxSchemaDepth is the deepest nesting of schemas (the root is depth 1,
	// each "properties" member or "items" one more).
	MaxSchemaDepth = 32
	// MaxSchemaNodes bounds the number of schemas in one input schema.
	MaxSchemaNodes = 5000
	// MaxEnumValues bounds one "enum".
	MaxEnumValues = 1000
	// MaxNormalizedSchemaBytes bounds the normalised output, which is stored
	// in a Kubernetes object's status.
	MaxNormalizedSchemaBytes = 128 << 10
)

// SchemaError explains why a schema was rejected. Rule is one of the fixed
// phrases below and never contains bytes from the schema.
type SchemaError struct{ Rule string }

func (e *SchemaError) Error() string { return "input schema rejected: " + e.Rule }

// The rules a schema can break.
const (
	ruleNotObject        = "schema is not a JSON object"
	ruleRootType         = `root "type" is not "object"`
	ruleReference        = "references ($ref) are not supported"
	ruleComposition      = "composition or conditional keywords are not supported"
	ruleTuple            = "tuple forms of items are not supported"
	ruleBooleanSchema    = "boolean subschemas are not supported"
	ruleType             = `"type" is not a known type name or a list of distinct ones`
	ruleProperties       = `"properties" is not an object of schemas`
	rulePropertyName     = "a property name is not 1-128 characters from A-Z a-z 0-9 _ . -"
	ruleRequired         = `"required" is not a list of distinct property names`
	ruleEnum             = `"enum" is not a non-empty list within the limit`
	ruleDescription      = `"description" is not a string`
	ruleDialect          = `"$schema" names an unsupported dialect`
	ruleDepth            = "schema nesting exceeds the depth limit"
	ruleNodes            = "schema has more subschemas than the limit"
	ruleSize             = "normalised schema exceeds the size limit"
	ruleDuplicate        = "an object repeats a member name"
	ruleHeaderAnnotation = `"x-mcp-header" annotation is invalid`
)

// Dialects whose meaning of the kept keywords is the one emitted.
var knownDialects = map[string]bool{
	"json-schema.org/draft-04/schema":      true,
	"json-schema.org/draft-06/schema":      true,
	"json-schema.org/draft-07/schema":      true,
	"json-schema.org/draft/2019-09/schema": true,
	"json-schema.org/draft/2020-12/schema": true,
}

const headerAnnotation = "x-mcp-header"

// NormalizeSchema reduces a tool input schema to what a tool definition
// needs and rejects, whole, what it cannot represent. It never repairs.
//
// Kept, nested the same way: "type", "properties", "required", "items",
// "enum", "description", and "x-mcp-header" (validated, because 2026-07-28
// clients must mirror annotated arguments into headers). Everything else
// (title, default, examples, format, bounds, patterns, additionalProperties,
// $id, $comment, vendor keys ...) is dropped, as is "$schema" once checked:
// the kept keywords mean the same in every supported dialect.
//
// Rejected: a root that is not an object with "type": "object"; $ref and
// its dynamic variants; allOf/anyOf/oneOf/not/if/then/else; tuple "items"
// (an array) and "prefixItems"; boolean subschemas; unknown type names;
// property names outside [A-Za-z0-9_.-]{1,128}; "required" that is not a
// list of distinct valid names; empty or oversized "enum"; a non-string
// "description"; an unknown "$schema" dialect; duplicate member names;
// nesting deeper than MaxSchemaDepth or more than MaxSchemaNodes subschemas;
// output larger than MaxNormalizedSchemaBytes; an invalid or misplaced
// x-mcp-header annotation.
//
// The output is compact JSON with members in sorted order, so equal schemas
// give equal bytes (useful for a definition hash). Errors are *SchemaError.
func NormalizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	t, ok := parseTape(raw)
	if !ok {
		// Not one JSON value. Which rule it breaks depends on what comes
		// first in the bytes: a repeated root member before the syntax
		// error is a duplicate, anything else is not an object.
		if _, err := decodeObject(raw); errors.Is(err, errDuplicateMember) {
			return nil, reject(ruleDuplicate)
		}
		return nil, reject(ruleNotObject)
	}
	defer t.release()
	n := getNormalizer()
	defer putNormalizer(n)
	return n.normalize(t, 0)
}

// normalizer holds the scratch space of schema normalisation, reused from
// one schema to the next: output is written into out as the schema is
// walked, with no map per node and no copy of the input.
type normalizer struct {
	t       *tape
	nodes   int
	headers []string // lower-cased x-mcp-header names seen
	out     []byte
	props   []propOut // properties of the nodes being written, a stack
}

// propOut is one written property: its name and where its schema's output
// lies in out.
type propOut struct {
	name       []byte
	start, end int
}

var normalizerPool = sync.Pool{New: func() any { return new(normalizer) }}

func getNormalizer() *normalizer { return normalizerPool.Get().(*normalizer) }

func putNormalizer(n *normalizer) {
	n.t = nil
	if cap(n.out) > 4*MaxNormalizedSchemaBytes {
		n.out = nil
	}
	clear(n.props[:cap(n.props)])
	n.props = n.props[:0]
	normalizerPool.Put(n)
}

// normalize normalises the schema at entry i of t.
func (n *normalizer) normalize(t *tape, i int) (json.RawMessage, error) {
	n.t, n.nodes, n.headers, n.out, n.props = t, 0, n.headers[:0], n.out[:0], n.props[:0]
	start, err := n.node(i, 1, true, true)
	if err != nil {
		return nil, err
	}
	b := n.out[start:]
	if len(b) > MaxNormalizedSchemaBytes {
		return nil, reject(ruleSize)
	}
	return json.RawMessage(bytes.Clone(b)), nil
}

func reject(rule string) error { return &SchemaError{Rule: rule} }

// The member names a schema node is read for.
const (
	kwOther = iota
	kwType
	kwDescription
	kwProperties
	kwRequired
	kwItems
	kwEnum
	kwHeader
	kwDialect
	kwPrefixItems
	kwReference
	kwComposition
	kwDroppedSchema
	kwCount
)

func keywordOf(name []byte) int {
	switch string(name) {
	case "type":
		return kwType
	case "description":
		return kwDescription
	case "properties":
		return kwProperties
	case "required":
		return kwRequired
	case "items":
		return kwItems
	case "enum":
		return kwEnum
	case headerAnnotation:
		return kwHeader
	case "$schema":
		return kwDialect
	case "prefixItems":
		return kwPrefixItems
	case "$ref", "$dynamicRef", "$recursiveRef":
		return kwReference
	case "allOf", "anyOf", "oneOf", "not", "if", "then", "else":
		return kwComposition
	case "additionalProperties", "patternProperties", "propertyNames", "contains",
		"unevaluatedItems", "unevaluatedProperties", "dependentSchemas",
		"contentSchema", "additionalItems", "$defs", "definitions":
		return kwDroppedSchema
	}
	return kwOther
}

// keyword classifies the member name at entry k.
func (n *normalizer) keyword(k int) int {
	e := &n.t.e[k]
	if e.plain {
		return keywordOf(n.t.b[e.start+1 : e.end-1])
	}
	s, ok := n.t.text(k)
	if !ok {
		return kwOther
	}
	return keywordOf([]byte(s))
}

// node checks the schema at entry i and writes its normalised form at the
// end of n.out, returning where it starts. The checks run in a fixed order
// (this node's own keywords, then "properties" in member order, "required",
// "items", "enum", the header annotation), so the rule reported for a
// schema that breaks several is always the same one.
//
// reachable is true while the path from the root consists only of
// "properties" steps (where x-mcp-header may appear).
func (n *normalizer) node(i, depth int, root, reachable bool) (int, error) {
	if depth > MaxSchemaDepth {
		return 0, reject(ruleDepth)
	}
	n.nodes++
	if n.nodes > MaxSchemaNodes {
		return 0, reject(ruleNodes)
	}
	t := n.t
	switch t.e[i].kind {
	case kObject:
	case kTrue, kFalse:
		if root {
			return 0, reject(ruleNotObject)
		}
		return 0, reject(ruleBooleanSchema)
	default:
		return 0, reject(ruleNotObject)
	}
	if t.hasDuplicate(i) {
		return 0, reject(ruleDuplicate)
	}
	// slot holds the value entry of each kept or checked keyword; 0 (the
	// tape's first entry, never a member's value) means absent.
	var slot [kwCount]int
	end := t.next(i)
	for k := i + 1; k < end; k = t.next(k + 1) {
		slot[n.keyword(k)] = k + 1
	}
	switch {
	case slot[kwReference] != 0:
		return 0, reject(ruleReference)
	case slot[kwComposition] != 0:
		return 0, reject(ruleComposition)
	case slot[kwPrefixItems] != 0:
		return 0, reject(ruleTuple)
	case slot[kwDialect] != 0 && !n.dialectAt(slot[kwDialect]):
		return 0, reject(ruleDialect)
	}
	if slot[kwDroppedSchema] != 0 {
		for k := i + 1; k < end; k = t.next(k + 1) {
			if n.keyword(k) == kwDroppedSchema && mentionsHeaderAnnotation(t.raw(k+1)) {
				return 0, reject(ruleHeaderAnnotation)
			}
		}
	}

	var singleType string
	if v := slot[kwType]; v != 0 {
		s, err := n.checkType(v)
		if err != nil {
			return 0, err
		}
		singleType = s
	}
	if root && singleType != "object" {
		return 0, reject(ruleRootType)
	}
	if v := slot[kwDescription]; v != 0 {
		if k := t.e[v].kind; k != kString && k != kNull {
			return 0, reject(ruleDescription)
		}
	}

	base := len(n.out)
	propsBase := len(n.props)
	if v := slot[kwProperties]; v != 0 {
		if t.e[v].kind != kObject {
			return 0, reject(ruleProperties)
		}
		if t.hasDuplicate(v) {
			return 0, reject(ruleDuplicate)
		}
		for k, pend := v+1, t.next(v); k < pend; k = t.next(k + 1) {
			name, ok := n.propertyName(k)
			if !ok {
				return 0, reject(rulePropertyName)
			}
			cs, err := n.node(k+1, depth+1, false, reachable)
			if err != nil {
				return 0, err
			}
			n.props = append(n.props, propOut{name: name, start: cs, end: len(n.out)})
		}
	}
	required := 0
	if v := slot[kwRequired]; v != 0 {
		c, err := n.checkRequired(v)
		if err != nil {
			return 0, err
		}
		required = c
	}
	itemsStart, itemsEnd := 0, 0
	if v := slot[kwItems]; v != 0 {
		if t.e[v].kind == kArray {
			return 0, reject(ruleTuple)
		}
		cs, err := n.node(v, depth+1, false, false)
		if err != nil {
			return 0, err
		}
		itemsStart, itemsEnd = cs, len(n.out)
	}
	if v := slot[kwEnum]; v != 0 {
		if t.e[v].kind != kArray {
			return 0, reject(ruleEnum)
		}
		if c := t.elements(v); c == 0 || c > MaxEnumValues {
			return 0, reject(ruleEnum)
		}
	}
	var header string
	if v := slot[kwHeader]; v != 0 {
		h, err := n.headerName(v, root, reachable, singleType)
		if err != nil {
			return 0, err
		}
		header = h
	}

	// Written in sorted member order, which is the fixed order below.
	out := len(n.out)
	b := append(n.out, '{')
	w := memberWriter{b: b}
	if v := slot[kwDescription]; v != 0 {
		w.key("description")
		w.b = n.appendString(w.b, v)
	}
	if v := slot[kwEnum]; v != 0 {
		w.key("enum")
		w.b = append(w.b, '[')
		for k, aend := v+1, t.next(v); k < aend; k = t.next(k) {
			if k != v+1 {
				w.b = append(w.b, ',')
			}
			w.b = appendCompact(w.b, t.raw(k))
		}
		w.b = append(w.b, ']')
	}
	if itemsEnd != 0 {
		w.key("items")
		w.b = append(w.b, w.b[itemsStart:itemsEnd]...)
	}
	if slot[kwProperties] != 0 {
		w.key("properties")
		props := n.props[propsBase:]
		slices.SortFunc(props, func(a, b propOut) int { return bytes.Compare(a.name, b.name) })
		w.b = append(w.b, '{')
		for j, p := range props {
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, '"')
			w.b = append(w.b, p.name...)
			w.b = append(w.b, '"', ':')
			w.b = append(w.b, w.b[p.start:p.end]...)
		}
		w.b = append(w.b, '}')
		clear(props)
		n.props = n.props[:propsBase]
	}
	if required > 0 {
		w.key("required")
		w.b = n.appendStrings(w.b, slot[kwRequired])
	}
	if v := slot[kwType]; v != 0 {
		w.key("type")
		if singleType != "" {
			w.b = appendJSONString(w.b, singleType)
		} else {
			w.b = n.appendStrings(w.b, v)
		}
	}
	if slot[kwHeader] != 0 {
		w.key(headerAnnotation)
		w.b = appendJSONString(w.b, header)
	}
	w.b = append(w.b, '}')
	// Move this node's output over its children's, which it now contains.
	size := copy(w.b[base:], w.b[out:])
	n.out = w.b[:base+size]
	return base, nil
}

// memberWriter writes the members of one object, commas included.
type memberWriter struct {
	b    []byte
	more bool
}

func (w *memberWriter) key(k string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

// propertyName returns the decoded name of the property at key entry k and
// whether it is a valid one. The bytes are the input's when it was written
// plainly.
func (n *normalizer) propertyName(k int) ([]byte, bool) {
	e := &n.t.e[k]
	if e.plain {
		name := n.t.b[e.start+1 : e.end-1]
		return name, validNameBytes(name)
	}
	s, ok := n.t.text(k)
	return []byte(s), ok && ValidToolName(s)
}

// validNameAt reports whether the value at entry v is a string decoding to
// a valid name.
func (n *normalizer) validNameAt(v int) bool {
	t := n.t
	e := &t.e[v]
	switch {
	case e.kind != kString:
		return false
	case e.plain:
		return validNameBytes(t.b[e.start+1 : e.end-1])
	}
	s, ok := t.text(v)
	return ok && ValidToolName(s)
}

func validNameBytes(name []byte) bool {
	if len(name) == 0 || len(name) > MaxToolNameLength {
		return false
	}
	for _, c := range name {
		if !toolNameByte(c) {
			return false
		}
	}
	return true
}

// checkType accepts a type name or a non-empty list of distinct names;
// single is the name when exactly one was given as a string. A null, or a
// null element of the list, reads as "" (as encoding/json reads it), which
// is no type name.
func (n *normalizer) checkType(v int) (single string, err error) {
	t := n.t
	switch t.e[v].kind {
	case kString:
		if name, ok := n.knownTypeAt(v); ok {
			return name, nil
		}
		return "", reject(ruleType)
	case kArray:
		var seen [8]string
		c := 0
		for k, end := v+1, t.next(v); k < end; k = t.next(k) {
			name, ok := n.knownTypeAt(k)
			if !ok || slices.Contains(seen[:c], name) {
				return "", reject(ruleType)
			}
			seen[c] = name
			c++
		}
		if c == 0 {
			return "", reject(ruleType)
		}
		return "", nil
	}
	return "", reject(ruleType)
}

// knownTypeAt returns the type name the value at entry v decodes to, as
// the package's own constant, and whether it is a known one. A null reads
// as "" (as encoding/json reads it into a string), which is not; so does
// anything else that is not a string.
func (n *normalizer) knownTypeAt(v int) (string, bool) {
	t := n.t
	e := &t.e[v]
	if e.kind != kString {
		return "", false
	}
	if e.plain {
		return knownType(t.b[e.start+1 : e.end-1])
	}
	s, _ := t.text(v)
	return knownType([]byte(s))
}

func knownType(name []byte) (string, bool) {
	for _, k := range typeNames {
		if string(name) == k {
			return k, true
		}
	}
	return "", false
}

var typeNames = [...]string{"object", "array", "string", "number", "integer", "boolean", "null"}

// checkRequired accepts a list of distinct valid names and returns its
// length. A null or non-string element reads as "", not a valid name.
func (n *normalizer) checkRequired(v int) (int, error) {
	t := n.t
	if t.e[v].kind != kArray {
		return 0, reject(ruleRequired)
	}
	c := 0
	for k, end := v+1, t.next(v); k < end; k = t.next(k) {
		if !n.validNameAt(k) {
			return 0, reject(ruleRequired)
		}
		c++
	}
	switch {
	case c > 1 && c <= 16:
		for k, end := v+1, t.next(v); k < end; k = t.next(k) {
			for p := t.next(k); p < end; p = t.next(p) {
				if t.sameKey(k, p) {
					return 0, reject(ruleRequired)
				}
			}
		}
	case c > 16:
		seen := make(map[string]struct{}, c)
		for k, end := v+1, t.next(v); k < end; k = t.next(k) {
			name, _ := t.text(k)
			if _, dup := seen[name]; dup {
				return 0, reject(ruleRequired)
			}
			seen[name] = struct{}{}
		}
	}
	return c, nil
}

// appendString writes the string (or null, written as "") at entry v as
// encoding/json would re-encode its decoded text.
func (n *normalizer) appendString(dst []byte, v int) []byte {
	t := n.t
	e := &t.e[v]
	switch {
	case e.kind == kNull:
		return append(dst, '"', '"')
	case e.plain:
		// Plain text is printable ASCII without quote or backslash,
		// which the encoder writes as it is.
		return append(dst, t.b[e.start:e.end]...)
	}
	s, _ := t.text(v)
	return appendJSONString(dst, s)
}

// appendStrings writes the array of strings at entry v, re-encoded.
func (n *normalizer) appendStrings(dst []byte, v int) []byte {
	t := n.t
	dst = append(dst, '[')
	for k, end := v+1, t.next(v); k < end; k = t.next(k) {
		if k != v+1 {
			dst = append(dst, ',')
		}
		dst = n.appendString(dst, k)
	}
	return append(dst, ']')
}

// appendCompact appends a validated JSON value without its insignificant
// whitespace, as json.Compact writes it.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case isJSONSpace(c):
			i++
		case c == '"':
			j := i + 1
			for v[j] != '"' {
				if v[j] == '\\' {
					j++
				}
				j++
			}
			dst = append(dst, v[i:j+1]...)
			i = j + 1
		default:
			j := i + 1
			for j < len(v) && !isJSONSpace(v[j]) && v[j] != '"' {
				j++
			}
			dst = append(dst, v[i:j]...)
			i = j
		}
	}
	return dst
}

// headerName validates an x-mcp-header annotation per the 2026-07-28 rules:
// a non-empty RFC 9110 token, unique case-insensitively within the schema, on
// a property reached only through "properties", whose type is string,
// integer or boolean.
func (n *normalizer) headerName(v int, root, reachable bool, singleType string) (string, error) {
	if root || !reachable {
		return "", reject(ruleHeaderAnnotation)
	}
	var name string
	switch n.t.e[v].kind {
	case kString:
		name, _ = n.t.text(v)
	case kNull:
	default:
		return "", reject(ruleHeaderAnnotation)
	}
	if !isToken(name) {
		return "", reject(ruleHeaderAnnotation)
	}
	switch singleType {
	case "string", "integer", "boolean":
	default:
		return "", reject(ruleHeaderAnnotation)
	}
	key := strings.ToLower(name)
	if slices.Contains(n.headers, key) {
		return "", reject(ruleHeaderAnnotation)
	}
	n.headers = append(n.headers, key)
	return name, nil
}

// isToken reports whether s is an RFC 9110 token (1*tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// dialectAt reports whether the value at entry v names a known dialect,
// reading a plain string in place.
func (n *normalizer) dialectAt(v int) bool {
	t := n.t
	e := &t.e[v]
	if e.kind != kString || !e.plain {
		return dialectKnown(t.raw(v))
	}
	s := t.b[e.start+1 : e.end-1]
	s = bytes.TrimSuffix(s, []byte("#"))
	s = bytes.TrimPrefix(s, []byte("https://"))
	s = bytes.TrimPrefix(s, []byte("http://"))
	return knownDialects[string(s)]
}

func dialectKnown(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	s = strings.TrimSuffix(s, "#")
	s = strings.TrimPrefix(s, "https://")
	s = strings.TrimPrefix(s, "http://")
	return knownDialects[s]
}

// mentionsHeaderAnnotation reports whether any object inside raw has an
// x-mcp-header member (escaped spellings included).
func mentionsHeaderAnnotation(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(headerAnnotation)) && !bytes.ContainsRune(raw, '\\') {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		// Undecodable input cannot be shown to be free of the annotation.
		return true
	}
	return hasMember(v, headerAnnotation)
}

func hasMember(v any, key string) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if k == key || hasMember(c, key) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if hasMember(c, key) {
				return true
			}
		}
	}
	return false
}

// appendJSONString quotes s as encoding/json does with HTML escaping off
// (the schema encoder's choice); appendMarshalString, with it on.
func appendJSONString(dst []byte, s string) []byte { return appendQuoted(dst, s, false) }

// appendQuoted quotes s as encoding/json does, escaping the HTML
// characters when html is set, as json.Marshal does. Printable ASCII other
// than the quote, the backslash and (when escaped) the HTML characters
// needs no escape; anything else is left to encoding/json.
func appendQuoted(dst []byte, s string, html bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || html && (c == '<' || c == '>' || c == '&') {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(html)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
