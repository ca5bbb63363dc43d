package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"
	"testing/iotest"
)

// The fuzz targets run their seed corpus as ordinary tests; `go test
// -fuzz=FuzzX` explores further.

func FuzzSSEDecode(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n",
		"event: message\r\ndata: a\r\ndata: b\r\n\r\n",
		"data: x\rdata: y\r\r",
		": comment\nid: 1\nretry: 5\ndata\n\n",
		"\xEF\xBB\xBFdata: bom\n\n",
		"data: unterminated",
		"\r\n\r\n\n\r",
		"event:\ndata:\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err := decodeAll(t, bytes.NewReader(in))
		if err != nil {
			t.Fatalf("in-memory reader failed: %v", err)
		}
		// Chunking must not change what is decoded.
		bytewise, err := decodeAll(t, iotest.OneByteReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatalf("one-byte reader failed: %v", err)
		}
		if !reflect.DeepEqual(whole, bytewise) {
			t.Fatalf("chunking changed the events:\n%q\n%q", whole, bytewise)
		}
		total := 0
		for _, ev := range whole {
			if ev.Type == "" {
				t.Fatal("event without type")
			}
			total += len(ev.Data)
		}
		if total > len(in) {
			t.Fatalf("decoded %d data bytes from %d input bytes", total, len(in))
		}
	})
}

// responseSeeds are JSON-RPC responses to the request "mcpc-fuzz-1".
var responseSeeds = []string{
	`{"jsonrpc":"2.0","id":"mcpc-fuzz-1","result":{}}`,
	`{"jsonrpc":"2.0","id":"mcpc-fuzz-1","error":{"code":-32601,"message":"x","data":null}}`,
	`{"jsonrpc":"2.0","id":"mcpc-fuzz-1","result":{},"error":{}}`,
	`{"jsonrpc":"2.0","id":"other","result":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress"}`,
	`{"jsonrpc":"2.0","id":"mcpc-fuzz-1","result":[]}`,
	`{"jsonrpc":"2.0","id":"mcpc-fuzz-1","id":"mcpc-fuzz-1","result":{}}`,
	`[{"jsonrpc":"2.0"}]`,
	`<html>`,
	``,
}

func FuzzResponseValidate(f *testing.F) {
	const id = "mcpc-fuzz-1"
	for _, s := range responseSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte("event: message\ndata: "+s+"\n\n"), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		m, err := parseMessage(body, id)
		if err == nil && m.kind == kindResponse {
			assertStrictResponse(t, body, id)
			if (m.result == nil) == (m.err == nil) {
				t.Fatal("accepted response without exactly one of result/error")
			}
		}
		var pe *protocolError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("untyped error %v", err)
		}
		_ = parseErrorBody(body, id)

		// The same bytes through the transport's body reader.
		o := &operation{ep: Endpoint{Name: "fuzz"}}
		ct := "application/json"
		if stream {
			ct = "text/event-stream"
		}
		resp := &http.Response{Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body))}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		msg, err := o.readResponse(ctx, ctx, cancel, "tools/call", id, resp)
		switch {
		case err == nil:
			if msg == nil || msg.kind != kindResponse || (msg.result == nil) == (msg.err == nil) {
				t.Fatalf("accepted %+v", msg)
			}
		default:
			var e *Error
			if !errors.As(err, &e) || e.Kind == "" || e.Server != "fuzz" {
				t.Fatalf("error %v is not a typed *Error", err)
			}
		}
	})
}

// assertStrictResponse re-checks an accepted response independently.
func assertStrictResponse(t *testing.T, body []byte, id string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("accepted a body that is not an object: %v", err)
	}
	var v, gotID string
	if json.Unmarshal(m["jsonrpc"], &v) != nil || v != "2.0" {
		t.Fatal(`accepted without "jsonrpc":"2.0"`)
	}
	if json.Unmarshal(m["id"], &gotID) != nil || gotID != id {
		t.Fatal("accepted a foreign id")
	}
	_, r := m["result"]
	_, e := m["error"]
	if r == e {
		t.Fatal("accepted without exactly one of result/error")
	}
	if r && !bytes.HasPrefix(bytes.TrimSpace(m["result"]), []byte("{")) {
		t.Fatal("accepted a non-object result")
	}
}

