package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/test/mcpserver"
)

// These tests check the test servers themselves, with the official SDK's
// client as the independent peer, so that a failure in the operator's
// real-peer tests points at the operator's client and not at this package.

type mode struct {
	name string
	opts mcpserver.Options
	// wantVersion is what a 2026-capable client negotiates; wantSession
	// whether it is given a session id.
	wantVersion string
	wantSession bool
	// handlerCancelled is whether the library cancels a tool handler's
	// context when its client drops the HTTP request, in that revision.
	handlerCancelled bool
}

var modes = []mode{
	{"go-sdk/stateless", mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true}, "2026-07-28", false, true},
	{"go-sdk/stateless/json", mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, JSONResponse: true}, "2026-07-28", false, true},
	{"go-sdk/stateful", mcpserver.Options{Flavor: mcpserver.GoSDK}, "2025-11-25", true, false},
	{"go-sdk/stateful/json", mcpserver.Options{Flavor: mcpserver.GoSDK, JSONResponse: true}, "2025-11-25", true, false},
	{"go-sdk/stateless/legacy", mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, LegacyOnly: true}, "2025-11-25", false, false},
	{"mcp-go/stateless", mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true}, "2026-07-28", false, true},
	{"mcp-go/stateful", mcpserver.Options{Flavor: mcpserver.MCPGo}, "2026-07-28", false, true},
	{"mcp-go/stateful/legacy", mcpserver.Options{Flavor: mcpserver.MCPGo, LegacyOnly: true}, "2025-11-25", true, true},
	{"mcp-go/stateless/legacy", mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true, LegacyOnly: true}, "2025-11-25", false, true},
	{"go-sdk/stateful/2025-06-18", mcpserver.Options{Flavor: mcpserver.GoSDK, ProtocolVersions: []string{"2025-06-18"}}, "2025-06-18", true, false},
	{"go-sdk/stateless/2025-06-18", mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, ProtocolVersions: []string{"2025-06-18"}}, "2025-06-18", false, false},
}

// headerTransport adds one header to every request.
type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url string, hc *http.Client) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "mcpserver-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestModesNegotiateAsDocumented(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			o := m.opts
			o.Title = "Test peer"
			srv := mcpserver.Start(t, o)
			cs := connect(t, srv.URL, nil)
			init := cs.InitializeResult()
			if init.ProtocolVersion != m.wantVersion {
				t.Errorf("protocol version = %q, want %q", init.ProtocolVersion, m.wantVersion)
			}
			if got := cs.ID() != ""; got != m.wantSession {
				t.Errorf("session issued = %v (id %q), want %v", got, cs.ID(), m.wantSession)
			}
			if init.ServerInfo == nil || init.ServerInfo.Name != "mcpserver-"+string(o.Flavor) || init.ServerInfo.Version != "1.0.0" || init.ServerInfo.Title != "Test peer" {
				t.Errorf("server info = %+v", init.ServerInfo)
			}
			if init.Capabilities == nil || init.Capabilities.Tools == nil {
				t.Errorf("capabilities = %+v, want tools declared", init.Capabilities)
			}
			// A session id, once issued, must come back on later requests.
			if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: mcpserver.ToolEcho, Arguments: map[string]any{"text": "hi"}}); err != nil {
				t.Fatal(err)
			}
			if st := srv.Stats(); (st.SessionCarried > 0) != m.wantSession {
				t.Errorf("requests carrying a session id = %d, want some: %v", st.SessionCarried, m.wantSession)
			}
		})
	}
}

func TestCatalogPagesAndTools(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			o := m.opts
			o.Tools, o.PageSize = 23, 5
			srv := mcpserver.Start(t, o)
			cs := connect(t, srv.URL, nil)
			var names []string
			for tool, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			want := srv.ToolNames()
			if len(want) != 23+len(mcpserver.BuiltinTools()) {
				t.Fatalf("ToolNames has %d names", len(want))
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Errorf("listed %v, want %v", names, want)
			}
			if pages := srv.Stats().Methods["tools/list"]; pages < 6 {
				t.Errorf("tools/list requests = %d, want at least 6 pages of 5", pages)
			}

			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: mcpserver.ToolFail})
			if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != mcpserver.FailText {
				t.Errorf("fail = %+v, %v", res, err)
			}
			res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: mcpserver.ToolImageAndText})
			if err != nil || res.IsError || len(res.Content) != 2 {
				t.Fatalf("image_and_text = %+v, %v", res, err)
			}
			if img, ok := res.Content[0].(*sdk.ImageContent); !ok || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
				t.Errorf("first block = %#v, want a PNG image", res.Content[0])
			}
			if txt, ok := res.Content[1].(*sdk.TextContent); !ok || txt.Text != mcpserver.ImageCaption {
				t.Errorf("second block = %#v", res.Content[1])
			}
			res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: mcpserver.ToolNested, Arguments: map[string]any{"ticket": map[string]any{"title": "Printer"}}})
			if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "ticket created: Printer" {
				t.Errorf("create_ticket = %+v, %v", res, err)
			}
			if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: mcpserver.CatalogToolName(7), Arguments: map[string]any{"q": "x"}}); err != nil {
				t.Fatal(err)
			}
			st := srv.Stats()
			for _, name := range []string{mcpserver.ToolFail, mcpserver.ToolImageAndText, mcpserver.ToolNested, "tool_0007"} {
				if st.Calls[name] != 1 {
					t.Errorf("Calls[%s] = %d, want 1", name, st.Calls[name])
				}
			}
		})
	}
}

