package mcp

import (
	"encoding/json"
	"slices"
	"strconv"
)

// encodeRequest encodes a request as json.Marshal does, byte for byte
// (TestEncodeRequestMatchesMarshal), without reflection for the values a
// request's parameters are built from here: maps of strings to values,
// lists, strings and booleans. Any other value (a number, a struct, raw
// JSON) is encoded by json.Marshal where it stands.
func encodeRequest(r rpcRequest) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"jsonrpc":`...)
	b = appendMarshalString(b, r.JSONRPC)
	if r.ID != "" {
		b = append(b, `,"id":`...)
		b = appendMarshalString(b, r.ID)
	}
	b = append(b, `,"method":`...)
	b = appendMarshalString(b, r.Method)
	if r.Params != nil {
		b = append(b, `,"params":`...)
		var err error
		if b, err = appendMarshalValue(b, r.Params); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendMarshalValue appends v as json.Marshal encodes it.
func appendMarshalValue(dst []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendMarshalString(dst, t), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case rawJSON:
		return append(dst, t...), nil
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), nil
		}
		return appendMarshalMap(dst, t, appendMarshalValue)
	case map[string]string:
		if t == nil {
			return append(dst, "null"...), nil
		}
		return appendMarshalMap(dst, t, func(dst []byte, s string) ([]byte, error) { return appendMarshalString(dst, s), nil })
	case []any:
		if t == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendMarshalValue(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendMarshalMap appends m as json.Marshal encodes a map with string
// keys, its members in order of their names, each value by value.
func appendMarshalMap[V any](dst []byte, m map[string]V, value func([]byte, V) ([]byte, error)) ([]byte, error) {
	dst = append(dst, '{')
	// A request's maps are small: their names are sorted in place, in an
	// array on the stack.
	var small [8]string
	keys := small[:0]
	if len(m) > len(small) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendMarshalString(dst, k), ':')
		var err error
		if dst, err = value(dst, m[k]); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendMarshalString quotes s as json.Marshal does (HTML escaping on).
func appendMarshalString(dst []byte, s string) []byte { return appendQuoted(dst, s, true) }

// rawJSON is JSON this package encoded itself (compact and valid), which
// the request encoder appends as it is.
type rawJSON []byte

// MarshalJSON makes encoding/json agree with the request encoder.
func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
