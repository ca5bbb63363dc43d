package mcp

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
)

// paramNode is the part of a normalised schema that x-mcp-header needs.
type paramNode struct {
	Type       json.RawMessage       `json:"type"`
	Properties map[string]*paramNode `json:"properties"`
	Header     string                `json:"x-mcp-header"`
}

// paramHeaders computes the Mcp-Param-* headers of a 2026-07-28 tools/call:
// for every property annotated with x-mcp-header (reached from the root only
// through "properties"), the argument at that exact path is encoded into
// Mcp-Param-<name>. A missing or null argument omits the header. The schema
// is validated by NormalizeSchema first, so an annotation that would make the
// tool invalid is refused here too.
func paramHeaders(schema json.RawMessage, args map[string]any) (http.Header, error) {
	norm, err := NormalizeSchema(schema)
	if err != nil {
		return nil, err
	}
	var root paramNode
	if err := json.Unmarshal(norm, &root); err != nil {
		return nil, err
	}
	h := http.Header{}
	walkParams(&root, args, h)
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}

func walkParams(n *paramNode, args map[string]any, h http.Header) {
	for name, child := range n.Properties {
		if child == nil {
			continue
		}
		v, present := args[name]
		if child.Header != "" && present && v != nil {
			if s, ok := headerArgValue(v); ok {
				h.Set(headerParamPrefix+child.Header, encodeHeaderValue(s))
			}
		}
		if sub, ok := v.(map[string]any); ok && len(child.Properties) > 0 {
			walkParams(child, sub, h)
		}
	}
}

// headerArgValue renders a primitive argument as the specification's type
// conversion asks: strings as is, integers in decimal, booleans lower-case.
// Other values have no header form and are left to the server to judge.
func headerArgValue(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case float64:
		if t == math.Trunc(t) && math.Abs(t) <= 1<<53-1 {
			return strconv.FormatInt(int64(t), 10), true
		}
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case float32:
		return headerArgValue(float64(t))
	case int:
		return strconv.FormatInt(int64(t), 10), true
	case int32:
		return strconv.FormatInt(int64(t), 10), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint:
		return strconv.FormatUint(uint64(t), 10), true
	case uint32:
		return strconv.FormatUint(uint64(t), 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case json.Number:
		return t.String(), true
	}
	return "", false
}
