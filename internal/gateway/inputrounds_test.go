package gateway

import (
	"context"
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

// roundsUpstream is a real go-sdk server of 2026-07-28 whose echo tool
// answers a first call with input_required, asking for a name (a form)
// and for a completion (sampling), under a state of its own, and a call
// that brings the name back with that state with a greeting (its
// arguments naming "forever": it asks every time). It records
// what the calls brought.
type roundsUpstream struct {
	hs *httptest.Server

	mu      sync.Mutex
	answers []map[string]bool
	states  []string
}

// upstreamRoundState reads like a mark of the gateway's own state: the
// server's state is opaque, and the gateway never reads it for its own.
const upstreamRoundState = "park.upstream-state-1"

func startRoundsUpstream(t *testing.T) *roundsUpstream {
	t.Helper()
	u := &roundsUpstream{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		u.mu.Lock()
		seen := map[string]bool{}
		for k := range req.Params.InputResponses {
			seen[k] = true
		}
		u.answers = append(u.answers, seen)
		u.states = append(u.states, req.Params.RequestState)
		u.mu.Unlock()
		name, ok := req.Params.InputResponses["name"].(*sdk.ElicitResult)
		if !ok || req.Params.RequestState != upstreamRoundState || strings.Contains(string(req.Params.Arguments), "forever") {
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{
					"name": &sdk.ElicitParams{Mode: "form", Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
					"llm":  &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}}, //nolint:staticcheck // deprecated in 2026-07-28, still a request a server may make
				},
				RequestState: upstreamRoundState,
			}, nil
		}
		given, _ := name.Content["name"].(string)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name.Action + " hello " + given}}}, nil
	})
	u.hs = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(u.hs.Close)
	return u
}

func (u *roundsUpstream) calls() ([]map[string]bool, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]map[string]bool(nil), u.answers...), append([]string(nil), u.states...)
}

