package mcp_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// profileNamed returns a conformance profile by name.
func profileNamed(t *testing.T, name string) confProfile {
	for _, p := range confProfiles() {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no profile %q", name)
	return confProfile{}
}

// TestEraDetection covers the dual-era rules for Streamable HTTP: what the
// answer to the modern attempt (server/discover) means.
func TestEraDetection(t *testing.T) {
	legacyHandshake := []string{"server/discover", "initialize", "notifications/initialized"}
	cases := []struct {
		name     string
		profile  string
		discover fakeHandler
		wire     []string
		kind     mcp.Kind // "" for success
		rpcCode  int
	}{
		{
			name: "200 method-not-found falls back", profile: "legacy-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusOK, fakeRPCError(r.ID, -32601, "Method not found", nil))
			},
			wire: legacyHandshake,
		},
		{
			name: "404 empty falls back", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response { return fakeStatus(http.StatusNotFound) },
			wire:     legacyHandshake,
		},
		{
			name: "405 falls back", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response { return fakeStatus(http.StatusMethodNotAllowed) },
			wire:     legacyHandshake,
		},
		{
			name: "400 html falls back", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response {
				return fakeText(http.StatusBadRequest, "text/html", "<h1>Bad Request</h1>")
			},
			wire: legacyHandshake,
		},
		{
			name: "unsupported version listing a legacy revision selects it", profile: "legacy-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusBadRequest, fakeRPCError(r.ID, -32022, "Unsupported protocol version",
					map[string]any{"supported": []any{"2025-03-26"}, "requested": "2026-07-28"}))
			},
			// Straight to initialize with that revision; no second discover.
			wire: legacyHandshake,
		},
		{
			name: "header mismatch is a modern error, no fallback", profile: "modern-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusBadRequest, fakeRPCError(r.ID, -32020, "Header mismatch", nil))
			},
			wire: []string{"server/discover"}, kind: mcp.KindHTTPStatus, rpcCode: -32020,
		},
		{
			name: "missing capability is a modern error, no fallback", profile: "modern-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusBadRequest, fakeRPCError(nil, -32021, "Missing capability",
					map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}}))
			},
			wire: []string{"server/discover"}, kind: mcp.KindHTTPStatus, rpcCode: -32021,
		},
		{
			name: "modern error in a 200 is still modern", profile: "modern-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusOK, fakeRPCError(r.ID, -32022, "Unsupported protocol version",
					map[string]any{"supported": []any{"2030-01-01"}}))
			},
			wire: []string{"server/discover"}, kind: mcp.KindUnsupportedVersion, rpcCode: -32022,
		},
		{
			name: "401 is not an era signal", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response { return fakeStatus(http.StatusUnauthorized) },
			wire:     []string{"server/discover"}, kind: mcp.KindUnauthorized,
		},
		{
			name: "403 is not an era signal", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response { return fakeStatus(http.StatusForbidden) },
			wire:     []string{"server/discover"}, kind: mcp.KindForbidden,
		},
		{
			name: "429 is not an era signal", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response { return fakeStatus(http.StatusTooManyRequests) },
			wire:     []string{"server/discover"}, kind: mcp.KindHTTPStatus,
		},
		{
			name: "5xx is not an era signal", profile: "legacy-stateless",
			discover: func(*seenRequest) *http.Response { return fakeStatus(http.StatusServiceUnavailable) },
			wire:     []string{"server/discover"}, kind: mcp.KindServerError,
		},
		{
			name: "discover result naming only a legacy revision", profile: "legacy-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{
					"supportedVersions": []any{"2025-03-26"}, "capabilities": map[string]any{},
				}})
			},
			wire: legacyHandshake,
		},
		{
			// A legacy server that answers any method it does not know with
			// an empty success: not a recognised modern answer, so legacy.
			name: "200 empty object result falls back", profile: "legacy-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{}})
			},
			wire: legacyHandshake,
		},
		{
			name: "discover result without supportedVersions falls back", profile: "legacy-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{"capabilities": map[string]any{}}})
			},
			wire: legacyHandshake,
		},
		{
			// supportedVersions present: the server claims a discovery
			// result, and a malformed one is an error, not an era signal.
			name: "discover result with malformed supportedVersions is invalid", profile: "modern-stateless",
			discover: func(r *seenRequest) *http.Response {
				return fakeJSON(http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{"supportedVersions": "2026-07-28"}})
			},
			wire: []string{"server/discover"}, kind: mcp.KindInvalidResponse,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, profileNamed(t, c.profile))
			h.srv.on("server/discover", c.discover)
			p, err := h.cl.Probe(t.Context(), h.ep)
			confEqual(t, "wire", h.srv.rpcMethods(), c.wire)
			if c.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range h.srv.requests() {
					if r.RPCMethod == "initialize" && c.name == "unsupported version listing a legacy revision selects it" {
						confEqual(t, "requested", r.Params["protocolVersion"], any("2025-03-26"))
					}
				}
				confEqual(t, "version", p.ProtocolVersion, h.p.version)
				return
			}
			e := confWantKind(t, h, err, c.kind)
			confEqual(t, "rpc code", e.RPCCode, c.rpcCode)
		})
	}
}

