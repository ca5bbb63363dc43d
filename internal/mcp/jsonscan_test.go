package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// legacyDecodeObject is the json.Decoder.Token reading decodeObject replaced;
// the scanner must agree with it on what is accepted and which of the
// distinguished errors is returned.
func legacyDecodeObject(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, errNotJSON
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if ok && d == '[' {
			return nil, errBatch
		}
		return nil, errNotObject
	}
	members := make(map[string]json.RawMessage)
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, errNotJSON
		}
		key, ok := kt.(string)
		if !ok {
			return nil, errNotJSON
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errNotJSON
		}
		if _, dup := members[key]; dup {
			return nil, errDuplicateMember
		}
		members[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, errNotJSON
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailing
	}
	return members, nil
}

// distinguished reduces an error to what callers tell apart: errNotJSON and
// errNotObject lead to the same outcome everywhere.
func distinguished(err error) error {
	if errors.Is(err, errNotObject) {
		return errNotJSON
	}
	return err
}

var scanSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":[1,{"b":"c"}],"d":null}`,
	`{"a":1}{"b":2}`, `{"a":1} x`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{"a":01}`, `{"a":-}`,
	`{"a":1.}`, `{"a":1e}`, `{"a":-0.5e+3}`, `{"a":tru}`, `{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12G4"}`,
	`[1]`, `[`, `"s"`, `1`, `null`, ``, `  `, `{"a":"\xff"}`, `{"\xff":1}`, `{"a":{"a":1,"a":2}}`,
	`{"a":[1,]}`, `{"a":[,1]}`, `{"a" : "b" , "c" : [ ] }`, "{\"a\":\t1\r\n}", `{"a":1 "b":2}`,
	`{"a":"x"}  `, `{"é":"ü"}`, `{"a":"\ud800"}`, `{"a":[[[[[]]]]]}`, `{"a":"b"`, `{"a":1]`,
}

func TestDecodeObjectMatchesEncodingJSON(t *testing.T) {
	for _, s := range scanSeeds {
		checkDecodeObject(t, []byte(s))
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkDecodeObject(t, []byte(s)) })
}

func checkDecodeObject(t *testing.T, raw []byte) {
	t.Helper()
	got, gerr := decodeObject(raw)
	want, werr := legacyDecodeObject(raw)
	if !errors.Is(distinguished(gerr), distinguished(werr)) {
		t.Fatalf("%q: error %v, encoding/json says %v", raw, gerr, werr)
	}
	checkReadMembers(t, raw, got, gerr)
	if gerr != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%q: %d members, encoding/json finds %d", raw, len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
			t.Fatalf("%q: member %q is %q, encoding/json reads %q", raw, k, got[k], v)
		}
	}
}

func TestDecodeStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{`"a"`, ` "a" `, `"\u00e9"`, `"\xff"`, `null`, `1`, `"a" "b"`, `"\n"`, `"é"`} {
		got, ok := decodeString([]byte(s))
		var want string
		err := json.Unmarshal([]byte(s), &want)
		if s == "null" {
			if ok {
				t.Fatalf("null decoded as a string")
			}
			continue
		}
		if ok != (err == nil) || got != want {
			t.Fatalf("%q: got %q %v, encoding/json %q %v", s, got, ok, want, err)
		}
	}
}

// TestNormalizeSchemaCanonical checks that NormalizeSchema's own encoder
// writes what encoding/json writes (HTML escaping off, sorted members): a
// definition hash computed from the output must not change with the encoder.
// (Enum values are kept as compacted raw JSON by both, so objects inside an
// enum are left out: re-encoding them here would sort their members.)
func TestNormalizeSchemaCanonical(t *testing.T) {
	for _, s := range []string{
		`{"type":"object"}`,
		`{"type":"object","description":"<b>&\"quoted\"\\ \u2028 é \t\n","properties":{"z":{"type":["string","null"]},"a":{"type":"array","items":{"enum":[1.50, "x", null, true]}}},"required":["z","a"]}`,
		`{"type":"object","properties":{"h":{"type":"string","x-mcp-header":"X-Region"},"n":{"type":"object","properties":{"m":{"description":"\u0000\u001f"}}}}}`,
	} {
		got, err := NormalizeSchema(json.RawMessage(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		dec := json.NewDecoder(bytes.NewReader(got))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if want := bytes.TrimRight(buf.Bytes(), "\n"); !bytes.Equal(got, want) {
			t.Fatalf("NormalizeSchema wrote\n%s\nencoding/json writes\n%s", got, want)
		}
	}
}

// checkReadMembers holds ReadMembers to decodeObject's reading of raw
// (got, or its error): the same members, and an error for an object
// decodeObject refuses or one of more than eight members.
func checkReadMembers(t *testing.T, raw []byte, got map[string]json.RawMessage, gerr error) {
	t.Helper()
	var m Members
	err := ReadMembers(raw, &m)
	switch {
	case gerr != nil:
		if err == nil {
			t.Fatalf("%q: ReadMembers accepted what decodeObject refuses (%v)", raw, gerr)
		}
		return
	case len(got) > 8:
		if !errors.Is(err, errTooManyMembers) {
			t.Fatalf("%q: ReadMembers read %d members: %v", raw, len(got), err)
		}
		return
	case err != nil:
		t.Fatalf("%q: ReadMembers: %v", raw, err)
	}
	if m.Len() != len(got) {
		t.Fatalf("%q: ReadMembers read %d members, decodeObject %d", raw, m.Len(), len(got))
	}
	for i := range m.Len() {
		if v, ok := got[m.Name(i)]; !ok || !bytes.Equal(v, m.Value(i)) || !bytes.Equal(m.Get(m.Name(i)), v) {
			t.Fatalf("%q: member %q read as %q, decodeObject %q", raw, m.Name(i), m.Value(i), v)
		}
	}
}

func TestReadMembersHoldsEight(t *testing.T) {
	eight := `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}`
	var m Members
	if err := ReadMembers([]byte(eight), &m); err != nil || m.Len() != 8 || string(m.Get("h")) != "8" || m.Get("i") != nil {
		t.Fatalf("eight members: %d read, h=%q (%v)", m.Len(), m.Get("h"), err)
	}
	if err := ReadMembers([]byte(eight[:len(eight)-1]+`,"i":9}`), &m); !errors.Is(err, errTooManyMembers) {
		t.Fatalf("nine members: %v", err)
	}
	checkDecodeObject(t, []byte(eight[:len(eight)-1]+`,"i":9}`))
}
