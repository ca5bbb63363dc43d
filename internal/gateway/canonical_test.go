package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The bytes canonicalObject passes are the bytes the slow path would have
// produced: decoded (numbers as written) and encoded again, they come out
// the same.
func reencoded(t testing.TB, raw []byte) ([]byte, bool) {
	t.Helper()
	var m map[string]any
	if decodeObject(raw, &m) != nil || m == nil {
		return nil, false
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("re-encoding %q: %v", raw, err)
	}
	return b, true
}

func TestCanonicalObject(t *testing.T) {
	for raw, want := range map[string]bool{
		`{}`:                            true,
		`{"text":"hello"}`:              true,
		`{"a":1,"b":[true,false,null]}`: true,
		`{"a":{"x":-0.5e+10,"y":[]},"b":"é 日本 🙂","c":0}`:         true,
		`{"n":12345678901234567890123}`:                          true,
		`{"del":"a` + "\x7f" + `b"}`:                             true,
		`{"a":1, "b":2}`:                                         false, // a space
		`{"b":1,"a":2}`:                                          false, // not in order
		`{"a":1,"a":2}`:                                          false, // twice
		`{"a":"line\nbreak"}`:                                    true,  // escaped as the encoder escapes
		`{"a":"\"q\" back\\slash\ttab\r\b\f"}`:                   true,
		`{"a":"\u003cb\u003e \u0026 \u0001\u001f\u007f"}`:        false, // DEL is written as it is
		`{"a":"\u003cb\u003e \u0026 \u0001\u001f \u2028\u2029"}`: true,
		`{"a":["x\ny",{"b":"\t"}]}`:                              true,
		`{"a\n":1}`:                                              false, // an escape in a name
		`{"a":"\/"}`:                                             false, // the encoder writes / as it is
		`{"a":"\u0041"}`:                                         false,
		`{"a":"\u000a"}`:                                         false, // the encoder writes \n
		`{"a":"\u003C"}`:                                         false, // upper-case hex
		`{"a":"\ufffd"}`:                                         false,
		`{"a":"\ud83d\ude42"}`:                                   false,
		`{"a":"\x"}`:                                             false,
		`{"a":"\u00"}`:                                           false,
		`{"a":"\"}`:                                              false,
		`{"a":"<b>"}`:                                            false, // the encoder escapes <
		`{"a":"x&y"}`:                                            false,
		`{"a":"` + "\u2028" + `"}`:                               false,
		`{"a":"` + "\xff" + `"}`:                                 false, // not UTF-8
		`{"a":"` + "\x01" + `"}`:                                 false,
		`{"a":01}`:                                               false,
		`{"a":1.}`:                                               false,
		`{"a":.5}`:                                               false,
		`{"a":1e}`:                                               false,
		`{"a":+1}`:                                               false,
		`{"a":tru}`:                                              false,
		`{"a":[1,]}`:                                             false,
		`{"a":1,}`:                                               false,
		`{"a":1}x`:                                               false,
		`{"a":1}{}`:                                              false,
		`[1]`:                                                    false,
		`{"a"}`:                                                  false,
		`{"a":"unterminated}`:                                    false,
		`{`:                                                      false,
	} {
		if got := canonicalObject([]byte(raw)); got != want {
			t.Errorf("canonicalObject(%q) = %t, want %t", raw, got, want)
		}
		if want {
			if b, ok := reencoded(t, []byte(raw)); !ok || !bytes.Equal(b, []byte(raw)) {
				t.Errorf("%q re-encodes as %q", raw, b)
			}
		}
	}
}

// On generated arguments, written as Go writes them and then disturbed
// (spaces, members out of order or twice, escapes, characters the
// encoder escapes), what canonicalObject passes always re-encodes to
// itself, and what Go writes without characters it escapes is passed.
func TestCanonicalObjectAgreesWithTheEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	passed := 0
	for i := range 20000 {
		v := randomObject(rng, 3)
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if canonicalObject(raw) {
			passed++
		} else if !escapedName(v) {
			t.Fatalf("Go's own encoding %q is not passed", raw)
		}
		disturbed := disturb(rng, raw)
		if canonicalObject(disturbed) {
			b, ok := reencoded(t, disturbed)
			if !ok || !bytes.Equal(b, disturbed) {
				t.Fatalf("case %d: %q passed, but re-encodes as %q (decoded: %t)", i, disturbed, b, ok)
			}
		}
	}
	if passed < 1000 {
		t.Errorf("only %d of the generated encodings were passed", passed)
	}
}

func FuzzCanonicalObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":[1,{"b":"c"}],"d":-1.5e3}`, `{"b":1,"a":2}`, `{"a":"\u003c"}`, `{"a":"é"}`, `{"a":"x\ny \"q\" \u0001"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !withinArgumentBounds(raw) || !canonicalObject(raw) {
			return
		}
		b, ok := reencoded(t, raw)
		if !ok || !bytes.Equal(b, raw) {
			t.Fatalf("%q passed, but re-encodes as %q (decoded: %t)", raw, b, ok)
		}
	})
}

var randomRunes = []string{"a", "b", "Z", "0", " ", "é", "日", "🙂", "<", "&", "\"", "\\", "\n", "\u2028", "\x7f", "\t", "/", "\x01", "\b", "\r"}

// escapedName reports whether a member name in v is one the encoder
// escapes: canonicalObject passes no escape in a name.
func escapedName(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if b, _ := json.Marshal(k); bytes.ContainsRune(b, '\\') || escapedName(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if escapedName(e) {
				return true
			}
		}
	}
	return false
}

func randomString(rng *rand.Rand) string {
	var sb strings.Builder
	for range rng.IntN(6) {
		sb.WriteString(randomRunes[rng.IntN(len(randomRunes))])
	}
	return sb.String()
}

func randomObject(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(5) {
		m[randomString(rng)] = randomValue(rng, depth-1)
	}
	return m
}

func randomValue(rng *rand.Rand, depth int) any {
	n := 6
	if depth > 0 {
		n = 8
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return json.Number(strconv.Itoa(rng.IntN(2000) - 1000))
	case 3:
		return json.Number(strconv.FormatFloat(rng.NormFloat64()*1e6, 'g', -1, 64))
	case 4, 5:
		return randomString(rng)
	case 6:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randomValue(rng, depth-1)
		}
		return a
	default:
		return randomObject(rng, depth-1)
	}
}

// disturb changes raw in one of the ways a client's encoding may differ
// from Go's.
func disturb(rng *rand.Rand, raw []byte) []byte {
	out := bytes.Clone(raw)
	if len(out) < 2 {
		return out
	}
	i := 1 + rng.IntN(len(out)-1)
	switch rng.IntN(7) {
	case 0:
		return out
	case 1:
		return append(out[:i:i], append([]byte(" "), out[i:]...)...)
	case 2:
		// Members swapped: the object's first two, when it has them.
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || len(m) < 2 {
			return out
		}
		var b bytes.Buffer
		b.WriteByte('{')
		first := true
		for k, v := range m { // map order: often not sorted
			if !first {
				b.WriteByte(',')
			}
			first = false
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
		return b.Bytes()
	case 3:
		// A member written twice.
		if j := bytes.IndexByte(out, ','); j > 0 {
			k := bytes.IndexByte(out[1:], ',')
			if k > 0 {
				return append(out[:j:j], append([]byte(","), out[1:1+k]...)...)
			}
		}
		return out
	case 4:
		// A character replaced by one the encoder would escape or is a
		// byte that is not UTF-8.
		out[i] = "<&\x7f\xff\x01é"[rng.IntN(7)]
		return out
	case 5:
		// An escape written otherwise than the encoder writes it, or one
		// of it turned into another.
		j := bytes.IndexByte(out, '\\')
		if j < 0 {
			return out
		}
		alt := []string{`\u000a`, `\/`, `\u003C`, `\u0041`, `\ufffd`, `\u0001`, `\u2028`, `\n`, `\"`, `\x`}[rng.IntN(10)]
		return append(out[:j:j], append([]byte(alt), out[j+2:]...)...)
	default:
		return out[:i]
	}
}

// simpleID is the grammar the SDK writes back byte for byte, held to a
// regular expression of it on generated ids.
func TestSimpleIDMatchesItsGrammar(t *testing.T) {
	grammar := regexp.MustCompile(`^(?:-?[1-9][0-9]{0,14}|0|"[ !#-\[\]-~]{0,128}")$`)
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []byte("-0123456789\"\\ !#[]~a\x7f\x1f\xc3")
	ids := []string{`0`, `-0`, `00`, `1`, `-1`, `123456789012345`, `1234567890123456`, `""`, `"a"`, `"` + strings.Repeat("x", 128) + `"`, `"` + strings.Repeat("x", 129) + `"`, `"\"`, `"`, `1.5`, `true`, `null`}
	for range 50000 {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if rng.IntN(3) == 0 && len(b) > 1 {
			b[0], b[len(b)-1] = '"', '"'
		}
		ids = append(ids, string(b))
	}
	for _, id := range ids {
		if got, want := simpleID([]byte(id)), grammar.MatchString(id); got != want {
			t.Errorf("simpleID(%q) = %t, the grammar says %t", id, got, want)
		}
	}
}