// TestEraCacheRecoversWhenServerChangesEra: a remembered era that turns out
// wrong is forgotten and detected afresh within the same operation.
func TestEraCacheRecoversWhenServerChangesEra(t *testing.T) {
	t.Run("modern to legacy during a call", func(t *testing.T) {
		h := newHarness(t, profileNamed(t, "modern-stateless"))
		if _, err := h.cl.Probe(t.Context(), h.ep); err != nil {
			t.Fatal(err)
		}
		// The server is redeployed as a legacy, session-issuing one.
		legacy := profileNamed(t, "legacy-session")
		h.srv.p.modern, h.srv.p.version, h.srv.p.session, h.srv.p.sse = false, legacy.version, legacy.session, true
		before := len(h.srv.requests())
		out, err := h.cl.CallTool(t.Context(), h.ep, "alpha", nil)
		if err != nil {
			t.Fatal(err)
		}
		confEqual(t, "text", out.Text, "ok")
		// The first tools/call was refused with a 400 (not run); the era
		// fallback sends it once more, in the legacy era.
		confEqual(t, "wire", h.srv.rpcMethods()[before:], []string{
			"tools/call", "server/discover", "initialize", "notifications/initialized", "tools/call", http.MethodDelete,
		})
	})
	t.Run("legacy to modern at initialize", func(t *testing.T) {
		h := newHarness(t, profileNamed(t, "legacy-stateless"))
		h.credential = false
		h.ep.Credential = nil
		if _, err := h.cl.Probe(t.Context(), h.ep); err != nil {
			t.Fatal(err)
		}
		modern := profileNamed(t, "modern-stateless")
		h.srv.p.modern, h.srv.p.version = true, modern.version
		before := len(h.srv.requests())
		p, err := h.cl.Probe(t.Context(), h.ep)
		if err != nil {
			t.Fatal(err)
		}
		confEqual(t, "version", p.ProtocolVersion, modern.version)
		confEqual(t, "wire", h.srv.rpcMethods()[before:], []string{"initialize", "server/discover"})
	})
	t.Run("modern to lenient legacy at probe", func(t *testing.T) {
		h := newHarness(t, profileNamed(t, "modern-stateless"))
		if _, err := h.cl.Probe(t.Context(), h.ep); err != nil {
			t.Fatal(err)
		}
		// Redeployed as a legacy server that answers server/discover with an
		// empty success instead of an error.
		legacy := profileNamed(t, "legacy-stateless")
		h.srv.p.modern, h.srv.p.version = false, legacy.version
		h.srv.on("server/discover", func(r *seenRequest) *http.Response {
			return fakeJSON(http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{}})
		})
		before := len(h.srv.requests())
		p, err := h.cl.Probe(t.Context(), h.ep)
		if err != nil {
			t.Fatal(err)
		}
		confEqual(t, "version", p.ProtocolVersion, legacy.version)
		// The remembered era's discover is refused as stale, detection
		// runs once more and falls back.
		confEqual(t, "wire", h.srv.rpcMethods()[before:], []string{
			"server/discover", "server/discover", "initialize", "notifications/initialized",
		})
	})
	t.Run("a 400 from a server still modern is not retried", func(t *testing.T) {
		h := newHarness(t, profileNamed(t, "modern-stateless"))
		if _, err := h.cl.Probe(t.Context(), h.ep); err != nil {
			t.Fatal(err)
		}
		h.srv.on("tools/call", func(r *seenRequest) *http.Response {
			return fakeJSON(http.StatusBadRequest, fakeRPCError(r.ID, -32602, "Invalid params", nil))
		})
		before := len(h.srv.requests())
		_, err := h.cl.CallTool(t.Context(), h.ep, "alpha", nil)
		e := confWantKind(t, h, err, mcp.KindHTTPStatus)
		confEqual(t, "rpc code", e.RPCCode, -32602)
		// The era is re-checked, it has not changed, the call is not re-sent.
		confEqual(t, "wire", h.srv.rpcMethods()[before:], []string{"tools/call", "server/discover"})
	})
	t.Run("a tools/call refused for auth is not retried", func(t *testing.T) {
		h := newHarness(t, profileNamed(t, "modern-stateless"))
		if _, err := h.cl.Probe(t.Context(), h.ep); err != nil {
			t.Fatal(err)
		}
		h.srv.on("tools/call", func(*seenRequest) *http.Response { return fakeStatus(http.StatusUnauthorized) })
		_, err := h.cl.CallTool(t.Context(), h.ep, "alpha", nil)
		confWantKind(t, h, err, mcp.KindUnauthorized)
		confEqual(t, "tools/call sent", h.srv.count("tools/call"), 1)
	})
}

