package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// The real-peer tests run the client against MCP servers written by others
// (the official go-sdk and mcp-go, in-process, see test/mcpserver), in their
// stateless and session-issuing modes. The conformance suite proves the client
// keeps our reading of the specification; these prove that reading
// interoperates with implementations we did not write.

// peer is one server configuration and what the client must observe of it.
type peer struct {
	name string
	opts mcpserver.Options
	// version is the protocol revision the client must end up speaking:
	// 2026-07-28 where the peer serves it, else the newest legacy revision
	// the peer speaks.
	version string
	// session is whether the peer issues a session id to this client.
	session bool
	// handlerCancelled is whether the peer's tool handler ends when the
	// client abandons a call: libraries that tie the handler to the HTTP
	// request do so when the request is dropped; go-sdk's sessions do so on
	// the notifications/cancelled the client sends in the session (see the
	// test/mcpserver package doc). Where neither applies (a legacy server
	// without sessions), only the dropped request itself can be asserted.
	handlerCancelled bool
}

var peers = []peer{
	{
		name:    "go-sdk/stateless/sse",
		opts:    mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, PageSize: 100},
		version: "2026-07-28", session: false, handlerCancelled: true,
	},
	{
		name:    "go-sdk/stateless/json",
		opts:    mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, JSONResponse: true, PageSize: 300},
		version: "2026-07-28", session: false, handlerCancelled: true,
	},
	{
		// go-sdk serves 2026-07-28 only without sessions: the client has to
		// fall back to initialize.
		name:    "go-sdk/stateful/sse",
		opts:    mcpserver.Options{Flavor: mcpserver.GoSDK, PageSize: 100},
		version: "2025-11-25", session: true, handlerCancelled: true,
	},
	{
		name:    "go-sdk/stateful/json",
		opts:    mcpserver.Options{Flavor: mcpserver.GoSDK, JSONResponse: true, PageSize: 700},
		version: "2025-11-25", session: true, handlerCancelled: true,
	},
	{
		// The legacy profile that issues no session.
		name:    "go-sdk/stateless/legacy",
		opts:    mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, LegacyOnly: true, PageSize: 100},
		version: "2025-11-25", session: false, handlerCancelled: false,
	},
	{
		// A server that speaks 2025-06-18 and nothing else: go-sdk refuses
		// the modern request listing only that revision, and refuses a
		// request naming another in MCP-Protocol-Version.
		name:    "go-sdk/stateful/2025-06-18",
		opts:    mcpserver.Options{Flavor: mcpserver.GoSDK, ProtocolVersions: []string{"2025-06-18"}, PageSize: 150},
		version: "2025-06-18", session: true, handlerCancelled: true,
	},
	{
		name:    "mcp-go/stateless",
		opts:    mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true, PageSize: 250},
		version: "2026-07-28", session: false, handlerCancelled: true,
	},
	{
		// mcp-go decides the era per request: a modern client gets no
		// session even from a stateful server.
		name:    "mcp-go/stateful",
		opts:    mcpserver.Options{Flavor: mcpserver.MCPGo, PageSize: 400},
		version: "2026-07-28", session: false, handlerCancelled: true,
	},
	{
		name:    "mcp-go/stateful/legacy",
		opts:    mcpserver.Options{Flavor: mcpserver.MCPGo, LegacyOnly: true, PageSize: 250},
		version: "2025-11-25", session: true, handlerCancelled: true,
	},
	{
		name:    "mcp-go/stateless/legacy",
		opts:    mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true, LegacyOnly: true, PageSize: 250},
		version: "2025-11-25", session: false, handlerCancelled: true,
	},
}

// catalogSize is the generated catalog of the import test; with the five
// built-in tools no peer's page size divides the total, so every library
// ends on a short page and the page count is total/size+1.
const catalogSize = 2500

const peerTitle = "Peer test server"

// pngBase64Prefix is how the base64 encoding of any PNG begins.
const pngBase64Prefix = "iVBOR"
const peerVersion = "1.2.3"

// startPeer starts p's server with the test's changes to its options.
func startPeer(t *testing.T, p peer, change func(*mcpserver.Options)) *mcpserver.Server {
	t.Helper()
	o := p.opts
	o.Title, o.Version = peerTitle, peerVersion
	if change != nil {
		change(&o)
	}
	return mcpserver.Start(t, o)
}

