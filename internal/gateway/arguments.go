package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
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
	m, b, h, err := encodedArguments(raw)
	if err == nil && m == nil {
		err = decodeObject(b, &m)
	}
	return m, h, err
}

// encodedArguments is arguments with the canonical form itself, which later
// stages (the guardrail) are handed rather than encoding the map again.
// Arguments whose bytes are already in the canonical form (canonicalObject:
// as most clients encode them) are not decoded: the map is nil, and the
// stages that read it decode the bytes (callScope.arguments).
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
		} else if canonicalObject(v) {
			// The canonical form is the bytes as they came, whose hash
			// the record already holds (rawArgumentsHash).
			return nil, v, rawArgumentsHash(v), nil
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

// canonicalObject reports whether raw is a JSON object written exactly as
// encoding/json writes what decodeObject reads from it: no space between
// tokens, each object's member names in increasing byte order (so none
// twice), numbers as any JSON number (kept as written), member names
// without escapes, of printable ASCII other than the characters the
// encoder escapes (quote, backslash, <, > and &) and valid UTF-8 other
// than U+2028 and U+2029, and string values of the same, or escaped
// exactly as the encoder escapes them (canonicalEscape): the text of a
// file, its lines and quotes escaped, is passed on as it came rather than
// decoded and encoded again. Such bytes decode and encode to themselves;
// anything else is decoded and encoded. A name holds no escape because
// the encoder orders names by their decoded bytes. raw is within the
// argument bounds (withinArgumentBounds), which bound the recursion.
func canonicalObject(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	end, ok := canonicalValue(raw, 0)
	return ok && end == len(raw)
}

// canonicalValue reads the canonical value at b[i:] and returns where it
// ends.
func canonicalValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return canonicalMembers(b, i+1)
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonicalValue(b, i); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ']':
				return i + 1, true
			case ',':
				i++
			default:
				return i, false
			}
		}
	case c == '"':
		return canonicalString(b, i, true)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || ('0' <= c && c <= '9'):
		return jsonNumber(b, i)
	}
	return i, false
}

// canonicalMembers reads an object's members and its closing brace from
// b[i:], just after its opening brace.
func canonicalMembers(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var last []byte
	for first := true; ; first = false {
		end, ok := canonicalString(b, i, false)
		if !ok {
			return i, false
		}
		name := b[i+1 : end-1]
		if !first && bytes.Compare(last, name) >= 0 {
			return i, false
		}
		last, i = name, end
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = canonicalValue(b, i+1); !ok || i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
		default:
			return i, false
		}
	}
}

// canonicalString reads a string that the encoder writes as it is: one
// without escapes, or, when escapes is set, with escapes exactly as the
// encoder writes them.
func canonicalString(b []byte, i int, escapes bool) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				return i + 1, true
			case c == '\\' && escapes:
				n := canonicalEscape(b[i:])
				if n == 0 {
					return i, false
				}
				i += n
				continue
			case c < 0x20, c == '\\', c == '<', c == '>', c == '&':
				return i, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return i, false
		}
		i += size
	}
	return i, false
}

// canonicalEscape is the length of the escape at the start of b when it
// is one encoding/json writes (with HTML escaping, as json.Marshal does),
// else 0: a quote, a backslash, \b, \f, \n, \r and \t by their short
// forms; any other control character, <, > and & as \u00 and two
// lower-case hex digits; U+2028 and U+2029 as \u2028 and \u2029.
// Nothing else: the encoder writes '/' and every other character as it
// is, so that \/ or \u0041 would be encoded otherwise.
func canonicalEscape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
	default:
		return 0
	}
	if len(b) < 6 {
		return 0
	}
	if string(b[2:6]) == "2028" || string(b[2:6]) == "2029" {
		return 6
	}
	const hex = "0123456789abcdef"
	hi, lo := strings.IndexByte(hex, b[4]), strings.IndexByte(hex, b[5])
	if b[2] != '0' || b[3] != '0' || hi < 0 || lo < 0 {
		return 0
	}
	switch c := byte(hi<<4 | lo); {
	case c == '<', c == '>', c == '&':
		return 6
	case c < 0x20 && c != '\b' && c != '\f' && c != '\n' && c != '\r' && c != '\t':
		// The other control characters; those five have short forms.
		return 6
	}
	return 0
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// jsonNumber reads a number as JSON's grammar has it.
func jsonNumber(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
