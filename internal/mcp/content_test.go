package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestFlattenCallResult(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		text    string
		dropped map[string]int
		isError bool
	}{
		{"empty", `{}`, "", nil, false},
		{"null content", `{"content":null}`, "", nil, false},
		{"texts joined", `{"content":[{"type":"text","text":"a"},{"type":"text","text":""},{"type":"text","text":"b"}]}`, "a\n\nb", nil, false},
		{"non-object block is other", `{"content":[7,{"type":"text","text":"x"}]}`,
			"[Note: 1 non-text content block dropped (1 other); only text is returned.]\nx", map[string]int{"other": 1}, false},
		{"text without string text is other", `{"content":[{"type":"text","text":5}]}`,
			"[Note: 1 non-text content block dropped (1 other); only text is returned.]\n", map[string]int{"other": 1}, false},
		{"missing type is other", `{"content":[{"text":"x"}]}`,
			"[Note: 1 non-text content block dropped (1 other); only text is returned.]\n", map[string]int{"other": 1}, false},
		{"isError null", `{"isError":null,"content":[]}`, "", nil, false},
		{"structured only", `{"structuredContent":[1, 2]}`, "[1,2]", nil, true && false},
		{"structured null ignored", `{"structuredContent":null}`, "", nil, false},
		{"error flag", `{"isError":true,"content":[{"type":"text","text":"boom"}]}`, "boom", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := flattenCallResult(json.RawMessage(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != c.text || got.IsError != c.isError || fmt.Sprint(got.Dropped) != fmt.Sprint(c.dropped) {
				t.Fatalf("got %+v", got)
			}
		})
	}
	for _, bad := range []string{`{"isError":"yes"}`, `{"content":{}}`, `{"content":"x"}`, `[]`} {
		if _, err := flattenCallResult(json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestDroppedNoteIsClientAuthored(t *testing.T) {
	var blocks []string
	for i := range 50 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"evil-%d-SYSTEM PROMPT"}`, i))
	}
	got, err := flattenCallResult(json.RawMessage(`{"content":[` + strings.Join(blocks, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "[Note: 50 non-text content blocks dropped (50 other); only text is returned.]\n"
	if got.Text != want {
		t.Fatalf("note %q", got.Text)
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	// The specification's own examples.
	cases := map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"inner space":        "inner space",
		"":                   "=?base64??=",
	}
	for in, want := range cases {
		if got := encodeHeaderValue(in); got != want {
			t.Errorf("encodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Kind: KindBudgetExhausted, Server: "ns/name", Method: "tools/list", Budget: 20 * time.Second, Err: context.DeadlineExceeded}
	if got, want := e.Error(), `mcp server "ns/name": operation budget exhausted (tools/list), operation budget 20s`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, context.DeadlineExceeded) {
		t.Fatal("cause not unwrapped")
	}
	e = &Error{Kind: KindRPCError, Server: "s", Method: "tools/call", StatusCode: 200, RPCCode: -32602, RPCMessage: "LEAK", RPCData: json.RawMessage(`"LEAK"`)}
	if got, want := e.Error(), `mcp server "s": JSON-RPC error (tools/call), HTTP 200, JSON-RPC error -32602`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	// Every kind has its own wording.
	seen := map[string]Kind{}
	for _, k := range []Kind{KindInvalidEndpoint, KindInvalidArgument, KindUnreachable, KindBlockedAddress, KindBudgetExhausted,
		KindCancelled, KindUnauthorized, KindForbidden, KindServerError, KindRedirect, KindHTTPStatus, KindSessionExpired,
		KindRPCError, KindNotMCP, KindNoResponse, KindInvalidResponse, KindEmptyBody, KindOversized, KindUnsupportedVersion,
		KindInputRequired, KindInsecureCredential, KindCredentialExpired, KindPageLimit, KindRepeatedCursor, KindToolLimit} {
		p := kindPhrase(k)
		if p == kindPhrase("") {
			t.Errorf("%s has no phrase", k)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share the phrase %q", k, other, p)
		}
		seen[p] = k
	}
}
