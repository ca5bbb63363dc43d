package tsagent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oidcprovider"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The agent against the go-sdk and mcp-go servers directly: what each step
// reports, and what went over HTTP.
func TestAgentAgainstServers(t *testing.T) {
	for _, flavor := range []mcpserver.Flavor{mcpserver.GoSDK, mcpserver.MCPGo} {
		t.Run(string(flavor), func(t *testing.T) {
			const token = "tS-aGeNt-ToKeN-1f3c"
			srv := mcpserver.Start(t, mcpserver.Options{Flavor: flavor, RequireBearer: token})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			res, err := tsagent.Run(ctx, srv.URL, token,
				tsagent.List(),
				tsagent.Call(mcpserver.ToolEcho, map[string]any{"text": "hello"}),
				tsagent.Call(mcpserver.ToolFail, nil),
				tsagent.Ping(),
				tsagent.Calls(mcpserver.ToolEcho, map[string]any{"text": "x"}, 20),
				tsagent.Step{Op: "no-such-op"},
			)
			if err != nil {
				t.Fatal(err)
			}
			if res.Connect.Error != nil {
				t.Fatalf("connect: %v", res.Connect.Error)
			}
			if res.Connect.ProtocolVersion != "2025-11-25" {
				t.Errorf("negotiated %q, want 2025-11-25", res.Connect.ProtocolVersion)
			}
			if len(res.Steps) != 6 {
				t.Fatalf("%d outcomes for 6 steps: %+v", len(res.Steps), res.Steps)
			}
			for i, o := range res.Steps[:5] {
				if o.Error != nil {
					t.Errorf("step %d (%s): %v", i, o.Op, o.Error)
				}
			}
			if list := res.Steps[0]; !contains(list.Tools, mcpserver.ToolEcho) || !contains(list.Tools, mcpserver.ToolFail) {
				t.Errorf("listed %v", list.Tools)
			}
			if echo := res.Steps[1]; echo.IsError || echo.Text() != "hello" {
				t.Errorf("echo: isError %v, %q", echo.IsError, echo.Text())
			}
			if fail := res.Steps[2]; !fail.IsError || fail.Text() != mcpserver.FailText {
				t.Errorf("fail: isError %v, %q", fail.IsError, fail.Text())
			}
			if calls := res.Steps[4]; calls.N != 20 || calls.Failed != 0 || calls.P50us <= 0 || calls.P95us < calls.P50us {
				t.Errorf("timed calls: %+v", calls)
			}
			if got := srv.Calls(mcpserver.ToolEcho); got != 22 {
				t.Errorf("the server counted %d echo calls, want 22 (one, a warm-up and 20 timed)", got)
			}
			if bad := res.Steps[5]; bad.Error == nil || !strings.Contains(bad.Error.Message, "unknown op") {
				t.Errorf("an unknown op: %+v", bad)
			}

			// Initialize opens the session; every later POST carries it and
			// the negotiated revision.
			var posts []tsagent.Request
			for _, r := range res.HTTP.Requests {
				if r.Method == "POST" {
					posts = append(posts, r)
				}
			}
			if len(posts) < 2 || posts[0].RPC != "initialize" || posts[0].SessionID || posts[0].ProtocolVersion != "" {
				t.Fatalf("POSTs: %+v", posts)
			}
			for _, r := range posts[1:] {
				if !r.SessionID || r.ProtocolVersion != "2025-11-25" || r.Status >= 300 {
					t.Errorf("a POST after initialize: %+v", r)
				}
			}

			if out, _ := json.Marshal(res); strings.Contains(string(out), token) {
				t.Error("the agent printed the token")
			}
		})
	}
}

