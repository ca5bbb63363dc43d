package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// listTools walks tools/list from the first page, resuming each request from
// the cursor the previous page returned. It stops with an error at the page
// ceiling while a next page is still announced, on a cursor it has already
// followed, once more tools were offered than the tool ceiling, and once the
// definitions kept so far exceed the catalog byte budget.
//
// Each page is validated and reduced to the compact definitions the catalog
// keeps as soon as it arrives; its raw bytes are not referenced afterwards,
// so an import holds one raw page at a time, never the whole raw list.
//
// The end of the list differs by era: before 2026-07-28 an absent, null or
// empty nextCursor ends it (the legacy pages only say "missing means done",
// and the SDKs of that era treat "" as done); from 2026-07-28 an empty string
// is a valid cursor that must be followed, and only absent or null ends it.
func (o *operation) listTools(ctx context.Context, b *catalogBuilder) (int, error) {
	const method = "tools/list"
	var (
		cursor *string
		seen   = map[string]bool{}
	)
	for page := 1; ; page++ {
		params := map[string]any{}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		result, err := o.request(ctx, o.workLeg(method, params))
		if err != nil {
			return 0, err
		}
		m, err := decodeObject(result)
		if err != nil {
			return 0, o.failDetail(KindInvalidResponse, method, "result is malformed")
		}
		raw, ok := m["tools"]
		if !ok {
			return 0, o.failDetail(KindInvalidResponse, method, "tools is not a list")
		}
		tools, ok := decodeArray(raw)
		if !ok {
			return 0, o.failDetail(KindInvalidResponse, method, "tools is not a list")
		}
		if b.offered+len(tools) > o.ep.MaxTools {
			return 0, &Error{Kind: KindToolLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxTools}
		}
		for _, t := range tools {
			if !b.add(t) {
				return 0, &Error{Kind: KindCatalogTooLarge, Server: o.ep.Name, Method: method, Limit: int(b.maxBytes)}
			}
		}
		next, more, err := o.nextCursor(m)
		if err != nil {
			return 0, err
		}
		if !more {
			return page, nil
		}
		if seen[next] {
			return 0, o.failDetail(KindRepeatedCursor, method, "")
		}
		seen[next] = true
		if page >= o.ep.MaxPages {
			return 0, &Error{Kind: KindPageLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxPages}
		}
		cursor = &next
	}
}

// nextCursor reads nextCursor with the era's end-of-list rule.
func (o *operation) nextCursor(m map[string]json.RawMessage) (string, bool, error) {
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

// catalogBuilder turns offered definitions into the catalog one at a time.
// It keeps only validated, normalised definitions (plus a name and reason per
// skipped one), counts the bytes it keeps against the catalog budget, and
// refuses any single definition larger than the per-definition bound.
type catalogBuilder struct {
	// maxBytes is the budget for all kept definitions together.
	maxBytes int64
	// maxDefinition is the bound on one kept definition.
	maxDefinition int64

	offered int
	stored  int64
	entries []catalogEntry
	count   map[string]int
}

type catalogEntry struct {
	tool   Tool
	name   string
	reason string
}

func newCatalogBuilder(maxBytes, maxDefinition int64) *catalogBuilder {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxCatalogBytes
	}
	if maxDefinition <= 0 {
		maxDefinition = DefaultMaxDefinitionBytes
	}
	return &catalogBuilder{maxBytes: maxBytes, maxDefinition: maxDefinition, count: map[string]int{}}
}

// add validates one definition and keeps it, or records why it was skipped.
// It returns false once the kept definitions exceed the budget.
func (b *catalogBuilder) add(raw json.RawMessage) bool {
	b.offered++
	t, name, reason := validateTool(raw)
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

// finish applies the rules that need the whole list: a name offered more than
// once is skipped in every occurrence.
func (b *catalogBuilder) finish() ([]Tool, []SkippedTool) {
	var (
		tools   []Tool
		skipped []SkippedTool
	)
	for _, e := range b.entries {
		reason := e.reason
		if reason == "" && b.count[e.name] > 1 {
			reason = SkipDuplicateName
		}
		if reason != "" {
			skipped = append(skipped, SkippedTool{Name: printableName(e.name), Reason: reason})
			continue
		}
		tools = append(tools, e.tool)
	}
	return tools, skipped
}

// DefinitionSize is what one definition costs as stored: its name, title,
// description, annotation title and normalised input schema (nested
// descriptions included, since they survive normalisation).
func DefinitionSize(t Tool) int64 {
	n := len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema)
	if t.Annotations != nil {
		n += len(t.Annotations.Title)
	}
	return int64(n)
}

// validateTool checks one definition; reason is "" when it is importable.
func validateTool(raw json.RawMessage) (Tool, string, string) {
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
	return t, name, ""
}

func parseAnnotations(raw json.RawMessage) (*ToolAnnotations, error) {
	m, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	if out, ok := parseAnnotationsFast(m); ok {
		return out, nil
	}
	var a struct {
		Title           *string `json:"title"`
		ReadOnlyHint    *bool   `json:"readOnlyHint"`
		DestructiveHint *bool   `json:"destructiveHint"`
		IdempotentHint  *bool   `json:"idempotentHint"`
		OpenWorldHint   *bool   `json:"openWorldHint"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	out := &ToolAnnotations{
		ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint,
	}
	if a.Title != nil {
		out.Title = *a.Title
	}
	return out, nil
}

// annotationKeys are the member names parseAnnotations reads.
var annotationKeys = [...]string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// parseAnnotationsFast decodes annotations whose member names are exactly the
// known ones (or unrelated), without reflection. ok is false when the slow
// path must decide: encoding/json matches names case-insensitively, so a
// member that differs from a known name only in case, a non-ASCII name, or a
// value of the wrong type is left to it.
func parseAnnotationsFast(m map[string]json.RawMessage) (*ToolAnnotations, bool) {
	for k := range m {
		for _, known := range annotationKeys {
			if k != known && strings.EqualFold(k, known) {
				return nil, false
			}
		}
		for i := 0; i < len(k); i++ {
			if k[i] >= utf8.RuneSelf {
				return nil, false
			}
		}
	}
	out := &ToolAnnotations{}
	if v, ok := m["title"]; ok && !isJSONNull(v) {
		s, ok := decodeString(v)
		if !ok {
			return nil, false
		}
		out.Title = s
	}
	for _, f := range [...]struct {
		key string
		dst **bool
	}{{"readOnlyHint", &out.ReadOnlyHint}, {"destructiveHint", &out.DestructiveHint}, {"idempotentHint", &out.IdempotentHint}, {"openWorldHint", &out.OpenWorldHint}} {
		v, ok := m[f.key]
		if !ok || isJSONNull(v) {
			continue
		}
		switch string(v) {
		case "true":
			b := true
			*f.dst = &b
		case "false":
			b := false
			*f.dst = &b
		default:
			return nil, false
		}
	}
	return out, true
}