// loopbackEgress is an administrator's policy that lets servers which opt in
// reach loopback, where the test servers listen.
var loopbackEgress = egress.Policy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// endpoint is the usual endpoint of a peer: loopback allowed for this server
// only (within loopbackEgress), no credential.
func endpoint(srv *mcpserver.Server) mcp.Endpoint {
	return mcp.Endpoint{
		Name:                "peer",
		URL:                 srv.URL,
		AllowPrivateNetwork: true,
		Timeout:             20 * time.Second,
		MaxPages:            100,
		MaxTools:            10000,
	}
}

func newClient() *mcp.Client {
	return mcp.New(mcp.Options{ClientName: "peers-test", ClientVersion: "0.0.1", Egress: loopbackEgress})
}

func forEachPeer(t *testing.T, f func(t *testing.T, p peer)) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) { f(t, p) })
	}
}

func TestPeerHandshake(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		srv := startPeer(t, p, nil)
		res, err := newClient().Probe(t.Context(), endpoint(srv))
		if err != nil {
			t.Fatalf("Probe: %v", err)
		}
		want := mcp.ServerInfo{Name: "mcpserver-" + string(p.opts.Flavor), Title: peerTitle, Version: peerVersion}
		if res.Server != want {
			t.Errorf("server info = %+v, want %+v", res.Server, want)
		}
		if res.ProtocolVersion != p.version {
			t.Errorf("protocol version = %q, want %q", res.ProtocolVersion, p.version)
		}
		if !slices.Contains(res.Capabilities, "tools") {
			t.Errorf("capabilities = %v, want tools among them", res.Capabilities)
		}
		if res.SessionIssued != p.session {
			t.Errorf("SessionIssued = %v, want %v", res.SessionIssued, p.session)
		}

		st := srv.Stats()
		if p.version == "2026-07-28" {
			// The modern era has no handshake and no session.
			if st.Methods["initialize"] != 0 || st.SessionCarried != 0 || st.Deletes != 0 {
				t.Errorf("modern probe used legacy machinery: %+v", st)
			}
		} else {
			if st.Methods["initialize"] != 1 || st.Methods["notifications/initialized"] != 1 {
				t.Errorf("legacy handshake: methods %v, want one initialize and one notifications/initialized", st.Methods)
			}
		}
		// MCP-Protocol-Version goes on every request after the version is
		// known, in both eras.
		if st.LastProtocolVersion != p.version {
			t.Errorf("last MCP-Protocol-Version header = %q, want %q", st.LastProtocolVersion, p.version)
		}
		// A session the server issued is carried and ended with DELETE; with
		// no session there is nothing to carry or delete.
		if p.session {
			if st.SessionCarried == 0 || st.Deletes != 1 {
				t.Errorf("session: carried on %d requests, %d DELETEs; want some and 1", st.SessionCarried, st.Deletes)
			}
		} else if st.SessionCarried != 0 || st.Deletes != 0 {
			t.Errorf("no session issued, yet %d requests carried one and %d DELETEs were sent", st.SessionCarried, st.Deletes)
		}
	})
}

