package mcp

// The decoder as it was before the tape (see tape.go): the schema
// normaliser over nested maps, the definition check and the JSON-RPC
// envelope over decodeObject, and the tools/list page reading. It is kept,
// unchanged except for names and the order properties are visited in, as the
// oracle the differential tests and fuzzers hold the current decoder to:
// what is accepted, what is refused and why, and the normalised bytes (the
// input of every approved definition hash) must stay the same.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
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
)

func legacyNormalizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	n := &legacyNormalizer{headers: make(map[string]bool)}
	out, err := n.legacyNode(raw, 1, true, true)
	if err != nil {
		return nil, err
	}
	b, err := legacyAppendSchemaJSON(nil, out)
	if err != nil {
		return nil, &SchemaError{Rule: ruleNotObject}
	}
	if len(b) > MaxNormalizedSchemaBytes {
		return nil, &SchemaError{Rule: ruleSize}
	}
	return json.RawMessage(b), nil
}

type legacyNormalizer struct {
	nodes   int
	headers map[string]bool // lower-cased x-mcp-header names seen
}

// node normalises one schema. reachable is true while the path from the root
// consists only of "properties" steps (where x-mcp-header may appear).
func (n *legacyNormalizer) legacyNode(raw json.RawMessage, depth int, root, reachable bool) (map[string]any, error) {
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
		v, single, err := legacyNormalizeType(t)
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
		props, err := n.legacyProperties(p, depth, reachable)
		if err != nil {
			return nil, err
		}
		out["properties"] = props
	}
	if r, ok := m["required"]; ok {
		req, err := legacyNormalizeRequired(r)
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
		child, err := n.legacyNode(it, depth+1, false, false)
		if err != nil {
			return nil, err
		}
		out["items"] = child
	}
	if e, ok := m["enum"]; ok {
		vals, err := legacyNormalizeEnum(e)
		if err != nil {
			return nil, err
		}
		out["enum"] = vals
	}
	if h, ok := m[headerAnnotation]; ok {
		name, err := n.legacyHeaderName(h, root, reachable, singleType)
		if err != nil {
			return nil, err
		}
		out[headerAnnotation] = name
	}
	return out, nil
}

func (n *legacyNormalizer) legacyProperties(raw json.RawMessage, depth int, reachable bool) (map[string]any, error) {
	m, err := decodeObject(raw)
	if err != nil {
		if errors.Is(err, errDuplicateMember) {
			return nil, reject(ruleDuplicate)
		}
		return nil, reject(ruleProperties)
	}
	props := make(map[string]any, len(m))
	// The old reader ranged over the map; the oracle takes the members in
	// their order, so that the rule reported for a schema breaking several
	// is the one the tape reader reports. Accepted output does not depend
	// on the order.
	for _, name := range memberOrder(raw) {
		sub := m[name]
		if !ValidToolName(name) {
			return nil, reject(rulePropertyName)
		}
		child, err := n.legacyNode(sub, depth+1, false, reachable)
		if err != nil {
			return nil, err
		}
		props[name] = child
	}
	return props, nil
}

