package mcp_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
)

// TestEndpointRefusedBeforeSending: configuration and argument errors are
// found before any byte goes out.
func TestEndpointRefusedBeforeSending(t *testing.T) {
	p := profileNamed(t, "modern-stateless")
	cases := []struct {
		name   string
		mutate func(*mcp.Endpoint)
		kind   mcp.Kind
	}{
		{"userinfo", func(e *mcp.Endpoint) { e.URL = "https://user:pw@search.example.test/mcp" }, mcp.KindInvalidEndpoint},
		{"ftp", func(e *mcp.Endpoint) { e.URL = "ftp://search.example.test/mcp" }, mcp.KindInvalidEndpoint},
		{"relative", func(e *mcp.Endpoint) { e.URL = "/mcp" }, mcp.KindInvalidEndpoint},
		{"unparsable", func(e *mcp.Endpoint) { e.URL = "https://[::1" }, mcp.KindInvalidEndpoint},
		{"reserved header", func(e *mcp.Endpoint) { e.Credential.Header = "Mcp-Session-Id" }, mcp.KindInvalidEndpoint},
		{"param header", func(e *mcp.Endpoint) { e.Credential.Header = "mcp-param-region" }, mcp.KindInvalidEndpoint},
		{"header not a token", func(e *mcp.Endpoint) { e.Credential.Header = "X Api Key" }, mcp.KindInvalidEndpoint},
		{"value with CRLF", func(e *mcp.Endpoint) { e.Credential.Value = secret.New("tok\r\nX-Evil: 1") }, mcp.KindInvalidEndpoint},
		{"empty value", func(e *mcp.Endpoint) { e.Credential.Value = secret.Secret{} }, mcp.KindInvalidEndpoint},
		{"http with credential", func(e *mcp.Endpoint) { e.URL = "http://search.example.test/mcp" }, mcp.KindInsecureCredential},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeServer(t, p)
			cl := srv.client(mcp.Options{})
			ep := p.endpoint()
			c.mutate(&ep)
			_, err := cl.Probe(t.Context(), ep)
			if mcp.KindOf(err) != c.kind {
				t.Fatalf("kind %s (%v), want %s", mcp.KindOf(err), err, c.kind)
			}
			confEqual(t, "requests sent", len(srv.requests()), 0)
		})
	}
}

func TestCallToolArgumentsRefusedBeforeSending(t *testing.T) {
	p := profileNamed(t, "legacy-stateless")
	srv := newFakeServer(t, p)
	cl := srv.client(mcp.Options{})
	for name, call := range map[string]func() error{
		"invalid tool name": func() error {
			_, err := cl.CallTool(t.Context(), p.endpoint(), "ns/op", nil)
			return err
		},
		"arguments that do not encode": func() error {
			_, err := cl.CallTool(t.Context(), p.endpoint(), "alpha", map[string]any{"c": make(chan int)})
			return err
		},
		"invalid input schema": func() error {
			_, err := cl.CallTool(t.Context(), p.endpoint(), "alpha", nil, mcp.WithInputSchema(json.RawMessage(`{"$ref":"#"}`)))
			return err
		},
	} {
		if mcp.KindOf(call()) != mcp.KindInvalidArgument {
			t.Errorf("%s: not refused as an invalid argument", name)
		}
	}
	confEqual(t, "requests sent", len(srv.requests()), 0)
}

// TestParamHeadersMirrored: 2026-07-28 calls mirror x-mcp-header arguments
// into Mcp-Param-* headers with the specification's value encoding; legacy
// calls send none.
func TestParamHeadersMirrored(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"greeting":{"type":"string","x-mcp-header":"Greeting"},
		"dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
		"absent":{"type":"string","x-mcp-header":"Absent"},
		"nulled":{"type":"string","x-mcp-header":"Nulled"},
		"o":{"type":"object","properties":{"tenant":{"type":"integer","x-mcp-header":"Tenant"}}},
		"query":{"type":"string"}}}`)
	args := map[string]any{
		"region": "us-west1", "greeting": "Hello, 世界", "dry": false, "nulled": nil,
		"o": map[string]any{"tenant": 42.0}, "query": "SELECT 1",
	}
	want := map[string]string{
		"Mcp-Param-Region":   "us-west1",
		"Mcp-Param-Greeting": "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"Mcp-Param-Dry-Run":  "false",
		"Mcp-Param-Tenant":   "42",
		"Mcp-Param-Absent":   "",
		"Mcp-Param-Nulled":   "",
	}
	for _, name := range []string{"modern-stateless", "legacy-stateless"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, profileNamed(t, name))
			if _, err := h.cl.CallTool(t.Context(), h.ep, "execute_sql", args, mcp.WithInputSchema(schema)); err != nil {
				t.Fatal(err)
			}
			var call *seenRequest
			for _, r := range h.srv.requests() {
				if r.RPCMethod == "tools/call" {
					call = r
				}
			}
			for k, v := range want {
				if !h.p.modern {
					v = ""
				}
				if got := call.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			h.checkWire(t)
		})
	}
}

func TestNotificationRefusalClassified(t *testing.T) {
	h := newHarness(t, profileNamed(t, "legacy-session"))
	h.srv.on("notifications/initialized", func(*seenRequest) *http.Response { return fakeStatus(http.StatusNotFound) })
	_, err := h.cl.Probe(t.Context(), h.ep)
	// The notification carried the session: a 404 means it is gone.
	confWantKind(t, h, err, mcp.KindSessionExpired)
}
