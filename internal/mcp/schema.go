package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
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

// Keywords whose meaning cannot be kept by dropping them: a reference needs
// resolving, a composition or condition changes which inputs are valid, a
// tuple changes what "items" means.
var (
	referenceKeywords   = []string{"$ref", "$dynamicRef", "$recursiveRef"}
	compositionKeywords = []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else"}
	// Schema-valued keywords that are dropped; they are searched for a
	// misplaced x-mcp-header annotation, which makes the whole tool invalid.
	droppedSchemaKeywords = []string{
		"additionalProperties", "patternProperties", "propertyNames", "contains",
		"unevaluatedItems", "unevaluatedProperties", "dependentSchemas",
		"contentSchema", "additionalItems", "$defs", "definitions",
	}
	knownTypes = map[string]bool{
		"object": true, "array": true, "string": true, "number": true,
		"integer": true, "boolean": true, "null": true,
	}
	// Dialects whose meaning of the kept keywords is the one emitted.
	knownDialects = map[string]bool{
		"json-schema.org/draft-04/schema":      true,
		"json-schema.org/draft-06/schema":      true,
		"json-schema.org/draft-07/schema":      true,
		"json-schema.org/draft/2019-09/schema": true,
		"json-schema.org/draft/2020-12/schema": true,
	}
)

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
	n := &normalizer{headers: make(map[string]bool)}
	out, err := n.node(raw, 1, true, true)
	if err != nil {
		return nil, err
	}
	b, err := appendSchemaJSON(nil, out)
	if err != nil {
		return nil, &SchemaError{Rule: ruleNotObject}
	}
	if len(b) > MaxNormalizedSchemaBytes {
		return nil, &SchemaError{Rule: ruleSize}
	}
	return json.RawMessage(b), nil
}

type normalizer struct {
	nodes   int
	headers map[string]bool // lower-cased x-mcp-header names seen
}

func reject(rule string) error { return &SchemaError{Rule: rule} }

// node normalises one schema. reachable is true while the path from the root
// consists only of "properties" steps (where x-mcp-header may appear).
func (n *normalizer) node(raw json.RawMessage, depth int, root, reachable bool) (map[string]any, error) {
	if depth > MaxSchemaDepth {
		return nil, reject(ruleDepth)
	}
	n.nodes++
	if n.nodes > MaxSchemaNodes {
		return nil, reject(ruleNodes)
	}
	trimmed := bytes.TrimSpace(raw)
	if string(trimmed) == "true" || string(trimmed) == "false" {
		if root {
			return nil, reject(ruleNotObject)
		}
		return nil, reject(ruleBooleanSchema)
	}
	m, err := decodeObject(raw)
	if err != nil {
		if errors.Is(err, errDuplicateMember) {
			return nil, reject(ruleDuplicate)
		}
		return nil, reject(ruleNotObject)
	}
	for _, k := range referenceKeywords {
		if _, ok := m[k]; ok {
			return nil, reject(ruleReference)
		}
	}
	for _, k := range compositionKeywords {
		if _, ok := m[k]; ok {
			return nil, reject(ruleComposition)
		}
	}
	if _, ok := m["prefixItems"]; ok {
		return nil, reject(ruleTuple)
	}
	if d, ok := m["$schema"]; ok {
		if !dialectKnown(d) {
			return nil, reject(ruleDialect)
		}
	}
	for _, k := range droppedSchemaKeywords {
		if v, ok := m[k]; ok && mentionsHeaderAnnotation(v) {
			return nil, reject(ruleHeaderAnnotation)
		}
	}

	out := make(map[string]any)
	var singleType string
	if t, ok := m["type"]; ok {
		v, single, err := normalizeType(t)
		if err != nil {
			return nil, err
		}
		out["type"] = v
		singleType = single
	}
	if root && singleType != "object" {
		return nil, reject(ruleRootType)
	}
	if d, ok := m["description"]; ok {
		s, ok := decodeString(d)
		if !ok && !isJSONNull(d) {
			return nil, reject(ruleDescription)
		}
		out["description"] = s
	}
	if p, ok := m["properties"]; ok {
		props, err := n.properties(p, depth, reachable)
		if err != nil {
			return nil, err
		}
		out["properties"] = props
	}
	if r, ok := m["required"]; ok {
		req, err := normalizeRequired(r)
		if err != nil {
			return nil, err
		}
		if len(req) > 0 {
			out["required"] = req
		}
	}
	if it, ok := m["items"]; ok {
		if t := bytes.TrimSpace(it); len(t) > 0 && t[0] == '[' {
			return nil, reject(ruleTuple)
		}
		child, err := n.node(it, depth+1, false, false)
		if err != nil {
			return nil, err
		}
		out["items"] = child
	}
	if e, ok := m["enum"]; ok {
		vals, err := normalizeEnum(e)
		if err != nil {
			return nil, err
		}
		out["enum"] = vals
	}
	if h, ok := m[headerAnnotation]; ok {
		name, err := n.headerName(h, root, reachable, singleType)
		if err != nil {
			return nil, err
		}
		out[headerAnnotation] = name
	}
	return out, nil
}

