package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/capture"
)

// askingUpstream is a real go-sdk server with sessions whose echo tool
// asks its client, during the call, what its "ask" argument names, and
// answers what came of it.
func askingUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args struct {
			Ask string `json:"ask"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		form := func(props map[string]any) string {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: "who are you?", RequestedSchema: map[string]any{"type": "object", "properties": props}})
			if err != nil {
				return "error"
			}
			return fmt.Sprintf("%s %v", res.Action, res.Content)
		}
		var out string
		switch args.Ask {
		case "form":
			out = form(map[string]any{"name": map[string]any{"type": "string"}})
		case "twice":
			out = form(map[string]any{"name": map[string]any{"type": "string"}}) + " then " + form(map[string]any{"name": map[string]any{"type": "string"}})
		case "sensitive":
			out = form(map[string]any{"name": map[string]any{"type": "string"}, "pin": map[string]any{"type": "string"}})
		case "password":
			out = form(map[string]any{"secret": map[string]any{"type": "string", "format": "password"}})
		case "url-allowed", "url-other":
			host := map[string]string{"url-allowed": "login.example.com", "url-other": "login.example.com.evil.test"}[args.Ask]
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "sign in", URL: "https://" + host + "/start", ElicitationID: "e1"})
			if err != nil {
				out = "error"
			} else {
				out = res.Action
			}
		case "sample":
			res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}}) //nolint:staticcheck // deprecated in 2026-07-28, what servers of the initialize era send
			if err != nil {
				out = "refused"
			} else {
				out = "sampled " + res.Content.(*sdk.TextContent).Text
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs
}

// askedAgent is a go-sdk client session with the gateway that answers
// every elicitation (accepting a form with a name) and sampling request,
// and counts what it was asked.
type askedAgent struct {
	cs *sdk.ClientSession

	mu               sync.Mutex
	elicited, sample int
}

func connectAskedAgent(t *testing.T, url, token string) *askedAgent {
	t.Helper()
	a := &askedAgent{}
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}},
			Sampling:    &sdk.SamplingCapabilities{}, //nolint:staticcheck // deprecated in 2026-07-28, declared by clients of the initialize era
		},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			a.mu.Lock()
			a.elicited++
			a.mu.Unlock()
			if req.Params.Mode == "url" {
				return &sdk.ElicitResult{Action: "accept"}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) { //nolint:staticcheck // deprecated in 2026-07-28, still what clients and servers of the initialize era send
			a.mu.Lock()
			a.sample++
			a.mu.Unlock()
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "from the model"}}, nil //nolint:staticcheck // deprecated in 2026-07-28, still what clients and servers of the initialize era send
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + Path, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	a.cs = cs
	return a
}

func (a *askedAgent) asked() (elicited, sampled int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.elicited, a.sample
}

func (a *askedAgent) call(t *testing.T, ask string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"ask": ask}})
	if err != nil {
		t.Fatal(err)
	}
	return resultText(res)
}

// A server's requests during a call reach the agent that made the call,
// in its session, when the tool's policy allows them, and are refused for
// it otherwise without the agent being asked: sampling unless allowed, a
// URL to a host the policy does not name, a form asking for a field it
// names sensitive (or a password). Another agent's session is never
// asked. Every request is audited, without what was asked or answered.
func TestServerRequestsRelayedUnderPolicy(t *testing.T) {
	up := askingUpstream(t)
	log := &capture.Buffer{}
	var objects client.Client
	_, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		objects = o.Reader.(client.Client)
		o.Audit = audit.NewJSONLines(log)
		o.Authn = tokenTable{
			obsToken:   {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
			otherToken: {Username: "system:serviceaccount:team:other", UID: "u2", Namespace: obsNS, ServiceAccount: "other"},
		}
	})
	setPolicy := func(p *mcpv1alpha1.ToolInteraction) {
		t.Helper()
		c := objects
		tool := &mcpv1alpha1.McpTool{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: obsNS, Name: echoObject}, tool); err != nil {
			t.Fatal(err)
		}
		tool.Spec.Interaction = p
		if err := c.Update(t.Context(), tool); err != nil {
			t.Fatal(err)
		}
	}
	agent := connectAskedAgent(t, hs.URL, obsToken)
	other := connectAskedAgent(t, hs.URL, otherToken)

	cases := []struct {
		name, ask string
		policy    *mcpv1alpha1.ToolInteraction
		want      string
		asked     bool
		reason    string
	}{
		{"a form, by default", "form", nil, "accept map[name:Ada]", true, ""},
		{"sampling, by default", "sample", nil, "refused", false, audit.RefusedSamplingNotAllowed},
		{"sampling, allowed", "sample", &mcpv1alpha1.ToolInteraction{Sampling: true}, "sampled from the model", true, ""},
		{"a URL, by default", "url-allowed", nil, "decline", false, audit.RefusedURLHostNotAllowed},
		{"a URL to an allowed host", "url-allowed", &mcpv1alpha1.ToolInteraction{URLElicitationHosts: []string{"login.example.com"}}, "accept", true, ""},
		{"a URL to a host that only begins like an allowed one", "url-other", &mcpv1alpha1.ToolInteraction{URLElicitationHosts: []string{"login.example.com", "*.example.com"}}, "decline", false, audit.RefusedURLHostNotAllowed},
		{"a form with a field marked sensitive", "sensitive", &mcpv1alpha1.ToolInteraction{SensitiveFields: []string{"pin"}}, "decline map[]", false, audit.RefusedSensitiveField},
		{"a form asking for a password", "password", nil, "decline map[]", false, audit.RefusedSensitiveField},
		{"a form, refused", "form", &mcpv1alpha1.ToolInteraction{FormElicitation: mcpv1alpha1.FormElicitationRefused}, "decline map[]", false, audit.RefusedFormNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setPolicy(tc.policy)
			_ = log.Take()
			e0, s0 := agent.asked()
			got := agent.call(t, tc.ask)
			if got != tc.want {
				t.Errorf("the server's request came to %q, want %q", got, tc.want)
			}
			e1, s1 := agent.asked()
			if asked := e1+s1 > e0+s0; asked != tc.asked {
				t.Errorf("the agent was asked: %v, want %v", asked, tc.asked)
			}
			if oe, os := other.asked(); oe+os != 0 {
				t.Errorf("another agent was asked %d times", oe+os)
			}
			var rec audit.Record
			var found bool
			for _, l := range strings.Split(strings.TrimSpace(log.Take()), "\n") {
				if strings.Contains(l, `"phase":"interaction"`) {
					if err := json.Unmarshal([]byte(l), &rec); err != nil {
						t.Fatal(err)
					}
					found = true
				}
				for _, value := range []string{"Ada", "from the model", "who are you", "login.example.com", "pin"} {
					if strings.Contains(l, value) {
						t.Errorf("an audit record holds %q: %s", value, l)
					}
				}
			}
			if !found {
				t.Fatal("the server's request was not audited")
			}
			if wantDecision := map[bool]string{true: audit.DecisionRelayed, false: audit.DecisionRefused}[tc.reason == ""]; rec.Decision != wantDecision || rec.Reason != tc.reason || rec.CallID == "" {
				t.Errorf("audited %+v, want decision %s, reason %q", rec, wantDecision, tc.reason)
			}
		})
	}
}

// Without a session kept in the gateway (the chart's initialize era) the
// agent is asked on its call's answer, which becomes an event stream, and
// answers in a POST of its own, taken only from the caller, for a request
// of its call, on the replica whose call waits. Where the SDK serves the
// call (a shape the gateway's own code does not take) there is no channel:
// the request is refused, audited as such, and the agent is not asked.
func TestServerRequestsAskedOnTheAnswerWithoutASession(t *testing.T) {
	up := askingUpstream(t)
	log := &capture.Buffer{}
	g, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		o.Stateless = true
		o.Audit = audit.NewJSONLines(log)
		o.Authn = tokenTable{
			obsToken:   {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
			otherToken: {Username: "system:serviceaccount:team:other", UID: "u2", Namespace: obsNS, ServiceAccount: "other"},
		}
	})
	agent := connectAskedAgent(t, hs.URL, obsToken)
	if got := agent.call(t, "form"); got != "accept map[name:Ada]" {
		t.Errorf("the form came to %q, want the agent's answer", got)
	}
	if e, _ := agent.asked(); e != 1 {
		t.Errorf("the agent was asked %d times", e)
	}
	if out := log.Take(); !strings.Contains(out, `"decision":"Relayed"`) || !strings.Contains(out, `"interactionResult":"accept"`) || strings.Contains(out, "Ada") {
		t.Errorf("the relay was not audited as it should be: %s", out)
	}

	// By hand: the answer is taken only from the caller, for its request.
	post := func(token, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+Path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// status posts an answer, and is the status it was answered with.
	status := func(token, body string) int {
		t.Helper()
		resp := post(token, body)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	resp := post(obsToken, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+echoLocal+`","arguments":{"ask":"form"}}}`)
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	next := func() map[string]json.RawMessage {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
	}
	asked := next()
	if string(asked["method"]) != `"elicitation/create"` || !strings.HasPrefix(string(asked["id"]), `"`+streamAskPrefix) {
		t.Fatalf("the stream's first event is %v, want the server's form under an id of the gateway's", asked)
	}
	reply := func(id, name string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"name":"` + name + `"}}}`
	}
	// Another agent answering the request, and the caller answering one
	// nobody made: neither reaches the call (the SDK, which gets them,
	// accepts and drops them).
	status(otherToken, reply(string(asked["id"]), "Eve"))
	status(obsToken, reply(`"`+streamAskPrefix+`guessed"`, "Eve"))
	if code := status(obsToken, reply(string(asked["id"]), "Mallory")); code != http.StatusAccepted {
		t.Errorf("the caller's answer was answered %d, want 202", code)
	}
	answer := next()
	if string(answer["id"]) != "7" || !strings.Contains(string(answer["result"]), "accept map[name:Mallory]") {
		t.Errorf("the call's answer is %s, want the server's result for the caller's answer", answer["result"])
	}

	// The SDK's path has no channel.
	g.noInitializeEra.Store(true)
	_ = log.Take()
	if got := agent.call(t, "form"); got != "decline map[]" {
		t.Errorf("the form came to %q, want declined", got)
	}
	if e, _ := agent.asked(); e != 1 {
		t.Errorf("the agent was asked %d times", e)
	}
	if out := log.Take(); !strings.Contains(out, `"reason":"`+audit.RefusedNoChannel+`"`) {
		t.Errorf("the refusal was not audited: %s", out)
	}
}

// The policy's reading of a request, case by case: what a URL must be to
// pass, and what makes a form sensitive.
func TestCheckInteraction(t *testing.T) {
	hosts := &mcpv1alpha1.ToolInteraction{URLElicitationHosts: []string{"login.example.com", "*.auth.example.com"}, SensitiveFields: []string{"iban"}}
	url := func(u string) string { return `{"mode":"url","message":"m","url":"` + u + `","elicitationId":"e"}` }
	form := func(props string) string {
		return `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{` + props + `}}}`
	}
	for _, tc := range []struct {
		name, method, params string
		policy               *mcpv1alpha1.ToolInteraction
		refused              string
	}{
		{"an allowed host", mcp.MethodElicit, url("https://login.example.com/a?b=c"), hosts, ""},
		{"an allowed host in capitals", mcp.MethodElicit, url("https://LOGIN.example.com/"), hosts, ""},
		{"a host below an allowed domain", mcp.MethodElicit, url("https://x.auth.example.com/"), hosts, ""},
		{"an allowed host on another port", mcp.MethodElicit, url("https://login.example.com:8443/"), hosts, ""},
		{"the domain itself of a wildcard", mcp.MethodElicit, url("https://auth.example.com/"), hosts, audit.RefusedURLHostNotAllowed},
		{"plain http", mcp.MethodElicit, url("http://login.example.com/"), hosts, audit.RefusedURLHostNotAllowed},
		{"userinfo naming an allowed host", mcp.MethodElicit, url("https://login.example.com@evil.test/"), hosts, audit.RefusedURLHostNotAllowed},
		{"userinfo on an allowed host", mcp.MethodElicit, url("https://u:p@login.example.com/"), hosts, audit.RefusedURLHostNotAllowed},
		{"an allowed name as a suffix of another", mcp.MethodElicit, url("https://evillogin.example.com/"), hosts, audit.RefusedURLHostNotAllowed},
		{"a trailing dot", mcp.MethodElicit, url("https://login.example.com./"), hosts, audit.RefusedURLHostNotAllowed},
		{"a javascript URL", mcp.MethodElicit, url("javascript:alert(1)"), hosts, audit.RefusedURLHostNotAllowed},
		{"a URL without a mode", mcp.MethodElicit, `{"message":"m","url":"https://evil.test/"}`, hosts, audit.RefusedURLHostNotAllowed},
		{"a URL with a form's schema", mcp.MethodElicit, `{"mode":"url","url":"https://login.example.com/","requestedSchema":{"type":"object"}}`, hosts, audit.RefusedURLHostNotAllowed},
		{"a plain form", mcp.MethodElicit, form(`"name":{"type":"string"}`), hosts, ""},
		{"a form without a mode", mcp.MethodElicit, `{"message":"m","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`, nil, ""},
		{"a form naming a sensitive field", mcp.MethodElicit, form(`"name":{"type":"string"},"iban":{"type":"string"}`), hosts, audit.RefusedSensitiveField},
		{"a form asking for a password", mcp.MethodElicit, form(`"p":{"type":"string","format":"Password"}`), nil, audit.RefusedSensitiveField},
		{"a form without a schema", mcp.MethodElicit, `{"mode":"form","message":"m"}`, nil, audit.RefusedMalformedRequest},
		{"an unknown mode", mcp.MethodElicit, `{"mode":"telepathy","message":"m"}`, nil, audit.RefusedMalformedRequest},
		{"params that are not an object", mcp.MethodElicit, `[1]`, nil, audit.RefusedMalformedRequest},
		{"sampling, allowed", mcp.MethodSample, `{}`, &mcpv1alpha1.ToolInteraction{Sampling: true}, ""},
		{"sampling, by default", mcp.MethodSample, `{}`, nil, audit.RefusedSamplingNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, refused := checkInteraction(tc.policy, tc.method, json.RawMessage(tc.params)); refused != tc.refused {
				t.Errorf("refused %q, want %q", refused, tc.refused)
			}
		})
	}
}
