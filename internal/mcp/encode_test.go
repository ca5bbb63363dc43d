package mcp

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// encodeRequest writes what json.Marshal writes for every shape of
// parameters: the maps, lists, strings and booleans it encodes itself,
// and the values it hands to encoding/json.
func TestEncodeRequestMatchesMarshal(t *testing.T) {
	type point struct {
		X, Y int
	}
	params := []any{
		nil,
		map[string]any{},
		map[string]any(nil),
		map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}},
		map[string]any{
			"name": "tool<&>", "arguments": map[string]any{
				"s": "quote \" backslash \\ <b> & \u2028\u2029 \x00\x1f\b\f\n\r\t bad \xff utf-8 日本 🚀",
				"n": 1.5, "i": float64(1e21), "small": 1e-7, "neg": math.Copysign(0, -1), "int": 42, "big": json.Number("12345678901234567890"),
				"t": true, "f": false, "null": nil, "list": []any{"a", 1.0, nil, []any{}, map[string]any{"z": "1", "a": "2"}},
				"nilList": []any(nil), "raw": json.RawMessage(` { "b" : 1, "a" : "<x>" } `),
				"struct": point{1, 2}, "strings": map[string]string{"b": "2", "a": "1", "<": ">"}, "nilStrings": map[string]string(nil),
				"bytes": []byte("bin"), "typed": []string{"x", "y"},
			},
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "mcp-catalog", "version": "v1"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
				"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			},
		},
		point{3, 4},
	}
	for _, id := range []string{"", "mcpc-1-1"} {
		for i, p := range params {
			r := rpcRequest{JSONRPC: "2.0", ID: id, Method: "tools/call", Params: p}
			got, err := encodeRequest(r)
			if err != nil {
				t.Fatalf("params %d: %v", i, err)
			}
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("params %d, id %q:\n got %s\nwant %s", i, id, got, want)
			}
		}
	}
	// A value encoding/json refuses is refused here too.
	for _, bad := range []any{math.NaN(), make(chan int), map[string]any{"a": []any{math.Inf(1)}}} {
		if _, err := encodeRequest(rpcRequest{JSONRPC: "2.0", Method: "m", Params: map[string]any{"v": bad}}); err == nil {
			t.Errorf("%v was encoded", bad)
		}
	}
}

func FuzzEncodeRequestString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\u2028", "\xff", "\"\\\n"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		r := rpcRequest{JSONRPC: "2.0", ID: value, Method: key, Params: map[string]any{key: value, "l": []any{value}, "m": map[string]string{value: key}}}
		got, err := encodeRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(r)
		if !bytes.Equal(got, want) {
			t.Errorf("got %s, want %s", got, want)
		}
	})
}

// The metadata encoded once per revision is, byte for byte, what the map
// it replaces encodes to, whichever encoder writes the request.
func TestEncodedMetaMatchesTheMap(t *testing.T) {
	c := New(Options{ClientName: `name "quoted" <x>`, ClientVersion: "v1\u2028"})
	for _, version := range []string{"2026-07-28", "2099-01-01"} {
		o := &operation{c: c, version: version}
		traced := &operation{c: c, version: version, trace: TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
		want := traced.withMeta(nil)["_meta"].(map[string]any)
		delete(want, "traceparent")
		for _, p := range []map[string]any{o.withMeta(nil), o.withMeta(nil)} {
			got, err := encodeRequest(rpcRequest{JSONRPC: "2.0", Method: "m", Params: p})
			if err != nil {
				t.Fatal(err)
			}
			viaJSON, err := json.Marshal(rpcRequest{JSONRPC: "2.0", Method: "m", Params: p})
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, err := json.Marshal(rpcRequest{JSONRPC: "2.0", Method: "m", Params: map[string]any{"_meta": want}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantJSON) || !bytes.Equal(viaJSON, wantJSON) {
				t.Errorf("revision %s:\n got %s\n via encoding/json %s\nwant %s", version, got, viaJSON, wantJSON)
			}
		}
	}
}

// Arguments handed over encoded (WithEncodedArguments, as the gateway
// encodes them with encoding/json) make the same request as the map they
// encode.
func TestEncodedArgumentsMakeTheSameRequest(t *testing.T) {
	args := map[string]any{"text": "quote \" <b> & \u2028 日本", "n": json.Number("12345678901234567890"), "list": []any{"a", 1.5, nil, map[string]any{"z": true, "a": false}}, "empty": map[string]any{}}
	encoded, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	viaMap, err := encodeRequest(rpcRequest{JSONRPC: "2.0", ID: "1", Method: "tools/call", Params: map[string]any{"name": "echo", "arguments": args}})
	if err != nil {
		t.Fatal(err)
	}
	viaBytes, err := encodeRequest(rpcRequest{JSONRPC: "2.0", ID: "1", Method: "tools/call", Params: map[string]any{"name": "echo", "arguments": rawJSON(encoded)}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viaMap, viaBytes) {
		t.Errorf("\n map   %s\n bytes %s", viaMap, viaBytes)
	}
}
