package mcp

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A single-pass JSON scanner for the shapes the client takes apart: an object
// into its members, an array into its elements. It validates the whole input
// with the grammar encoding/json accepts and returns the members as slices of
// the input (no copies).
//
// It replaced json.Decoder.Token, which allocates per token and rescans
// every value it hands over. It reads the small results (handshake, call);
// a JSON-RPC message is indexed once into a tape with the same grammar
// (tape.go), and when that fails this scanner decides which error the
// bytes get.

// maxJSONDepth matches encoding/json's nesting limit, so a value refused
// here is one encoding/json refuses too.
const maxJSONDepth = 10000

type jsonScanner struct {
	b []byte
	i int
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *jsonScanner) skipSpace() {
	for s.i < len(s.b) && isJSONSpace(s.b[s.i]) {
		s.i++
	}
}

// value skips one value and reports whether it was well formed. The
// grammar is the tape's (tape.go), run without recording.
func (s *jsonScanner) value(depth int) bool {
	p := tapeParser{b: s.b, i: s.i}
	ok := p.value(depth)
	s.i = p.i
	return ok
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() bool {
	b := s.b
	if b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(b) && b[s.i] == '0':
		s.i++
	case s.i < len(b) && b[s.i] >= '1' && b[s.i] <= '9':
		for s.i < len(b) && isDigit(b[s.i]) {
			s.i++
		}
	default:
		return false
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if s.i >= len(b) || !isDigit(b[s.i]) {
			return false
		}
		for s.i < len(b) && isDigit(b[s.i]) {
			s.i++
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(b) || !isDigit(b[s.i]) {
			return false
		}
		for s.i < len(b) && isDigit(b[s.i]) {
			s.i++
		}
	}
	return true
}

// str skips a string starting at the current position and returns its raw
// bytes, quotes included.
func (s *jsonScanner) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	p := tapeParser{b: s.b, i: s.i}
	if !p.str() {
		return nil, false
	}
	start := s.i
	s.i = p.i
	return s.b[start:s.i], true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// unquote returns the text of a raw JSON string that str accepted. Plain
// ASCII without escapes is converted directly; anything else goes through
// encoding/json, so escapes and invalid UTF-8 are handled exactly as there.
func unquote(raw []byte) (string, bool) {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

// memberName unquotes an object member's name. The names of the protocol's
// own members are the constants, not a new string each: a call's request
// and answer are read member by member several times on its way.
func memberName(q []byte) (string, bool) {
	switch string(q[1 : len(q)-1]) {
	case "jsonrpc":
		return "jsonrpc", true
	case "id":
		return "id", true
	case "method":
		return "method", true
	case "params":
		return "params", true
	case "result":
		return "result", true
	case "error":
		return "error", true
	case "name":
		return "name", true
	case "arguments":
		return "arguments", true
	case "_meta":
		return "_meta", true
	case "content":
		return "content", true
	case "type":
		return "type", true
	case "text":
		return "text", true
	case "isError":
		return "isError", true
	case "structuredContent":
		return "structuredContent", true
	case "resultType":
		return "resultType", true
	}
	return unquote(q)
}

// decodeString decodes raw as a JSON string (surrounding whitespace
// allowed), as json.Unmarshal into a string would, but without reflection
// for the common plain case. null is not a string here.
func decodeString(raw []byte) (string, bool) {
	s := jsonScanner{b: raw}
	s.skipSpace()
	q, ok := s.str()
	if !ok {
		return "", false
	}
	s.skipSpace()
	if s.i != len(raw) {
		return "", false
	}
	return unquote(q)
}

// decodeObject decodes raw as exactly one JSON object, returning its members
// as slices of raw. Duplicate member names are refused: encoding/json would
// silently keep the last one, which lets a response smuggle a second "id" or
// "result" past a reader that looks at the first. Member names are compared
// after unescaping, so "\u0069d" repeats "id".
func decodeObject(raw []byte) (map[string]json.RawMessage, error) {
	// Most objects read here (a tool, a schema node) have a handful of
	// members; the hint allocates the map's first group at once.
	members := make(map[string]json.RawMessage, 8)
	err := scanObject(raw, func(key string, value json.RawMessage) error {
		if _, dup := members[key]; dup {
			return errDuplicateMember
		}
		members[key] = value
		return nil
	})
	if err != nil {
		return nil, err
	}
	return members, nil
}

// scanObject reads raw as exactly one JSON object and hands member each
// of its members in order: its name unquoted, its value as a sub-slice of
// raw. An error of member ends the scan and is returned.
func scanObject(raw []byte, member func(key string, value json.RawMessage) error) error {
	s := jsonScanner{b: raw}
	s.skipSpace()
	if s.i >= len(raw) {
		return errNotJSON
	}
	switch raw[s.i] {
	case '{':
	case '[':
		return errBatch
	default:
		if s.value(0) {
			return errNotObject
		}
		return errNotJSON
	}
	s.i++
	s.skipSpace()
	if s.i < len(raw) && raw[s.i] == '}' {
		s.i++
		return s.end()
	}
	for {
		s.skipSpace()
		q, ok := s.str()
		if !ok {
			return errNotJSON
		}
		key, ok := memberName(q)
		if !ok {
			return errNotJSON
		}
		s.skipSpace()
		if s.i >= len(raw) || raw[s.i] != ':' {
			return errNotJSON
		}
		s.i++
		s.skipSpace()
		start := s.i
		if !s.value(1) {
			return errNotJSON
		}
		if err := member(key, raw[start:s.i:s.i]); err != nil {
			return err
		}
		s.skipSpace()
		if s.i >= len(raw) {
			return errNotJSON
		}
		switch raw[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return s.end()
		default:
			return errNotJSON
		}
	}
}

// Members are the members of a small object (at most eight), read by
// ReadMembers in order into arrays, with no map: the shape of the
// requests the gateway answers itself, read on every call.
type Members struct {
	n      int
	names  [8]string
	values [8]json.RawMessage
}

// errTooManyMembers: an object larger than Members holds.
var errTooManyMembers = errors.New("object has more members than read here")

// ReadMembers reads raw as exactly one JSON object of at most eight
// members, each named once, into m; it fails as ObjectMembers does, and
// for a larger object.
func ReadMembers(raw []byte, m *Members) error {
	m.n = 0
	return scanObject(raw, func(key string, value json.RawMessage) error {
		for _, name := range m.names[:m.n] {
			if name == key {
				return errDuplicateMember
			}
		}
		if m.n == len(m.names) {
			return errTooManyMembers
		}
		m.names[m.n], m.values[m.n] = key, value
		m.n++
		return nil
	})
}

// Len is the number of members.
func (m *Members) Len() int { return m.n }

// Get is the value of the member named name; nil when there is none.
func (m *Members) Get(name string) json.RawMessage {
	for i, n := range m.names[:m.n] {
		if n == name {
			return m.values[i]
		}
	}
	return nil
}

// Name is the name of the i-th member.
func (m *Members) Name(i int) string { return m.names[i] }

// Value is the value of the i-th member.
func (m *Members) Value(i int) json.RawMessage { return m.values[i] }

// end checks that only whitespace follows the value just read.
func (s *jsonScanner) end() error {
	s.skipSpace()
	if s.i != len(s.b) {
		return errTrailing
	}
	return nil
}

// decodeArray decodes raw as exactly one JSON array, returning its elements
// as slices of raw; ok is false for anything else (null included).
func decodeArray(raw []byte) ([]json.RawMessage, bool) {
	s := jsonScanner{b: raw}
	s.skipSpace()
	if s.i >= len(raw) || raw[s.i] != '[' {
		return nil, false
	}
	s.i++
	var elems []json.RawMessage
	s.skipSpace()
	if s.i < len(raw) && raw[s.i] == ']' {
		s.i++
		return []json.RawMessage{}, s.end() == nil
	}
	for {
		s.skipSpace()
		start := s.i
		if !s.value(1) {
			return nil, false
		}
		elems = append(elems, raw[start:s.i:s.i])
		s.skipSpace()
		if s.i >= len(raw) {
			return nil, false
		}
		switch raw[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return elems, s.end() == nil
		default:
			return nil, false
		}
	}
}

// ObjectMembers reads raw as exactly one JSON object and returns its
// members as sub-slices of raw, refusing duplicate member names (compared
// after unescaping) and anything after the object. It is for readers of
// MCP messages outside this package that must see a member exactly as
// named, once.
func ObjectMembers(raw []byte) (map[string]json.RawMessage, error) {
	return decodeObject(raw)
}

// ArrayElements reads raw as exactly one JSON array and returns its
// elements as sub-slices of raw (nothing is copied); ok is false for
// anything else, null included.
func ArrayElements(raw []byte) ([]json.RawMessage, bool) {
	return decodeArray(raw)
}