// schemaSeeds are input schemas: accepted ones, and one per kind of refusal.
var schemaSeeds = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"a":{"type":"string","description":"d","minLength":1}},"required":["a"]}`,
	`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x":{"enum":[1,"a",null]}}}}}}`,
	`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{}}}`,
	`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}`,
	`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`,
	`{"type":["string","null"]}`,
	`{"type":"object","type":"object"}`,
	`[]`, `true`, `{`, ``,
}

func FuzzNormalizeSchema(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add([]byte(s))
	}
	allowed := map[string]bool{"type": true, "properties": true, "required": true, "items": true, "enum": true, "description": true, "x-mcp-header": true}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := NormalizeSchema(in)
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) || se.Rule == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(out) > MaxNormalizedSchemaBytes {
			t.Fatal("output over the size limit")
		}
		var root map[string]any
		if err := json.Unmarshal(out, &root); err != nil {
			t.Fatalf("output is not a JSON object: %v", err)
		}
		if root["type"] != "object" {
			t.Fatalf("root type %v", root["type"])
		}
		var walk func(node map[string]any, depth int)
		walk = func(node map[string]any, depth int) {
			if depth > MaxSchemaDepth {
				t.Fatal("output deeper than the limit")
			}
			for k, v := range node {
				if !allowed[k] {
					t.Fatalf("keyword %q survived", k)
				}
				switch k {
				case "properties":
					for name, sub := range v.(map[string]any) {
						if !ValidToolName(name) {
							t.Fatalf("property name %q survived", name)
						}
						walk(sub.(map[string]any), depth+1)
					}
				case "items":
					walk(v.(map[string]any), depth+1)
				}
			}
		}
		walk(root, 1)
		again, err := NormalizeSchema(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %s -> %s (%v)", out, again, err)
		}
	})
}

// fuzzTransport answers every request with the fuzzed status, content type
// and body; "$ID" in the body is replaced by the request's id so that inputs
// can reach past the id check.
type fuzzTransport struct {
	status int
	ct     string
	body   []byte
}

func (f *fuzzTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var m struct {
		ID string `json:"id"`
	}
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(b, &m)
	}
	body := bytes.ReplaceAll(f.body, []byte("$ID"), []byte(m.ID))
	h := http.Header{"Content-Type": {f.ct}, "Mcp-Session-Id": {"fuzz-session"}}
	return &http.Response{StatusCode: f.status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}

// FuzzClientOperations drives whole operations against a server that answers
// every leg with the same fuzzed response: whatever it sends, the client
// returns a result or a typed error naming the server, and never panics.
func FuzzClientOperations(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"$ID","result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"tools":[{"name":"a","inputSchema":{"type":"object"}}],"content":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","id":"$ID","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"tools":[],"nextCursor":""}}`,
		`{"jsonrpc":"2.0","id":"$ID","error":{"code":-32022,"message":"m","data":{"supported":["2025-03-26"]}}}`,
		`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":"$ID","result":{}}` + "\n\n",
		`<html></html>`,
	} {
		f.Add(200, "application/json", []byte(s))
		f.Add(400, "application/json", []byte(s))
		f.Add(200, "text/event-stream", []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, ct string, body []byte) {
		if status < 100 || status > 999 {
			status = 200
		}
		cl := New(Options{HTTPClient: &http.Client{Transport: &fuzzTransport{status: status, ct: ct, body: body}}, EraCacheTTL: -1})
		ep := Endpoint{Name: "fuzz", URL: "https://fuzz.example.test/mcp", MaxPages: 3, MaxTools: 50}
		check := func(err error) {
			if err == nil {
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind == "" || e.Server != "fuzz" {
				t.Fatalf("untyped error %v", err)
			}
		}
		_, err := cl.Probe(t.Context(), ep)
		check(err)
		_, err = cl.ListTools(t.Context(), ep)
		check(err)
		_, err = cl.CallTool(t.Context(), ep, "a", map[string]any{"q": 1})
		check(err)
	})
}