func TestCredentialIsEnforcedAndRotatable(t *testing.T) {
	for _, flavor := range []mcpserver.Flavor{mcpserver.GoSDK, mcpserver.MCPGo} {
		t.Run(string(flavor)+"/bearer", func(t *testing.T) {
			srv := mcpserver.Start(t, mcpserver.Options{Flavor: flavor, Stateless: true, RequireBearer: "first"})

			resp := post(t, srv.URL, initialize, nil)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			if st := srv.Stats(); st.Rejected != 1 || len(st.Methods) != 0 || st.CredentialPresented != 0 {
				t.Errorf("stats after rejection = %+v", st)
			}

			connect(t, srv.URL, &http.Client{Transport: headerTransport{"Authorization", "Bearer first"}})
			if st := srv.Stats(); st.LastCredential != "Bearer first" || st.Rejected != 1 {
				t.Errorf("stats after accepted connect = %+v", st)
			}

			srv.SetCredential("second")
			if resp := post(t, srv.URL, initialize, map[string]string{"Authorization": "Bearer first"}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("rotated-out token: %d, want 401", resp.StatusCode)
			}
			connect(t, srv.URL, &http.Client{Transport: headerTransport{"Authorization", "Bearer second"}})
		})
		t.Run(string(flavor)+"/header", func(t *testing.T) {
			srv := mcpserver.Start(t, mcpserver.Options{Flavor: flavor, RequireHeader: mcpserver.Header{Name: "X-Api-Key", Value: "k1"}})
			if resp := post(t, srv.URL, initialize, map[string]string{"X-Api-Key": "wrong"}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("wrong key: %d, want 401", resp.StatusCode)
			}
			connect(t, srv.URL, &http.Client{Transport: headerTransport{"X-Api-Key", "k1"}})
			if st := srv.Stats(); st.LastCredential != "k1" {
				t.Errorf("LastCredential = %q", st.LastCredential)
			}
		})
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`

// post sends one JSON-RPC body and returns the response, body drained.
// reply is what the tests read of an answer; the body is drained and closed
// before it is returned.
type reply struct {
	StatusCode int
	Header     http.Header
}

func post(t *testing.T, url, body string, headers map[string]string) reply {
	t.Helper()
	resp, err := postCtx(t.Context(), url, body, headers)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func postCtx(ctx context.Context, url, body string, headers map[string]string) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header}, err
}

// TestProtocolVersionsNarrowTheServer: a go-sdk server limited to one
// revision answers an initialize asking for a newer one with its own (the
// lifecycle's version negotiation) and refuses a later request that names
// another revision in MCP-Protocol-Version, as the 2025-06-18 transport
// requires; mcp-go cannot be limited so and is refused.
func TestProtocolVersionsNarrowTheServer(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: stateless, JSONResponse: true, ProtocolVersions: []string{"2025-06-18"}})
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(initialize))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var init struct {
				Result struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"result"`
			}
			err = json.NewDecoder(resp.Body).Decode(&init)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatalf("initialize answer: %v", err)
			}
			if init.Result.ProtocolVersion != "2025-06-18" {
				t.Fatalf("asked for 2025-11-25, answered %q, want 2025-06-18", init.Result.ProtocolVersion)
			}
			h := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				h["Mcp-Session-Id"] = sid
			}
			const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
			if r := post(t, srv.URL, initialized, h); r.StatusCode != http.StatusBadRequest {
				t.Errorf("a revision the server does not speak in the header: %d, want 400", r.StatusCode)
			}
			h["Mcp-Protocol-Version"] = "2025-06-18"
			if r := post(t, srv.URL, initialized, h); r.StatusCode != http.StatusAccepted {
				t.Errorf("the negotiated revision in the header: %d, want 202", r.StatusCode)
			}
		})
	}
	if _, err := mcpserver.New(mcpserver.Options{Flavor: mcpserver.MCPGo, ProtocolVersions: []string{"2025-06-18"}}); err == nil {
		t.Error("mcp-go accepted ProtocolVersions")
	}
	if _, err := mcpserver.New(mcpserver.Options{ProtocolVersions: []string{"2099-01-01"}}); err == nil {
		t.Error("an unknown revision was accepted")
	}
}