func TestEraCacheDisabled(t *testing.T) {
	p := profileNamed(t, "legacy-stateless")
	srv := newFakeServer(t, p)
	cl := srv.client(mcp.Options{EraCacheTTL: -1})
	ep := p.endpoint()
	for range 2 {
		if _, err := cl.Probe(t.Context(), ep); err != nil {
			t.Fatal(err)
		}
	}
	confEqual(t, "discover legs", srv.count("server/discover"), 2)
}

func TestEraCacheIsPerOrigin(t *testing.T) {
	p := profileNamed(t, "legacy-stateless")
	srv := newFakeServer(t, p)
	cl := srv.client(mcp.Options{})
	ep := p.endpoint()
	ep.URL = "https://tickets.example.test/a"
	if _, err := cl.Probe(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
	// Same origin spelled differently: remembered.
	ep.URL = "https://TICKETS.example.test:443/b"
	if _, err := cl.Probe(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
	confEqual(t, "discover legs", srv.count("server/discover"), 1)
	// Another port is another origin.
	ep.URL = "https://tickets.example.test:8443/a"
	if _, err := cl.Probe(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
	confEqual(t, "discover legs", srv.count("server/discover"), 2)
}

func TestProbeLatencyFromOperationClock(t *testing.T) {
	p := profileNamed(t, "modern-stateless")
	srv := newFakeServer(t, p)
	clock := newFakeClock()
	srv.onRequest = func(*seenRequest) { clock.Step(1500 * time.Millisecond) }
	cl := srv.client(mcp.Options{Clock: clock})
	res, err := cl.Probe(t.Context(), p.endpoint())
	if err != nil {
		t.Fatal(err)
	}
	confEqual(t, "latency", res.Latency, 1500*time.Millisecond)
	out, err := cl.CallTool(t.Context(), p.endpoint(), "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	confEqual(t, "call latency", out.Latency, 1500*time.Millisecond)
}

func TestKindOf(t *testing.T) {
	if mcp.KindOf(nil) != "" || mcp.KindOf(errors.New("x")) != "" {
		t.Fatal("KindOf of a foreign error is not empty")
	}
}
