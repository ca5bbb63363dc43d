package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestArgumentsHashIsCanonical(t *testing.T) {
	hash := func(raw any) string {
		t.Helper()
		_, h, err := arguments(raw)
		if err != nil {
			t.Fatalf("arguments(%v): %v", raw, err)
		}
		return h
	}
	a := hash(json.RawMessage(`{"b":1,"a":{"y":[1,2],"x":"s"}}`))
	if b := hash(json.RawMessage(` {"a":{"x":"s","y":[1,2]},  "b":1}`)); a != b {
		t.Errorf("key order or spacing changed the hash: %s vs %s", a, b)
	}
	if b := hash(map[string]any{"b": 1, "a": map[string]any{"x": "s", "y": []int{1, 2}}}); a != b {
		t.Errorf("a Go map hashes differently from its JSON: %s vs %s", a, b)
	}
	if b := hash(json.RawMessage(`{"b":2,"a":{"y":[1,2],"x":"s"}}`)); a == b {
		t.Error("different values hash the same")
	}
	if b := hash(json.RawMessage(`{"b":1,"a":{"y":[2,1],"x":"s"}}`)); a == b {
		t.Error("a reordered array hashes the same")
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Errorf("hash %q is not sha256:<hex>", a)
	}
	empty := hash(json.RawMessage(`{}`))
	for _, none := range []any{nil, json.RawMessage(nil), json.RawMessage(`null`)} {
		if got := hash(none); got != empty {
			t.Errorf("absent arguments (%v) hash %s, want that of {} %s", none, got, empty)
		}
	}
}

func TestArgumentsRejectsWhatIsNotOneObject(t *testing.T) {
	for _, raw := range []string{`[1,2]`, `"text"`, `42`, `true`, `{"a":1}{"b":2}`, `{"a":1} x`, `{"a":`} {
		if _, _, err := arguments(json.RawMessage(raw)); err == nil {
			t.Errorf("arguments(%s) accepted", raw)
		}
	}
}

func TestArgumentsKeepNumbersAsWritten(t *testing.T) {
	// 2^64+3 and a long decimal: a float64 would round both.
	m, _, err := arguments(json.RawMessage(`{"id":18446744073709551619,"ratio":0.10000000000000000555}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"id":18446744073709551619,"ratio":0.10000000000000000555}`; got != want {
		t.Fatalf("arguments sent upstream = %s, want %s", got, want)
	}
}

// A file's text, escaped as encoding/json escapes it, is passed on as it
// came: not decoded, the bytes themselves, hashed as the same arguments
// decoded and encoded again are. Escaped otherwise, it is encoded again.
func TestEscapedTextPassesAsItCame(t *testing.T) {
	text := "package main\n\nfunc main() {\n\tprintln(\"a \\\\ b <c> & d\")\r\n\x01\u2028}\n"
	raw, err := json.Marshal(map[string]string{"path": "main.go", "text": text})
	if err != nil {
		t.Fatal(err)
	}
	m, b, h, err := encodedArguments(json.RawMessage(raw))
	if err != nil || m != nil || &b[0] != &raw[0] || len(b) != len(raw) {
		t.Fatalf("escaped text was decoded or copied: map %v, %d bytes, %v", m, len(b), err)
	}
	var decoded map[string]any
	if err := decodeObject(raw, &decoded); err != nil || decoded["text"] != text {
		t.Fatalf("the arguments do not decode to the text: %v", err)
	}
	if _, want, _ := arguments(decoded); h != want {
		t.Errorf("hash %s, the decoded arguments' %s", h, want)
	}
	other := strings.Replace(string(raw), `\n`, `\u000a`, 1)
	m, b, h2, err := encodedArguments(json.RawMessage(other))
	if err != nil || m == nil || string(b) != string(raw) || h2 != h {
		t.Errorf("an escape the encoder does not write was passed on (%q) or hashed otherwise (%s)", b, h2)
	}
}