// undeclaredAgent connects a go-sdk client of 2026-07-28 that declares no
// capability to be asked anything, as the agent of token.
func undeclaredAgent(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "plain", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url + Path, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, &sdk.ClientSessionOptions{ProtocolVersion: modernProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// roundsAgent connects a go-sdk client of 2026-07-28 as the agent of
// token; auto answers rounds itself (the SDK's own loop), else it hands
// input_required results back.
func roundsAgent(t *testing.T, url, token string, auto bool, sampled *int) *sdk.ClientSession {
	t.Helper()
	var mu sync.Mutex
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: !auto},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) { //nolint:staticcheck // deprecated in 2026-07-28, what clients still answer
			mu.Lock()
			*sampled++
			mu.Unlock()
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "x"}}, nil //nolint:staticcheck // as above
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + Path, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, &sdk.ClientSessionOptions{ProtocolVersion: modernProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A 2026-07-28 server's input-required round reaches the 2026-07-28 agent
// that called, with only what the tool's policy allows (the form; not
// the sampling request, off by default), under the gateway's own state;
// the agent's answer goes back with the server's state and only the
// answers to what it was asked. The state is bound to its caller, tool
// and arguments: another agent presenting it, or the caller presenting
// it altered or for other arguments, is refused and the server is not
// given the answers.
func TestInputRoundsRelayedUnderPolicy(t *testing.T) {
	up := startRoundsUpstream(t)
	log := &capture.Buffer{}
	_, hs := catalogGatewayWith(t, up.hs.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		o.Stateless = true
		o.Audit = audit.NewJSONLines(log)
		o.Authn = tokenTable{
			obsToken:   {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
			otherToken: {Username: "system:serviceaccount:team:other", UID: "u2", Namespace: obsNS, ServiceAccount: "other"},
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	var sampled int
	agent := roundsAgent(t, hs.URL, obsToken, true, &sampled)
	res, err := agent.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res); got != "accept hello Ada" {
		t.Fatalf("the call answered %q, want the server's greeting", got)
	}
	if sampled != 0 {
		t.Errorf("the agent was asked to sample %d times", sampled)
	}
	answers, states := up.calls()
	if len(answers) != 2 || answers[1]["llm"] || !answers[1]["name"] || states[1] != upstreamRoundState {
		t.Errorf("the server was called with answers %v and states %v; want its own state back and the name only", answers, states)
	}
	out := log.Take()
	if !strings.Contains(out, `"reason":"`+audit.RefusedSamplingNotAllowed+`"`) || !strings.Contains(out, `"decision":"Relayed"`) || strings.Contains(out, "Ada") || strings.Contains(out, "your name") {
		t.Errorf("the round was not audited as it should be: %s", out)
	}

	// A client that declared no elicitation is not sent the form: with
	// nothing left to pass on, the call fails.
	pcs := undeclaredAgent(t, hs.URL, obsToken)
	undeclared, err := pcs.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !undeclared.IsError || !strings.Contains(resultText(undeclared), string(kindInputRefused)) {
		t.Errorf("a client that declared no elicitation got %+v", undeclared)
	}
	if g := log.Take(); !strings.Contains(g, `"reason":"`+audit.RefusedNotDeclared+`"`) {
		t.Errorf("the form was not refused as undeclared: %s", g)
	}

	// The round as a client that answers it by hand sees it.
	var none int
	manual := roundsAgent(t, hs.URL, obsToken, false, &none)
	first, err := manual.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || len(first.InputRequests) != 1 || first.InputRequests["name"] == nil || first.RequestState == "" || first.RequestState == upstreamRoundState {
		t.Fatalf("the round reached the agent as %+v; want the form alone, under the gateway's state", first)
	}
	answer := sdk.InputResponseMap{"name": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Mallory"}}}
	before, _ := up.calls()
	for name, tc := range map[string]struct {
		token, state string
		args         map[string]any
	}{
		"another agent presenting it":   {otherToken, first.RequestState, map[string]any{"x": 1}},
		"the state altered":             {obsToken, first.RequestState[:len(first.RequestState)-2] + "AA", map[string]any{"x": 1}},
		"the state for other arguments": {obsToken, first.RequestState, map[string]any{"x": 2}},
	} {
		t.Run(name, func(t *testing.T) {
			cs := manual
			if tc.token != obsToken {
				cs = roundsAgent(t, hs.URL, tc.token, false, &none)
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: tc.args, InputResponses: answer, RequestState: tc.state})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(resultText(res), string(kindInputStateInvalid)) {
				t.Errorf("answered %q (error %v), want the call refused", resultText(res), res.IsError)
			}
		})
	}
	if after, _ := up.calls(); len(after) != len(before) {
		t.Errorf("the server was called %d times by calls the gateway should have refused: %v", len(after)-len(before), after[len(before):])
	}

	// Answers without a state of the gateway's are a first call: the
	// server is asked again, without them.
	again, err := manual.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"x": 1}, InputResponses: answer, RequestState: upstreamRoundState})
	if err != nil {
		t.Fatal(err)
	}
	if !again.NeedsInput() {
		t.Errorf("answers without the gateway's state were answered %q", resultText(again))
	}
	if after, states := up.calls(); len(after[len(after)-1]) != 0 || states[len(states)-1] != "" {
		t.Errorf("the server was given answers %v under state %q that the gateway did not seal", after[len(after)-1], states[len(states)-1])
	}
}

