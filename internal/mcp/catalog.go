package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
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
		msg, err := o.requestMessage(ctx, o.workLeg(method, params))
		if err != nil {
			return 0, err
		}
		next, more, err := o.readPage(msg, b)
		// Everything kept from the page was copied out of it.
		msg.release()
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

// readPage validates one tools/list result, hands its definitions to the
// builder and returns the cursor of the next page, if any. It reads the tape
// the message was indexed into, so the page's bytes are not scanned again.
func (o *operation) readPage(msg *message, b *catalogBuilder) (string, bool, error) {
	const method = "tools/list"
	t, r := msg.tape, msg.resultAt
	if t.hasDuplicate(r) {
		return "", false, o.failDetail(KindInvalidResponse, method, "result is malformed")
	}
	tools := t.member(r, "tools")
	if tools < 0 || t.e[tools].kind != kArray {
		return "", false, o.failDetail(KindInvalidResponse, method, "tools is not a list")
	}
	n := t.elements(tools)
	if b.offered+n > o.ep.MaxTools {
		return "", false, &Error{Kind: KindToolLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxTools}
	}
	b.entries = slices.Grow(b.entries, n)
	for k, end := tools+1, t.next(tools); k < end; k = t.next(k) {
		if !b.addAt(t, k) {
			return "", false, &Error{Kind: KindCatalogTooLarge, Server: o.ep.Name, Method: method, Limit: int(b.maxBytes)}
		}
	}
	b.noteTTL(t, t.member(r, "ttlMs"))
	return o.nextCursor(t, t.member(r, "nextCursor"))
}

// noteTTL keeps the shortest ttlMs of the pages read. The value is a hint:
// one that is not a non-negative number is ignored, not refused.
func (b *catalogBuilder) noteTTL(t *tape, v int) {
	if v < 0 || t.e[v].kind != kNumber {
		return
	}
	var ms float64
	if json.Unmarshal(t.raw(v), &ms) != nil || ms < 0 {
		return
	}
	d := MaxTTL
	if ms < float64(MaxTTL/time.Millisecond) {
		d = time.Duration(ms * float64(time.Millisecond))
	}
	if !b.ttlSeen || d < b.ttl {
		b.ttl, b.ttlSeen = d, true
	}
}

