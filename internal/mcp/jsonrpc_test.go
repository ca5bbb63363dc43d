package mcp

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMessage(t *testing.T) {
	const id = "mcpc-abc-1"
	cases := []struct {
		name string
		in   string
		kind messageKind // 0 when an error is expected
		err  Kind
	}{
		{"result", `{"jsonrpc":"2.0","id":"mcpc-abc-1","result":{}}`, kindResponse, ""},
		{"error", `{"jsonrpc":"2.0","id":"mcpc-abc-1","error":{"code":-32601,"message":"nope","data":[1]}}`, kindResponse, ""},
		{"escaped id is the same id", `{"jsonrpc":"2.0","id":"mcpc-\u0061bc-1","result":{}}`, kindResponse, ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/progress"}`, kindNotification, ""},
		{"null id notification", `{"jsonrpc":"2.0","id":null,"method":"x"}`, kindNotification, ""},
		{"server request", `{"jsonrpc":"2.0","id":5,"method":"roots/list"}`, kindServerRequest, ""},
		{"foreign id", `{"jsonrpc":"2.0","id":"mcpc-abc-2","result":{}}`, 0, KindInvalidResponse},
		{"numeric id", `{"jsonrpc":"2.0","id":1,"result":{}}`, 0, KindInvalidResponse},
		{"null id response", `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`, 0, KindInvalidResponse},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":"mcpc-abc-1","result":{}}`, 0, KindInvalidResponse},
		{"both", `{"jsonrpc":"2.0","id":"mcpc-abc-1","result":{},"error":{"code":1,"message":"m"}}`, 0, KindInvalidResponse},
		{"neither", `{"jsonrpc":"2.0","id":"mcpc-abc-1"}`, 0, KindInvalidResponse},
		{"result true", `{"jsonrpc":"2.0","id":"mcpc-abc-1","result":true}`, 0, KindInvalidResponse},
		{"error code float", `{"jsonrpc":"2.0","id":"mcpc-abc-1","error":{"code":1.5,"message":"m"}}`, 0, KindInvalidResponse},
		{"error message missing", `{"jsonrpc":"2.0","id":"mcpc-abc-1","error":{"code":1}}`, 0, KindInvalidResponse},
		{"error not object", `{"jsonrpc":"2.0","id":"mcpc-abc-1","error":"bad"}`, 0, KindInvalidResponse},
		{"method not string", `{"jsonrpc":"2.0","method":7}`, 0, KindInvalidResponse},
		{"duplicate member", `{"jsonrpc":"2.0","id":"mcpc-abc-1","result":{},"result":{}}`, 0, KindInvalidResponse},
		{"trailing", `{"jsonrpc":"2.0","id":"mcpc-abc-1","result":{}} x`, 0, KindInvalidResponse},
		{"batch", `[]`, 0, KindInvalidResponse},
		{"html", `<html></html>`, 0, KindNotMCP},
		{"number", `42`, 0, KindNotMCP},
		{"truncated", `{"jsonrpc":"2.0","id":"mcpc-abc-1","result":{`, 0, KindNotMCP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseMessage([]byte(c.in), id)
			if c.err != "" {
				var pe *protocolError
				if !errors.As(err, &pe) || pe.kind != c.err {
					t.Fatalf("err %v, want kind %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.kind != c.kind {
				t.Fatalf("kind %v, want %v", m.kind, c.kind)
			}
		})
	}
}

func TestParseErrorKeepsCodeAndData(t *testing.T) {
	m, err := parseMessage([]byte(`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"bad","data":{"a": [1, 2]}}}`), "x")
	if err != nil {
		t.Fatal(err)
	}
	if m.err.Code != -32602 || m.err.Message != "bad" || string(m.err.Data) != `{"a": [1, 2]}` {
		t.Fatalf("error %+v", m.err)
	}
}

func TestParseErrorBody(t *testing.T) {
	cases := []struct {
		in   string
		code int // 0: not an error body
	}{
		{`{"jsonrpc":"2.0","error":{"code":-32022,"message":"m","data":{"supported":[]}}}`, -32022},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}`, -32600},
		{`{"jsonrpc":"2.0","id":"mine","error":{"code":-32020,"message":"m"}}`, -32020},
		{`{"jsonrpc":"2.0","id":"theirs","error":{"code":-32020,"message":"m"}}`, 0},
		{`{"jsonrpc":"2.0","id":"mine","result":{}}`, 0},
		{`Bad Request: no session`, 0},
		{``, 0},
	}
	for _, c := range cases {
		e := parseErrorBody([]byte(c.in), "mine")
		got := 0
		if e != nil {
			got = e.Code
		}
		if got != c.code {
			t.Errorf("%s: code %d, want %d", c.in, got, c.code)
		}
	}
}

func TestRequestIDs(t *testing.T) {
	a, b := newIDSource(), newIDSource()
	if a.prefix == b.prefix {
		t.Fatal("two namespaces share a prefix")
	}
	seen := map[string]bool{}
	for range 1000 {
		id := a.next()
		if seen[id] || !strings.HasPrefix(id, a.prefix) {
			t.Fatalf("id %q repeated or outside the namespace", id)
		}
		seen[id] = true
	}
}

func TestModernErrorCodes(t *testing.T) {
	for _, c := range []int{-32020, -32021, -32022} {
		if !isModernErrorCode(c) {
			t.Errorf("%d not recognised as modern", c)
		}
	}
	// "Method not found" exists in both eras and identifies neither.
	for _, c := range []int{-32601, -32600, -32602, -32000, 0} {
		if isModernErrorCode(c) {
			t.Errorf("%d taken as modern", c)
		}
	}
}
