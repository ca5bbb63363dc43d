package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Arguments are decoded only within these bounds: nesting, and values
// (each member, element and scalar counts one). The request's body bound
// (Options.MaxRequestBytes) bounds their bytes.
const (
	maxArgumentDepth  = 64
	maxArgumentValues = 100000
)

// errArgumentsNotObject and errArgumentsTooLarge are why arguments were
// not decoded; their text is what the agent is told.
var (
	errArgumentsNotObject = errors.New("the arguments must be a JSON object")
	errArgumentsTooLarge  = fmt.Errorf("the arguments nest deeper than %d levels or hold more than %d values", maxArgumentDepth, maxArgumentValues)
)

// rawArgumentsHash is the hash of the arguments' bytes as the call
// carried them, which the record of a call that was not allowed keeps: no
// arguments, or null, hash as an empty object does.
func rawArgumentsHash(raw any) string {
	switch v := raw.(type) {
	case nil:
		return emptyArgumentsHash
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			return emptyArgumentsHash
		}
		sum := sha256.Sum256(v)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	// Not from the wire (a test's own request): the canonical form.
	_, h, err := arguments(raw)
	if err != nil {
		return ""
	}
	return h
}

// emptyArgumentsHash is the hash of {}.
var emptyArgumentsHash = func() string {
	sum := sha256.Sum256([]byte("{}"))
	return "sha256:" + hex.EncodeToString(sum[:])
}()

// withinArgumentBounds reports whether raw, a JSON text, nests no deeper
// than maxArgumentDepth and holds no more than maxArgumentValues values,
// by one pass over its bytes that decodes nothing. It does not check the
// grammar: the decoder does that, within these bounds.
func withinArgumentBounds(raw []byte) bool {
	depth, values := 0, 1
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxArgumentDepth {
				return false
			}
		case '}', ']':
			depth--
		case ',', ':':
			// A member's name and value, or the next element.
			if values++; values > maxArgumentValues {
				return false
			}
		}
	}
	return true
}

// arguments decodes the call's arguments and hashes their canonical form.
func arguments(raw any) (map[string]any, string, error) {
	m, _, h, err := encodedArguments(raw)
	return m, h, err
}

// encodedArguments is arguments with the canonical form itself, which later
// stages (the guardrail) are handed rather than encoding the map again.
func encodedArguments(raw any) (map[string]any, []byte, string, error) {
	var m map[string]any
	switch v := raw.(type) {
	case nil:
		m = map[string]any{}
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			m = map[string]any{}
		} else if !withinArgumentBounds(v) {
			return nil, nil, "", errArgumentsTooLarge
		} else if err := decodeObject(v, &m); err != nil || m == nil {
			return nil, nil, "", errArgumentsNotObject
		}
	case map[string]any:
		m = v
	default:
		b, err := json.Marshal(v)
		if err != nil || decodeObject(b, &m) != nil || m == nil {
			return nil, nil, "", errArgumentsNotObject
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, "", err
	}
	sum := sha256.Sum256(b)
	return m, b, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// decodeObject decodes a JSON object keeping numbers as written
// (json.Number): a float64 would change an integer id above 2^53 on its way
// upstream.
func decodeObject(b []byte, m *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(m); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the arguments")
	}
	return nil
}