// A 2026-07-28 server's round during the call of an initialize-era agent
// in a session kept here is asked of that agent in its session, under
// the tool's policy (the form; not the sampling request, off by default),
// and the server is called again with the answer and its own state,
// which the agent never sees: one call for the agent and in the audit
// trail. A refused form is answered declined; a server that keeps asking
// is answered at most maxBridgedRounds times; without a session kept
// here nothing is asked and the call fails.
func TestInputRoundsAnsweredInSession(t *testing.T) {
	up := startRoundsUpstream(t)
	log := &capture.Buffer{}
	var objects client.Client
	_, hs := catalogGatewayWith(t, up.hs.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		objects = o.Reader.(client.Client)
		o.Audit = audit.NewJSONLines(log)
	})
	agent := connectAskedAgent(t, hs.URL, obsToken)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	call := func(args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := agent.cs.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if got := resultText(call(map[string]any{"x": 1})); got != "accept hello Ada" {
		t.Fatalf("the call answered %q, want the server's greeting for the agent's answer", got)
	}
	if e, s := agent.asked(); e != 1 || s != 0 {
		t.Errorf("the agent was asked %d forms and %d sampling requests, want the form alone", e, s)
	}
	answers, states := up.calls()
	if len(answers) != 2 || !answers[1]["name"] || answers[1]["llm"] || states[1] != upstreamRoundState {
		t.Errorf("the server was called with answers %v and states %v; want its own state back and the name only", answers, states)
	}
	out := log.Take()
	if strings.Count(out, `"phase":"before"`) != 1 || strings.Count(out, `"phase":"after"`) != 1 || !strings.Contains(out, `"outcome":"Succeeded"`) {
		t.Errorf("the rounds were not audited as one call: %s", out)
	}
	if !strings.Contains(out, `"decision":"Relayed"`) || !strings.Contains(out, `"reason":"`+audit.RefusedSamplingNotAllowed+`"`) {
		t.Errorf("the round's requests were not audited one by one: %s", out)
	}
	for _, value := range []string{"Ada", "your name", upstreamRoundState} {
		if strings.Contains(out, value) {
			t.Errorf("the audit trail holds %q", value)
		}
	}

	// A form the policy refuses is answered declined, the agent unasked.
	tool := &mcpv1alpha1.McpTool{}
	if err := objects.Get(ctx, types.NamespacedName{Namespace: obsNS, Name: echoObject}, tool); err != nil {
		t.Fatal(err)
	}
	tool.Spec.Interaction = &mcpv1alpha1.ToolInteraction{FormElicitation: mcpv1alpha1.FormElicitationRefused}
	if err := objects.Update(ctx, tool); err != nil {
		t.Fatal(err)
	}
	if got := resultText(call(map[string]any{"x": 2})); got != "decline hello " {
		t.Errorf("a refused form came to the server as %q, want declined", got)
	}
	if e, _ := agent.asked(); e != 1 {
		t.Errorf("the agent was asked a form the policy refuses")
	}
	tool.Spec.Interaction = nil
	if err := objects.Update(ctx, tool); err != nil {
		t.Fatal(err)
	}

	// A server that asks again and again is answered a bounded number of
	// times, and the call fails saying why.
	before, _ := up.calls()
	res := call(map[string]any{"forever": true})
	if !res.IsError || !strings.Contains(resultText(res), string(kindInputRoundsExceeded)) {
		t.Errorf("a server that never stops asking was answered %q", resultText(res))
	}
	if after, _ := up.calls(); len(after)-len(before) != maxBridgedRounds+1 {
		t.Errorf("the server was called %d times, want %d", len(after)-len(before), maxBridgedRounds+1)
	}

	// Without a session kept here the agent is asked on its call's
	// answer (streamask.go); where the SDK serves the call it cannot be.
	sg, stateless := catalogGatewayWith(t, up.hs.URL, nil, allowList{echoObject: true}, 0, func(o *Options) { o.Stateless = true })
	other := connectAskedAgent(t, stateless.URL, obsToken)
	if got := resultText(call2(t, other, map[string]any{"x": 1})); got != "accept hello Ada" {
		t.Errorf("without a session the call answered %q, want the server's greeting for the agent's answer", got)
	}
	sg.noInitializeEra.Store(true)
	e0, _ := other.asked()
	res, err := other.cs.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), string(mcp.KindInputRequired)) {
		t.Errorf("without a session the call answered %q", resultText(res))
	}
	if e, _ := other.asked(); e != e0 {
		t.Errorf("an agent on the SDK's path without a session was asked")
	}
}

func call2(t *testing.T, a *askedAgent, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := a.cs.CallTool(t.Context(), &sdk.CallToolParams{Name: echoLocal, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