// Paced calls count failures and go on; lists keep several in flight for a
// while; and the agent runs under a wrapper command.
func TestAgentPacedCallsAndLists(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const every = 50 * time.Millisecond
	a, err := tsagent.Start(ctx, srv.URL, "", tsagent.Options{Wrapper: []string{"nice", "-n", "5"}},
		tsagent.PacedCalls(mcpserver.ToolEcho, map[string]any{"text": "x"}, 4, every),
		tsagent.PacedCalls(mcpserver.ToolFail, nil, 2, every),
		tsagent.PacedCalls("no_such_tool", nil, 3, every),
		tsagent.Lists(4, 300*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := a.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Connect.Error != nil || len(res.Steps) != 4 {
		t.Fatalf("connect %v, %d outcomes: %+v", res.Connect.Error, len(res.Steps), res.Steps)
	}
	for i, o := range res.Steps {
		if o.Error != nil {
			t.Errorf("step %d (%s): %v", i, o.Op, o.Error)
		}
	}
	if echo := res.Steps[0]; echo.N != 4 || echo.Failed != 0 || echo.P50us <= 0 || echo.FirstError != "" {
		t.Errorf("paced echo calls: %+v", echo)
	}
	// Paced, the warm-up call counts among the failed ones.
	if fails := res.Steps[1]; fails.N != 2 || fails.Failed != 3 {
		t.Errorf("paced calls of a failing tool: %+v; want all 3 counted as failed", fails)
	}
	if unknown := res.Steps[2]; unknown.N != 3 || unknown.Failed != 4 || unknown.FirstError == "" {
		t.Errorf("paced calls of an unknown tool: %+v; want all 4 failed, the first's message kept", unknown)
	}
	// Three pauses between four calls, and one between two, and two
	// between three: the agent cannot have ended sooner.
	if took := time.Since(start); took < 7*every {
		t.Errorf("the paced calls took %s, less than their pauses (%s)", took, 7*every)
	}
	if lists := res.Steps[3]; lists.N < 4 || lists.Failed != 0 || lists.Listed != len(mcpserver.BuiltinTools()) || lists.P95us < lists.P50us {
		t.Errorf("lists: %+v; want at least one per worker, each naming the %d tools", lists, len(mcpserver.BuiltinTools()))
	}
	if got := srv.Calls(mcpserver.ToolEcho); got != 5 {
		t.Errorf("the server counted %d echo calls, want 5 (a warm-up and 4 paced)", got)
	}
}

func TestAgentUnauthorized(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{RequireBearer: "the-right-token"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := tsagent.Run(ctx, srv.URL, "a-wrong-token", tsagent.List())
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Connect.Error; e == nil || e.Code == nil || *e.Code != 401 {
		t.Fatalf("connect with a wrong token: %+v", res.Connect)
	}
	if len(res.Steps) != 0 {
		t.Errorf("steps ran without a connection: %+v", res.Steps)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A person who cannot sign in: the browser fails at the provider's login
// page, and the agent, which would wait for its redirect forever, is
// stopped and says why.
func TestAgentOAuthStopsWhenTheBrowserFails(t *testing.T) {
	p := oidcprovider.Start(t)
	p.AddPerson(oidcprovider.Person{Username: "ivan", Password: "right"})
	p.AddPublicClient("agent", oidcprovider.PublicClient{
		RedirectURIs: []string{"http://127.0.0.1/callback"}, Resources: []string{"http://127.0.0.1"}, Scopes: []string{"mcp.tools"},
	})
	// A protected resource that accepts no token: a 401 naming its
	// metadata, which names the provider.
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{p.Issuer}, "scopes_supported": []string{"mcp.tools"}})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp", scope="mcp.tools"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opened := 0
	a, err := tsagent.Start(ctx, srv.URL+"/mcp", "", tsagent.Options{OAuth: &tsagent.OAuth{
		ClientID: "agent", RootCAs: p.CAPEM,
		Browser: func(ctx context.Context, u string) error {
			opened++
			return p.SignIn(ctx, u, "ivan", "wrong")
		},
	}}, tsagent.List())
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Wait()
	if err == nil || !strings.Contains(err.Error(), "sign-in refused") {
		t.Fatalf("err = %v, want the browser's failure", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the agent ran until the test's deadline")
	}
	if opened != 1 || p.Authorizations() != 1 {
		t.Errorf("%d authorization URLs opened, %d authorization requests at the provider; want 1 and 1", opened, p.Authorizations())
	}
}