// nextCursor reads nextCursor (the value at entry v, -1 when absent) with
// the era's end-of-list rule.
func (o *operation) nextCursor(t *tape, v int) (string, bool, error) {
	if v < 0 || t.e[v].kind == kNull {
		return "", false, nil
	}
	c, ok := t.stringAt(v)
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
	// norm is the schema normaliser's scratch space, kept for the import.
	norm *normalizer
	// ttl is the shortest ttlMs of the pages read so far, if any said.
	ttl     time.Duration
	ttlSeen bool
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

// addAt validates the definition at entry i of t and keeps it, or records
// why it was skipped. It returns false once the kept definitions exceed the
// budget.
func (b *catalogBuilder) addAt(tp *tape, i int) bool {
	b.offered++
	if b.norm == nil {
		b.norm = getNormalizer()
	}
	t, name, reason := validateToolAt(b.norm, tp, i)
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
	if b.norm != nil {
		putNormalizer(b.norm)
		b.norm = nil
	}
	kept := 0
	for _, e := range b.entries {
		if e.reason == "" {
			kept++
		}
	}
	var (
		tools   []Tool
		skipped []SkippedTool
	)
	if kept > 0 {
		tools = make([]Tool, 0, kept)
	}
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
// descriptions included, since they survive normalisation), and its output
// schema.
func DefinitionSize(t Tool) int64 {
	n := len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema)
	if t.Annotations != nil {
		n += len(t.Annotations.Title)
	}
	return int64(n)
}

// validateToolAt checks the definition at entry i of t; reason is "" when
// it is importable. The checks run in a fixed order, so a definition with
// several faults is always skipped for the same one: the definition's
// shape, the name, title and description, annotations, the schema.
func validateToolAt(n *normalizer, t *tape, i int) (Tool, string, string) {
	if t.e[i].kind != kObject || t.hasDuplicate(i) {
		return Tool{}, "", SkipInvalidDefinition
	}
	nameAt, titleAt, descAt, annAt, schemaAt, outAt, execAt := -1, -1, -1, -1, -1, -1, -1
	for k, end := i+1, t.next(i); k < end; k = t.next(k + 1) {
		var key []byte
		if e := &t.e[k]; e.plain {
			key = t.b[e.start+1 : e.end-1]
		} else {
			s, _ := t.text(k)
			key = []byte(s)
		}
		switch string(key) {
		case "name":
			nameAt = k + 1
		case "title":
			titleAt = k + 1
		case "description":
			descAt = k + 1
		case "annotations":
			annAt = k + 1
		case "inputSchema":
			schemaAt = k + 1
		case "outputSchema":
			outAt = k + 1
		case "execution":
			execAt = k + 1
		}
	}
	// A missing, null or non-string name is an invalid one.
	if nameAt < 0 {
		return Tool{}, "", SkipInvalidName
	}
	name, ok := t.stringAt(nameAt)
	if !ok {
		return Tool{}, "", SkipInvalidName
	}
	if !ValidToolName(name) {
		return Tool{}, name, SkipInvalidName
	}
	tool := Tool{Name: name}
	for _, f := range [...]struct {
		at  int
		dst *string
	}{{titleAt, &tool.Title}, {descAt, &tool.Description}} {
		if f.at >= 0 && t.e[f.at].kind != kNull {
			s, ok := t.stringAt(f.at)
			if !ok {
				return Tool{}, name, SkipInvalidDefinition
			}
			*f.dst = s
		}
	}
	if annAt >= 0 && t.e[annAt].kind != kNull {
		a, err := parseAnnotationsAt(t, annAt)
		if err != nil {
			return Tool{}, name, SkipInvalidDefinition
		}
		tool.Annotations = a
	}
	if schemaAt < 0 || t.e[schemaAt].kind == kNull {
		return Tool{}, name, SkipMissingSchema
	}
	norm, err := n.normalize(t, schemaAt)
	if err != nil {
		return Tool{}, name, SkipInvalidSchema
	}
	tool.InputSchema = norm
	if outAt >= 0 && t.e[outAt].kind != kNull {
		out, ok := outputSchemaAt(t, outAt)
		if !ok {
			return Tool{}, name, SkipInvalidSchema
		}
		tool.OutputSchema = out
	}
	tool.TaskSupport = taskSupportAt(t, execAt)
	return tool, name, ""
}

// taskSupportAt reads execution.taskSupport of the execution object at
// entry i (-1: none): one of the three values, or "" for anything else,
// which a client reads as forbidden.
func taskSupportAt(t *tape, i int) string {
	if i < 0 || t.e[i].kind != kObject || t.hasDuplicate(i) {
		return ""
	}
	v := t.member(i, "taskSupport")
	if v < 0 {
		return ""
	}
	s, ok := t.stringAt(v)
	if !ok {
		return ""
	}
	switch s {
	case "forbidden", "optional", "required":
		return s
	}
	return ""
}

// parseAnnotationsAt reads the annotations at entry i. Annotations whose
// member names are exactly the known ones (or unrelated) and whose values
// have the expected types are read from the tape; anything else is left to
// parseAnnotations, which decides as encoding/json would.
func parseAnnotationsAt(t *tape, i int) (*ToolAnnotations, error) {
	if t.e[i].kind != kObject || t.hasDuplicate(i) {
		return nil, errNotObject
	}
	// One allocation holds the annotations and the hints they point to.
	store := &struct {
		ToolAnnotations
		hints [4]bool
	}{}
	out := &store.ToolAnnotations
	for k, end := i+1, t.next(i); k < end; k = t.next(k + 1) {
		if !t.e[k].plain {
			return parseAnnotations(t.raw(i))
		}
		key := t.b[t.e[k].start+1 : t.e[k].end-1]
		v := k + 1
		var (
			dst  **bool
			slot int
		)
		switch string(key) {
		case "title":
			switch t.e[v].kind {
			case kNull:
			case kString:
				out.Title, _ = t.text(v)
			default:
				return parseAnnotations(t.raw(i))
			}
			continue
		case "readOnlyHint":
			dst, slot = &out.ReadOnlyHint, 0
		case "destructiveHint":
			dst, slot = &out.DestructiveHint, 1
		case "idempotentHint":
			dst, slot = &out.IdempotentHint, 2
		case "openWorldHint":
			dst, slot = &out.OpenWorldHint, 3
		default:
			// encoding/json matches member names case-insensitively.
			for _, known := range annotationKeys {
				if strings.EqualFold(string(key), known) {
					return parseAnnotations(t.raw(i))
				}
			}
			continue
		}
		switch t.e[v].kind {
		case kNull:
		case kTrue, kFalse:
			store.hints[slot] = t.e[v].kind == kTrue
			*dst = &store.hints[slot]
		default:
			return parseAnnotations(t.raw(i))
		}
	}
	return out, nil
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
