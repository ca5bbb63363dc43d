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

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/capture"
)

// roundsUpstream is a real go-sdk server of 2026-07-28 whose echo tool
// answers a first call with input_required, asking for a name (a form)
// and for a completion (sampling), under a state of its own, and a call
// that brings the name back with that state with a greeting. It records
// what the calls brought.
type roundsUpstream struct {
	hs *httptest.Server

	mu      sync.Mutex
	answers []map[string]bool
	states  []string
}

const upstreamRoundState = "upstream-state-1"

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
		if !ok || req.Params.RequestState != upstreamRoundState {
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{
					"name": &sdk.ElicitParams{Mode: "form", Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
					"llm":  &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}}, //nolint:staticcheck // deprecated in 2026-07-28, still a request a server may make
				},
				RequestState: upstreamRoundState,
			}, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello " + name.Content["name"].(string)}}}, nil
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
	if got := resultText(res); got != "hello Ada" {
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