func TestPeerCatalogAcrossPages(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		srv := startPeer(t, p, func(o *mcpserver.Options) { o.Tools = catalogSize })
		total := len(srv.ToolNames())
		wantPages := total/p.opts.PageSize + 1
		if total != catalogSize+len(mcpserver.BuiltinTools()) || total%p.opts.PageSize == 0 || wantPages < 2 {
			t.Fatalf("peer setup: %d tools with page size %d do not make several pages ending short", total, p.opts.PageSize)
		}
		cat, err := newClient().ListTools(t.Context(), endpoint(srv))
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		if len(cat.Skipped) != 0 {
			t.Errorf("skipped %v, want none", cat.Skipped)
		}
		var names []string
		for _, tool := range cat.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if len(names) != total || !slices.Equal(names, srv.ToolNames()) {
			t.Errorf("imported %d tools, want the server's %d (first names: %v)", len(names), total, names[:min(5, len(names))])
		}
		if cat.Pages != wantPages {
			t.Errorf("Pages = %d, want %d (page size %d)", cat.Pages, wantPages, p.opts.PageSize)
		}
		st := srv.Stats()
		if st.Methods["tools/list"] < cat.Pages {
			t.Errorf("server saw %d tools/list requests for %d pages", st.Methods["tools/list"], cat.Pages)
		}
		if cat.Probe.ProtocolVersion != p.version || cat.Probe.SessionIssued != p.session {
			t.Errorf("catalog probe = %+v, want version %s, session %v", cat.Probe, p.version, p.session)
		}
		// Every page of a session-issuing peer carries the session id.
		if p.session && st.SessionCarried < cat.Pages {
			t.Errorf("session id carried on %d requests, want at least the %d pages", st.SessionCarried, cat.Pages)
		}
		if !p.session && st.SessionCarried != 0 {
			t.Errorf("session id carried on %d requests of a peer that issued none", st.SessionCarried)
		}

		byName := map[string]mcp.Tool{}
		for _, tool := range cat.Tools {
			byName[tool.Name] = tool
		}
		if echo := byName[mcpserver.ToolEcho]; echo.Title != "Echo" || echo.Description != "Returns its text argument." {
			t.Errorf("echo = %+v", echo)
		}
		if d := byName["tool_1234"].Description; d != "Catalog tool number 1234." {
			t.Errorf("tool_1234 description = %q", d)
		}
		checkNestedSchema(t, byName[mcpserver.ToolNested].InputSchema)
	})
}