// normalizeType accepts a type name or a non-empty list of distinct names;
// single is the name when exactly one was given as a string.
func legacyNormalizeType(raw json.RawMessage) (v any, single string, err error) {
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

func legacyNormalizeRequired(raw json.RawMessage) ([]string, error) {
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

func legacyNormalizeEnum(raw json.RawMessage) ([]json.RawMessage, error) {
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
func (n *legacyNormalizer) legacyHeaderName(raw json.RawMessage, root, reachable bool, singleType string) (string, error) {
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

// appendSchemaJSON appends v, a value built by the normaliser, as
// encoding/json would encode it with HTML escaping off: objects with their
// members sorted by name, compact, no trailing newline. It exists because
// encoding/json's reflection over nested map[string]any was a large share
// of an import's CPU time; TestNormalizeSchemaCanonical checks that the
// bytes are the same as encoding/json's.
func legacyAppendSchemaJSON(dst []byte, v any) ([]byte, error) {
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
			if dst, err = legacyAppendSchemaJSON(dst, t[k]); err != nil {
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

func legacyValidateTool(raw json.RawMessage) (Tool, string, string) {
	m, err := decodeObject(raw)
	if err != nil {
		return Tool{}, "", SkipInvalidDefinition
	}
	// A missing, null or non-string name is an invalid one.
	name, ok := decodeString(m["name"])
	if !ok {
		return Tool{}, "", SkipInvalidName
	}
	if !ValidToolName(name) {
		return Tool{}, name, SkipInvalidName
	}
	t := Tool{Name: name}
	for _, f := range [...]struct {
		key string
		dst *string
	}{{"title", &t.Title}, {"description", &t.Description}} {
		if v, ok := m[f.key]; ok && !isJSONNull(v) {
			s, ok := decodeString(v)
			if !ok {
				return Tool{}, name, SkipInvalidDefinition
			}
			*f.dst = s
		}
	}
	if v, ok := m["annotations"]; ok && !isJSONNull(v) {
		a, err := parseAnnotations(v)
		if err != nil {
			return Tool{}, name, SkipInvalidDefinition
		}
		t.Annotations = a
	}
	schema, ok := m["inputSchema"]
	if !ok || isJSONNull(schema) {
		return Tool{}, name, SkipMissingSchema
	}
	norm, err := NormalizeSchema(schema)
	if err != nil {
		return Tool{}, name, SkipInvalidSchema
	}
	t.InputSchema = norm
	if out, ok := m["outputSchema"]; ok && !isJSONNull(out) {
		if _, err := decodeObject(out); err != nil || legacyHasDuplicate(out) {
			return Tool{}, name, SkipInvalidSchema
		}
		canon, ok := CanonicalJSON(out, MaxOutputSchemaBytes)
		if !ok {
			return Tool{}, name, SkipInvalidSchema
		}
		t.OutputSchema = canon
	}
	return t, name, ""
}

// legacyHasDuplicate reports whether any object in raw, a JSON value,
// repeats a member name, by reading its tokens.
func legacyHasDuplicate(raw json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		keys  map[string]bool
		isObj bool
		inKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.isObj {
					top.inKey = true
				}
				stack = append(stack, &frame{keys: map[string]bool{}, isObj: true, inKey: true})
				continue
			case '[':
				if top != nil && top.isObj {
					top.inKey = true
				}
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			if top != nil && top.isObj && top.inKey {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.inKey = false
				continue
			}
		}
		if top != nil && top.isObj {
			top.inKey = true
		}
	}
}

// legacyIsJSONObject reports whether raw starts an object.
func legacyIsJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

func legacyParseMessage(raw []byte, wantID string) (*message, error) {
	m, err := decodeObject(raw)
	switch {
	case err == nil:
	case errors.Is(err, errBatch):
		return nil, protoErr(KindInvalidResponse, "batch responses are not accepted")
	case errors.Is(err, errDuplicateMember):
		return nil, protoErr(KindInvalidResponse, "message repeats a member")
	case errors.Is(err, errTrailing):
		return nil, protoErr(KindInvalidResponse, "data after the message")
	default:
		return nil, protoErr(KindNotMCP, "body is not a JSON-RPC message")
	}
	if version, ok := decodeString(m["jsonrpc"]); !ok || version != "2.0" {
		return nil, protoErr(KindInvalidResponse, `"jsonrpc" is not "2.0"`)
	}
	if rawMethod, ok := m["method"]; ok {
		if _, ok := decodeString(rawMethod); !ok && !isJSONNull(rawMethod) {
			return nil, protoErr(KindInvalidResponse, "method is not a string")
		}
		if id, ok := m["id"]; ok && !isJSONNull(id) {
			return &message{kind: kindServerRequest}, nil
		}
		return &message{kind: kindNotification}, nil
	}
	rawID, ok := m["id"]
	if !ok {
		return nil, protoErr(KindInvalidResponse, "response has no id")
	}
	if id, ok := decodeString(rawID); !ok || id != wantID {
		return nil, protoErr(KindInvalidResponse, "response id does not match the request")
	}
	rawResult, hasResult := m["result"]
	rawErr, hasErr := m["error"]
	switch {
	case hasResult && hasErr:
		return nil, protoErr(KindInvalidResponse, "response has both result and error")
	case !hasResult && !hasErr:
		return nil, protoErr(KindInvalidResponse, "response has neither result nor error")
	case hasResult:
		if !legacyIsJSONObject(rawResult) {
			return nil, protoErr(KindInvalidResponse, "result is not an object")
		}
		return &message{kind: kindResponse, result: rawResult}, nil
	default:
		e, perr := parseErrorObject(rawErr)
		if perr != nil {
			return nil, perr
		}
		return &message{kind: kindResponse, err: e}, nil
	}
}

// memberOrder returns the decoded member names of the JSON object raw in
// the order they appear.
func memberOrder(raw []byte) []string {
	s := jsonScanner{b: raw}
	s.skipSpace()
	s.i++ // '{'
	var names []string
	for {
		s.skipSpace()
		if s.i >= len(raw) || raw[s.i] == '}' {
			return names
		}
		q, ok := s.str()
		if !ok {
			return names
		}
		name, _ := unquote(q)
		names = append(names, name)
		s.skipSpace()
		s.i++ // ':'
		if !s.value(1) {
			return names
		}
		s.skipSpace()
		if s.i < len(raw) && raw[s.i] == ',' {
			s.i++
		}
	}
}

// legacyReadPage is the old listTools' handling of one page's result.
func (o *operation) legacyReadPage(result json.RawMessage, b *legacyBuilder) (string, bool, error) {
	const method = "tools/list"
	m, err := decodeObject(result)
	if err != nil {
		return "", false, o.failDetail(KindInvalidResponse, method, "result is malformed")
	}
	raw, ok := m["tools"]
	if !ok {
		return "", false, o.failDetail(KindInvalidResponse, method, "tools is not a list")
	}
	tools, ok := decodeArray(raw)
	if !ok {
		return "", false, o.failDetail(KindInvalidResponse, method, "tools is not a list")
	}
	if b.offered+len(tools) > o.ep.MaxTools {
		return "", false, &Error{Kind: KindToolLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxTools}
	}
	for _, t := range tools {
		if !b.add(t) {
			return "", false, &Error{Kind: KindCatalogTooLarge, Server: o.ep.Name, Method: method, Limit: int(b.maxBytes)}
		}
	}
	return o.legacyNextCursor(m)
}

func (o *operation) legacyNextCursor(m map[string]json.RawMessage) (string, bool, error) {
	raw, ok := m["nextCursor"]
	if !ok || isJSONNull(raw) {
		return "", false, nil
	}
	c, ok := decodeString(raw)
	if !ok {
		return "", false, o.failDetail(KindInvalidResponse, "tools/list", "nextCursor is not a string")
	}
	if c == "" && o.era != eraModern {
		return "", false, nil
	}
	return c, true, nil
}

// legacyCheckResultType is the old resultType check over the result's
// bytes.
func (o *operation) legacyCheckResultType(method string, result json.RawMessage) error {
	m, err := decodeObject(result)
	if err != nil {
		return o.failDetail(KindInvalidResponse, method, "result is malformed")
	}
	raw, ok := m["resultType"]
	if !ok {
		return nil
	}
	var rt string
	if json.Unmarshal(raw, &rt) != nil {
		return o.failDetail(KindInvalidResponse, method, "resultType is not a string")
	}
	switch rt {
	case "complete":
		return nil
	case "input_required":
		return o.failDetail(KindInputRequired, method, "")
	default:
		return o.failDetail(KindInvalidResponse, method, "unknown resultType")
	}
}

// legacyBuilder is the old catalogBuilder's add over raw definitions.
type legacyBuilder struct{ catalogBuilder }

func (b *legacyBuilder) add(raw json.RawMessage) bool {
	b.offered++
	t, name, reason := legacyValidateTool(raw)
	if reason == "" && DefinitionSize(t) > b.maxDefinition {
		// A skipped definition is not kept, so it is not charged either;
		// only its name stays, to say why.
		t, reason = Tool{}, SkipDefinitionTooLarge
	}
	if ValidToolName(name) {
		b.count[name]++
	}
	if reason != "" {
		b.entries = append(b.entries, catalogEntry{name: name, reason: reason})
		return true
	}
	b.stored += DefinitionSize(t)
	b.entries = append(b.entries, catalogEntry{tool: t, name: name})
	return b.stored <= b.maxBytes
}