// TestDroppedRequestIsObserved drops the HTTP request of a slow call the way
// a client whose context ended does, with no notifications/cancelled and no
// DELETE, and checks what the server reports: the dropped leg always, the
// handler's cancellation where the library propagates it (see the package
// doc).
func TestDroppedRequestIsObserved(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := mcpserver.Start(t, m.opts)
			modern := m.wantVersion == "2026-07-28"
			h := map[string]string{"Mcp-Protocol-Version": m.wantVersion}
			call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow","arguments":{"seconds":30}}}`
			if modern {
				h["Mcp-Method"], h["Mcp-Name"] = "tools/call", mcpserver.ToolSlow
				call = `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow","arguments":{"seconds":30},` +
					`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
			} else {
				resp := post(t, srv.URL, initialize, nil)
				if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
					h["Mcp-Session-Id"] = sid
				}
				if resp := post(t, srv.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); resp.StatusCode != http.StatusAccepted {
					t.Fatalf("initialized: %d", resp.StatusCode)
				}
			}

			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.SlowStarted == 1 })
				cancel()
			}()
			if _, err := postCtx(ctx, srv.URL, call, h); !errors.Is(err, context.Canceled) {
				t.Fatalf("call error = %v, want context.Canceled", err)
			}
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.Aborted == 1 }); !ok {
				t.Errorf("dropped request not counted: %+v", st)
			}
			wait := 5 * time.Second
			if !m.handlerCancelled {
				// Proving a negative: long enough for a propagating library
				// to have acted, which takes milliseconds.
				wait = 300 * time.Millisecond
			}
			st, _ := srv.Await(wait, func(s mcpserver.Stats) bool { return s.SlowCancelled == 1 })
			if got := st.SlowCancelled == 1; got != m.handlerCancelled {
				t.Errorf("handler cancelled = %v, want %v (%+v)", got, m.handlerCancelled, st)
			}
		})
	}
}

// TestCancelledThenDroppedRequestIsObserved cancels a slow call with
// notifications/cancelled and only drops its HTTP request after the library
// has ended the request's stream itself, the order in which a server can see
// a client's cancellation when its scheduler is busy: the drop must still be
// counted.
func TestCancelledThenDroppedRequestIsObserved(t *testing.T) {
	for _, m := range modes {
		if !m.wantSession || m.wantVersion == "2026-07-28" {
			continue // notifications/cancelled needs a session to belong to
		}
		t.Run(m.name, func(t *testing.T) {
			srv := mcpserver.Start(t, m.opts)
			h := map[string]string{"Mcp-Protocol-Version": m.wantVersion}
			resp := post(t, srv.URL, initialize, nil)
			h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
			if resp := post(t, srv.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("initialized: %d", resp.StatusCode)
			}
			call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow","arguments":{"seconds":30}}}`
			ctx, drop := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = postCtx(ctx, srv.URL, call, h)
			}()
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.SlowStarted == 1 }); !ok {
				t.Fatalf("slow call did not start: %+v", st)
			}
			cancelled := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`
			if resp := post(t, srv.URL, cancelled, h); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("cancelled: %d", resp.StatusCode)
			}
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.SlowCancelled == 1 }); !ok {
				t.Fatalf("the library did not cancel the handler: %+v", st)
			}
			// The library ends the request's stream a moment after the
			// handler returned; the client leaves only then.
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.CancelledEnded == 1 }); !ok {
				t.Fatalf("the library did not end the cancelled request's stream: %+v", st)
			}
			drop()
			<-done
			if st, ok := srv.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.Aborted == 1 }); !ok {
				t.Errorf("dropped request not counted: %+v", st)
			}
		})
	}
}

func TestToolSetChangesAtRuntime(t *testing.T) {
	for _, flavor := range []mcpserver.Flavor{mcpserver.GoSDK, mcpserver.MCPGo} {
		t.Run(string(flavor), func(t *testing.T) {
			srv := mcpserver.Start(t, mcpserver.Options{Flavor: flavor, Stateless: true, Tools: 3})
			if err := srv.SetToolDescription("tool_0002", "Changed."); err != nil {
				t.Fatal(err)
			}
			if err := srv.SetToolDescription("nope", "x"); err == nil {
				t.Error("SetToolDescription of an unknown tool succeeded")
			}
			srv.RemoveTools("tool_0001")
			srv.AddTools("added_tool")

			cs := connect(t, srv.URL, nil)
			got := map[string]string{}
			for tool, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				got[tool.Name] = tool.Description
			}
			if _, ok := got["tool_0001"]; ok {
				t.Error("removed tool_0001 still listed")
			}
			if got["tool_0002"] != "Changed." || got["tool_0003"] != "Catalog tool number 3." {
				t.Errorf("descriptions: %q, %q", got["tool_0002"], got["tool_0003"])
			}
			if _, ok := got["added_tool"]; !ok {
				t.Error("added_tool not listed")
			}
			if len(got) != len(srv.ToolNames()) {
				t.Errorf("listed %d tools, ToolNames has %d", len(got), len(srv.ToolNames()))
			}
		})
	}
}

func TestNewRejectsContradictoryOptions(t *testing.T) {
	for name, o := range map[string]mcpserver.Options{
		"both credentials":  {RequireBearer: "a", RequireHeader: mcpserver.Header{Name: "X", Value: "b"}},
		"header sans value": {RequireHeader: mcpserver.Header{Name: "X"}},
		"unknown flavor":    {Flavor: "other"},
	} {
		if _, err := mcpserver.New(o); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