// checkNestedSchema checks that create_ticket's schema, as the peer library
// serialised it, keeps its nested structure through normalisation and loses
// the keywords a tool input schema does not need.
func checkNestedSchema(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var s struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type       string   `json:"type"`
			Required   []string `json:"required"`
			Properties map[string]struct {
				Type     string   `json:"type"`
				Enum     []string `json:"enum"`
				Required []string `json:"required"`
				Items    *struct {
					Type string `json:"type"`
				} `json:"items"`
			} `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("create_ticket schema does not decode: %v (%s)", err, raw)
	}
	ticket := s.Properties["ticket"]
	props := ticket.Properties
	if s.Type != "object" || !slices.Equal(s.Required, []string{"ticket"}) ||
		ticket.Type != "object" || !slices.Equal(ticket.Required, []string{"title"}) ||
		props["title"].Type != "string" ||
		!slices.Equal(props["priority"].Enum, []string{"low", "normal", "high"}) ||
		props["labels"].Type != "array" || props["labels"].Items == nil || props["labels"].Items.Type != "string" ||
		props["reporter"].Type != "object" || !slices.Equal(props["reporter"].Required, []string{"id"}) ||
		s.Properties["dry_run"].Type != "boolean" {
		t.Errorf("create_ticket schema lost structure: %s", raw)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	for _, dropped := range []string{"$schema", "examples"} {
		if _, ok := top[dropped]; ok {
			t.Errorf("create_ticket schema kept %q: %s", dropped, raw)
		}
	}
}

func TestPeerCallTool(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		srv := startPeer(t, p, nil)
		c, ep := newClient(), endpoint(srv)

		t.Run("echo", func(t *testing.T) {
			out, err := c.CallTool(t.Context(), ep, mcpserver.ToolEcho, map[string]any{"text": "grüß dich"})
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError || out.Text != "grüß dich" || len(out.Dropped) != 0 {
				t.Errorf("outcome = %+v", out)
			}
		})

		t.Run("nested arguments", func(t *testing.T) {
			args := map[string]any{"ticket": map[string]any{"title": "Printer on fire", "labels": []string{"hw"}, "reporter": map[string]any{"id": 7}}}
			out, err := c.CallTool(t.Context(), ep, mcpserver.ToolNested, args)
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError || out.Text != "ticket created: Printer on fire" {
				t.Errorf("outcome = %+v", out)
			}
		})

		t.Run("isError", func(t *testing.T) {
			out, err := c.CallTool(t.Context(), ep, mcpserver.ToolFail, nil)
			if err != nil {
				t.Fatalf("a tool error is an outcome, not a failed operation: %v", err)
			}
			if !out.IsError || out.Text != mcpserver.FailText {
				t.Errorf("outcome = %+v, want isError with %q", out, mcpserver.FailText)
			}
		})

		t.Run("image and text", func(t *testing.T) {
			out, err := c.CallTool(t.Context(), ep, mcpserver.ToolImageAndText, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError || !maps.Equal(out.Dropped, map[string]int{"image": 1}) {
				t.Errorf("outcome = %+v, want one dropped image", out)
			}
			// The note leads; the text block follows it.
			note, ok := strings.CutSuffix(out.Text, mcpserver.ImageCaption)
			if !ok || strings.TrimSpace(note) == "" {
				t.Fatalf("text = %q, want a note followed by %q", out.Text, mcpserver.ImageCaption)
			}
			if !strings.Contains(note, "image") {
				t.Errorf("note %q does not name the dropped kind", note)
			}
			// The note is the client's words: neither the image bytes (every
			// PNG's base64 starts with pngBase64Prefix) nor the server's MIME
			// type.
			if strings.Contains(note, pngBase64Prefix) || strings.Contains(note, "image/png") {
				t.Errorf("note %q repeats server bytes", note)
			}
			if out.Result != nil {
				t.Errorf("the result as sent was kept for a caller that did not ask for it")
			}
		})

		t.Run("the whole result, for a caller that asks", func(t *testing.T) {
			out, err := c.CallTool(t.Context(), ep, mcpserver.ToolImageAndText, nil, mcp.WithFullResult())
			if err != nil {
				t.Fatal(err)
			}
			// The text rules hold still; the result as sent is beside them.
			if !maps.Equal(out.Dropped, map[string]int{"image": 1}) || !strings.HasSuffix(out.Text, mcpserver.ImageCaption) {
				t.Errorf("outcome = %+v", out)
			}
			var res struct {
				Content []struct{ Type, Data, MIMEType string }
			}
			if err := json.Unmarshal(out.Result, &res); err != nil || len(res.Content) != 2 || res.Content[0].Type != "image" ||
				!strings.HasPrefix(res.Content[0].Data, pngBase64Prefix) || res.Content[1].Type != "text" {
				t.Errorf("result %s (%v)", out.Result, err)
			}
		})

		st := srv.Stats()
		want := map[string]int{mcpserver.ToolEcho: 1, mcpserver.ToolNested: 1, mcpserver.ToolFail: 1, mcpserver.ToolImageAndText: 2}
		for tool, n := range want {
			if st.Calls[tool] != n {
				t.Errorf("server ran %s %d times, want %d", tool, st.Calls[tool], n)
			}
		}
		// Remote names go on the wire as they are.
		if st.Methods["tools/call"] != 5 {
			t.Errorf("server saw %d tools/call requests, want 5", st.Methods["tools/call"])
		}
	})
}

func TestPeerCredential(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		const token = "peer-token-1"
		withBearer := func(o *mcpserver.Options) { o.RequireBearer = token }

		t.Run("bearer presented over http with opt-in", func(t *testing.T) {
			srv := startPeer(t, p, withBearer)
			ep := endpoint(srv)
			ep.Credential = &mcp.Credential{Value: secret.New(token)}
			ep.AllowInsecureCredential = true
			if _, err := newClient().ListTools(t.Context(), ep); err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			st := srv.Stats()
			if st.Rejected != 0 || st.LastCredential != "Bearer "+token {
				t.Errorf("server saw credential %q, rejected %d requests", st.LastCredential, st.Rejected)
			}
			// Every leg, DELETE included, carries it.
			if st.CredentialPresented != st.Requests {
				t.Errorf("credential on %d of %d requests", st.CredentialPresented, st.Requests)
			}
		})

		t.Run("missing credential is Unauthorized", func(t *testing.T) {
			srv := startPeer(t, p, withBearer)
			_, err := newClient().Probe(t.Context(), endpoint(srv))
			if k := mcp.KindOf(err); k != mcp.KindUnauthorized {
				t.Fatalf("kind = %q (%v), want %q", k, err, mcp.KindUnauthorized)
			}
			// The peer challenges (WWW-Authenticate): it is up and wants a
			// credential, which a probe reports differently from "down".
			var me *mcp.Error
			if !errors.As(err, &me) || !me.Challenged {
				t.Errorf("the 401 carried a WWW-Authenticate challenge, but Challenged is false: %v", err)
			}
			if st := srv.Stats(); st.Rejected == 0 || len(st.Methods) != 0 {
				t.Errorf("the library must not have been reached: %+v", st)
			}
		})

		t.Run("wrong and rotated credential", func(t *testing.T) {
			srv := startPeer(t, p, withBearer)
			ep := endpoint(srv)
			ep.AllowInsecureCredential = true
			ep.Credential = &mcp.Credential{Value: secret.New("not-it")}
			if _, err := newClient().Probe(t.Context(), ep); mcp.KindOf(err) != mcp.KindUnauthorized {
				t.Errorf("wrong token: %v, want %q", err, mcp.KindUnauthorized)
			}
			srv.SetCredential("peer-token-2")
			ep.Credential = &mcp.Credential{Value: secret.New(token)}
			if _, err := newClient().Probe(t.Context(), ep); mcp.KindOf(err) != mcp.KindUnauthorized {
				t.Errorf("rotated-out token: %v, want %q", err, mcp.KindUnauthorized)
			}
			ep.Credential = &mcp.Credential{Value: secret.New("peer-token-2")}
			if _, err := newClient().Probe(t.Context(), ep); err != nil {
				t.Errorf("rotated-in token: %v", err)
			}
		})

		t.Run("custom header", func(t *testing.T) {
			srv := startPeer(t, p, func(o *mcpserver.Options) { o.RequireHeader = mcpserver.Header{Name: "X-Api-Key", Value: "k-1"} })
			ep := endpoint(srv)
			ep.Credential = &mcp.Credential{Header: "X-Api-Key", Value: secret.New("k-1")}
			ep.AllowInsecureCredential = true
			if _, err := newClient().Probe(t.Context(), ep); err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if st := srv.Stats(); st.LastCredential != "k-1" || st.Rejected != 0 {
				t.Errorf("server saw %q, rejected %d", st.LastCredential, st.Rejected)
			}
		})

		t.Run("no credential over http without opt-in", func(t *testing.T) {
			srv := startPeer(t, p, withBearer)
			ep := endpoint(srv)
			ep.Credential = &mcp.Credential{Value: secret.New(token)}
			_, err := newClient().Probe(t.Context(), ep)
			if k := mcp.KindOf(err); k != mcp.KindInsecureCredential {
				t.Errorf("kind = %q (%v), want %q", k, err, mcp.KindInsecureCredential)
			}
			if n := srv.Requests(); n != 0 {
				t.Errorf("server received %d requests, want none", n)
			}
		})
	})
}

func TestPeerLoopbackNeedsOptIn(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		srv := startPeer(t, p, nil)
		ep := endpoint(srv)
		ep.AllowPrivateNetwork = false
		_, err := newClient().Probe(t.Context(), ep)
		if k := mcp.KindOf(err); k != mcp.KindBlockedAddress {
			t.Errorf("kind = %q (%v), want %q", k, err, mcp.KindBlockedAddress)
		}
		if n := srv.Requests(); n != 0 {
			t.Errorf("server received %d requests, want none", n)
		}
	})
}

func TestPeerCancelSlowCall(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		srv := startPeer(t, p, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancelledAt := make(chan time.Time, 1)
		go func() {
			// Cancel only once the call is running upstream, so the test is
			// about an in-flight leg and not a request never sent.
			if _, ok := srv.Await(10*time.Second, func(s mcpserver.Stats) bool { return s.SlowStarted == 1 }); ok {
				cancelledAt <- time.Now()
				cancel()
			}
		}()

		_, err := newClient().CallTool(ctx, endpoint(srv), mcpserver.ToolSlow, map[string]any{"seconds": 30})
		returned := time.Now()
		if k := mcp.KindOf(err); k != mcp.KindCancelled {
			t.Fatalf("kind = %q (%v), want %q", k, err, mcp.KindCancelled)
		}
		at := <-cancelledAt
		// About a second, with room for a loaded machine; the slow call
		// itself would take 30s.
		if d := returned.Sub(at); d > 2*time.Second {
			t.Errorf("CallTool returned %v after the cancellation", d)
		}

		// The client dropped the upstream leg, and did not retry the call.
		if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.Aborted >= 1 }); !ok {
			t.Errorf("server did not see the call's request dropped: %+v", st)
		}
		if st := srv.Stats(); st.Methods["tools/call"] != 1 || st.SlowStarted != 1 {
			t.Errorf("tools/call sent %d times, slow started %d times; want 1 and 1", st.Methods["tools/call"], st.SlowStarted)
		}
		if p.handlerCancelled {
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.SlowCancelled == 1 }); !ok {
				t.Errorf("upstream handler was not cancelled: %+v", st)
			}
		}
		// An abandoned session is ended, not left for the server to expire.
		if p.session {
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.Deletes == 1 }); !ok {
				t.Errorf("the session of the abandoned call was not deleted: %+v", st)
			}
		}
	})
}

func TestPeerBudgetExhausted(t *testing.T) {
	forEachPeer(t, func(t *testing.T, p peer) {
		// Each case mostly waits out its budget; waiting side by side
		// costs the machine nothing.
		t.Parallel()
		srv := startPeer(t, p, nil)
		ep := endpoint(srv)
		ep.Timeout = time.Second
		start := time.Now()
		_, err := newClient().CallTool(t.Context(), ep, mcpserver.ToolSlow, map[string]any{"seconds": 30})
		var e *mcp.Error
		if k := mcp.KindOf(err); k != mcp.KindBudgetExhausted || !errors.As(err, &e) || e.Budget != time.Second {
			t.Fatalf("err = %v, want %q naming the 1s budget", err, mcp.KindBudgetExhausted)
		}
		// One budget for the whole operation: every leg at least 1s, the
		// operation ending near it, never at the slow tool's 30s.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("operation took %v on a 1s budget", d)
		}
		if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.Aborted >= 1 }); !ok {
			t.Errorf("server did not see the call's request dropped: %+v", st)
		}
	})
}

// TestPeerLenientDiscover puts each legacy peer behind a front that answers
// server/discover with an empty success, as a legacy server whose router
// answers unknown methods leniently does; neither library can be made to
// answer that way itself. Everything else reaches the real library, so the
// fallback handshake and the call after it are the library's.
func TestPeerLenientDiscover(t *testing.T) {
	for _, p := range peers {
		if p.version == "2026-07-28" {
			continue // a modern peer answers server/discover itself
		}
		t.Run(p.name, func(t *testing.T) { lenientDiscoverPeer(t, p) })
	}
}

func lenientDiscoverPeer(t *testing.T, p peer) {
	o := p.opts
	o.Title, o.Version = peerTitle, peerVersion
	srv, err := mcpserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var lenient atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "unreadable body", http.StatusBadRequest)
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &req) == nil && req.Method == "server/discover" {
				lenient.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	ep := endpoint(srv)
	ep.URL = front.URL + mcpserver.Path

	c := newClient()
	res, err := c.Probe(t.Context(), ep)
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if res.ProtocolVersion != p.version || res.Server.Version != peerVersion {
		t.Errorf("probe = version %q server %+v, want version %q from the library", res.ProtocolVersion, res.Server, p.version)
	}
	out, err := c.CallTool(t.Context(), ep, mcpserver.ToolEcho, map[string]any{"text": "hello"})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if out.IsError || out.Text != "hello" {
		t.Errorf("outcome = %+v", out)
	}
	st := srv.Stats()
	// One discover answered leniently, then the era was remembered.
	if lenient.Load() != 1 || st.Methods["server/discover"] != 0 || st.Methods["initialize"] != 2 {
		t.Errorf("lenient discovers %d, library saw %v; want 1 lenient discover and 2 initialize", lenient.Load(), st.Methods)
	}
}

// TestPeerSpeaking20250618Only: 2025-06-18 is a revision the client speaks,
// reached every way the lifecycle allows against a go-sdk server limited to
// it: from the list in the server's refusal of the modern request, from the
// server's answer to an initialize asking for a newer revision (behind a
// front that answers server/discover leniently), and from the era cache on
// the operations after. From the handshake on, every request (the session's
// DELETE included) names 2025-06-18 in MCP-Protocol-Version, which that
// revision's transport requires; the server refuses any other with 400.
func TestPeerSpeaking20250618Only(t *testing.T) {
	const rev = "2025-06-18"
	for _, stateless := range []bool{false, true} {
		for _, lenient := range []bool{false, true} {
			t.Run(fmt.Sprintf("stateless=%v/lenient-discover=%v", stateless, lenient), func(t *testing.T) {
				srv, err := mcpserver.New(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: stateless,
					ProtocolVersions: []string{rev}, Title: peerTitle, Version: peerVersion})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
				front := newRecordingFront(t, srv.Handler(), lenient)
				ep := endpoint(srv)
				ep.URL = front.url + mcpserver.Path

				c := newClient()
				res, err := c.Probe(t.Context(), ep)
				if err != nil {
					t.Fatalf("Probe: %v", err)
				}
				if res.ProtocolVersion != rev || res.SessionIssued == stateless {
					t.Errorf("probe = version %q, session %v; want %s, session %v", res.ProtocolVersion, res.SessionIssued, rev, !stateless)
				}
				cat, err := c.ListTools(t.Context(), ep)
				if err != nil {
					t.Fatalf("ListTools: %v", err)
				}
				if cat.Probe.ProtocolVersion != rev || len(cat.Tools) != len(mcpserver.BuiltinTools()) {
					t.Errorf("catalog: version %q, %d tools; want %s, %d", cat.Probe.ProtocolVersion, len(cat.Tools), rev, len(mcpserver.BuiltinTools()))
				}
				var info mcp.CallInfo
				out, err := c.CallTool(t.Context(), ep, mcpserver.ToolEcho, map[string]any{"text": "hello"}, mcp.WithCallInfo(&info))
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				if out.IsError || out.Text != "hello" || info.ProtocolVersion != rev {
					t.Errorf("outcome = %+v, spoken %q", out, info.ProtocolVersion)
				}

				// What each initialize asked for: the newest legacy revision
				// when nothing said otherwise, then what was negotiated.
				var asked []string
				after, deletes := 0, 0
				for _, r := range front.seen() {
					switch r.rpcMethod {
					case "server/discover":
						continue
					case "initialize":
						asked = append(asked, r.askedVersion)
						continue
					}
					after++
					if r.httpMethod == http.MethodDelete {
						deletes++
					}
					if r.versionHeader != rev {
						t.Errorf("%s %s carried MCP-Protocol-Version %q, want %s", r.httpMethod, r.rpcMethod, r.versionHeader, rev)
					}
				}
				first := rev
				if lenient {
					first = "2025-11-25"
				}
				if want := []string{first, rev, rev}; !slices.Equal(asked, want) {
					t.Errorf("initialize asked for %v, want %v", asked, want)
				}
				// Per operation: notifications/initialized and its work
				// (none for the probe), and DELETE when a session was issued.
				if wantDeletes := map[bool]int{false: 3, true: 0}[stateless]; after < 5 || deletes != wantDeletes {
					t.Errorf("%d requests after the handshakes, %d DELETEs; want at least 5 and %d", after, deletes, wantDeletes)
				}
			})
		}
	}
}

// recordedRequest is what a recordingFront saw of one request.
type recordedRequest struct {
	httpMethod, rpcMethod string
	// askedVersion is params.protocolVersion of an initialize.
	askedVersion string
	// versionHeader is the MCP-Protocol-Version header ("" when absent).
	versionHeader string
}

// recordingFront records every request before the real server sees it and,
// when lenient, answers server/discover with an empty success as a legacy
// server whose router answers unknown methods leniently does.
type recordingFront struct {
	url  string
	mu   sync.Mutex
	reqs []recordedRequest
}

func newRecordingFront(t *testing.T, next http.Handler, lenient bool) *recordingFront {
	f := &recordingFront{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recordedRequest{httpMethod: r.Method, versionHeader: r.Header.Get("MCP-Protocol-Version")}
		var rpc struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "unreadable body", http.StatusBadRequest)
				return
			}
			_ = json.Unmarshal(body, &rpc)
			rec.rpcMethod, rec.askedVersion = rpc.Method, rpc.Params.ProtocolVersion
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, rec)
		f.mu.Unlock()
		if lenient && rpc.Method == "server/discover" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, rpc.ID)
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *recordingFront) seen() []recordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}