func (n *normalizer) properties(raw json.RawMessage, depth int, reachable bool) (map[string]any, error) {
	m, err := decodeObject(raw)
	if err != nil {
		if errors.Is(err, errDuplicateMember) {
			return nil, reject(ruleDuplicate)
		}
		return nil, reject(ruleProperties)
	}
	props := make(map[string]any, len(m))
	for name, sub := range m {
		if !ValidToolName(name) {
			return nil, reject(rulePropertyName)
		}
		child, err := n.node(sub, depth+1, false, reachable)
		if err != nil {
			return nil, err
		}
		props[name] = child
	}
	return props, nil
}

// normalizeType accepts a type name or a non-empty list of distinct names;
// single is the name when exactly one was given as a string.
func normalizeType(raw json.RawMessage) (v any, single string, err error) {
	if s, ok := decodeString(raw); ok || isJSONNull(raw) {
		if !knownTypes[s] {
			return nil, "", reject(ruleType)
		}
		return s, s, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, "", reject(ruleType)
	}
	seen := make(map[string]bool, len(list))
	for _, t := range list {
		if !knownTypes[t] || seen[t] {
			return nil, "", reject(ruleType)
		}
		seen[t] = true
	}
	return list, "", nil
}

func normalizeRequired(raw json.RawMessage) ([]string, error) {
	elems, ok := decodeArray(raw)
	if !ok {
		return nil, reject(ruleRequired)
	}
	list := make([]string, 0, len(elems))
	seen := make(map[string]bool, len(elems))
	for _, e := range elems {
		// A null element reads as "" in encoding/json: not a valid name.
		name, _ := decodeString(e)
		list = append(list, name)
		if !ValidToolName(name) || seen[name] {
			return nil, reject(ruleRequired)
		}
		seen[name] = true
	}
	return list, nil
}

func normalizeEnum(raw json.RawMessage) ([]json.RawMessage, error) {
	var list []json.RawMessage
	if isJSONNull(raw) || json.Unmarshal(raw, &list) != nil || len(list) == 0 || len(list) > MaxEnumValues {
		return nil, reject(ruleEnum)
	}
	out := make([]json.RawMessage, len(list))
	for i, v := range list {
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, reject(ruleEnum)
		}
		out[i] = buf.Bytes()
	}
	return out, nil
}

// headerName validates an x-mcp-header annotation per the 2026-07-28 rules:
// a non-empty RFC 9110 token, unique case-insensitively within the schema, on
// a property reached only through "properties", whose type is string,
// integer or boolean.
func (n *normalizer) headerName(raw json.RawMessage, root, reachable bool, singleType string) (string, error) {
	var name string
	if root || !reachable || json.Unmarshal(raw, &name) != nil || !isToken(name) {
		return "", reject(ruleHeaderAnnotation)
	}
	switch singleType {
	case "string", "integer", "boolean":
	default:
		return "", reject(ruleHeaderAnnotation)
	}
	key := strings.ToLower(name)
	if n.headers[key] {
		return "", reject(ruleHeaderAnnotation)
	}
	n.headers[key] = true
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

// appendSchemaJSON appends v, a value built by the normaliser, as
// encoding/json would encode it with HTML escaping off: objects with their
// members sorted by name, compact, no trailing newline. It exists because
// encoding/json's reflection over nested map[string]any was a large share
// of an import's CPU time; TestNormalizeSchemaCanonical checks that the
// bytes are the same as encoding/json's.
func appendSchemaJSON(dst []byte, v any) ([]byte, error) {
	var err error
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, err = appendSchemaJSON(dst, t[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case string:
		return appendJSONString(dst, t), nil
	case []string:
		dst = append(dst, '[')
		for i, s := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, s)
		}
		return append(dst, ']'), nil
	case []json.RawMessage:
		// Enum values were compacted by normalizeEnum; encoding/json would
		// only compact them again.
		dst = append(dst, '[')
		for i, r := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, r...)
		}
		return append(dst, ']'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...), nil
}

// appendJSONString quotes s as encoding/json does with HTML escaping off.
// Printable ASCII other than the quote and the backslash needs no escape;
// anything else is left to encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
