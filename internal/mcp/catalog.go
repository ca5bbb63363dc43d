package mcp

import (
	"context"
	"encoding/json"
)

// listTools walks tools/list from the first page, resuming each request from
// the cursor the previous page returned. It stops with an error at the page
// ceiling while a next page is still announced, on a cursor it has already
// followed, and once more tools were offered than the tool ceiling.
//
// The end of the list differs by era: before 2026-07-28 an absent, null or
// empty nextCursor ends it (the legacy pages only say "missing means done",
// and the SDKs of that era treat "" as done); from 2026-07-28 an empty string
// is a valid cursor that must be followed, and only absent or null ends it.
func (o *operation) listTools(ctx context.Context) ([]json.RawMessage, int, error) {
	const method = "tools/list"
	var (
		all    []json.RawMessage
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
			return nil, 0, err
		}
		m, err := decodeObject(result)
		if err != nil {
			return nil, 0, o.failDetail(KindInvalidResponse, method, "result is malformed")
		}
		var tools []json.RawMessage
		if raw, ok := m["tools"]; !ok || isJSONNull(raw) || json.Unmarshal(raw, &tools) != nil {
			return nil, 0, o.failDetail(KindInvalidResponse, method, "tools is not a list")
		}
		all = append(all, tools...)
		if len(all) > o.ep.MaxTools {
			return nil, 0, &Error{Kind: KindToolLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxTools}
		}
		next, more, err := o.nextCursor(m)
		if err != nil {
			return nil, 0, err
		}
		if !more {
			return all, page, nil
		}
		if seen[next] {
			return nil, 0, o.failDetail(KindRepeatedCursor, method, "")
		}
		seen[next] = true
		if page >= o.ep.MaxPages {
			return nil, 0, &Error{Kind: KindPageLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxPages}
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
	var c string
	if json.Unmarshal(raw, &c) != nil {
		return "", false, o.failDetail(KindInvalidResponse, "tools/list", "nextCursor is not a string")
	}
	if c == "" && o.era != eraModern {
		return "", false, nil
	}
	return c, true, nil
}

// buildCatalog validates every offered definition. A definition that fails a
// rule is skipped with the reason, never repaired; a name offered more than
// once is skipped in every occurrence.
func buildCatalog(raw []json.RawMessage) ([]Tool, []SkippedTool) {
	type entry struct {
		tool   Tool
		name   string
		reason string
	}
	entries := make([]entry, len(raw))
	count := map[string]int{}
	for i, r := range raw {
		t, name, reason := validateTool(r)
		entries[i] = entry{tool: t, name: name, reason: reason}
		if ValidToolName(name) {
			count[name]++
		}
	}
	var (
		tools   []Tool
		skipped []SkippedTool
	)
	for _, e := range entries {
		reason := e.reason
		if reason == "" && count[e.name] > 1 {
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

// validateTool checks one definition; reason is "" when it is importable.
func validateTool(raw json.RawMessage) (Tool, string, string) {
	m, err := decodeObject(raw)
	if err != nil {
		return Tool{}, "", SkipInvalidDefinition
	}
	var name string
	if json.Unmarshal(m["name"], &name) != nil {
		return Tool{}, "", SkipInvalidName
	}
	if !ValidToolName(name) {
		return Tool{}, name, SkipInvalidName
	}
	t := Tool{Name: name}
	for key, dst := range map[string]*string{"title": &t.Title, "description": &t.Description} {
		if v, ok := m[key]; ok && !isJSONNull(v) {
			if json.Unmarshal(v, dst) != nil {
				return Tool{}, name, SkipInvalidDefinition
			}
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
	var a struct {
		Title           *string `json:"title"`
		ReadOnlyHint    *bool   `json:"readOnlyHint"`
		DestructiveHint *bool   `json:"destructiveHint"`
		IdempotentHint  *bool   `json:"idempotentHint"`
		OpenWorldHint   *bool   `json:"openWorldHint"`
	}
	if _, err := decodeObject(raw); err != nil {
		return nil, err
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
