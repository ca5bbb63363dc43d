package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/poll"
)

// An initialize-era server's request during a 2026-07-28 agent's call
// reaches that agent as an input-required round, under the tool's policy,
// while the server's call waits for the answer on this replica; the
// agent's answer goes back to the server on the same call. The round's
// state is the caller's alone, is taken once, and lives as long as the
// server's operation timeout: after that the server hears a refusal and
// the call is recorded as never answered. A caller parks at most
// maxParkedPerCaller calls; past that its server's requests are refused.
func TestStreamRequestsAskedAsRounds(t *testing.T) {
	up := askingUpstream(t)
	log := &capture.Buffer{}
	var objects client.Client
	_, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		objects = o.Reader.(client.Client)
		o.Stateless = true
		o.Audit = audit.NewJSONLines(log)
		o.Authn = tokenTable{
			obsToken:   {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
			otherToken: {Username: "system:serviceaccount:team:other", UID: "u2", Namespace: obsNS, ServiceAccount: "other"},
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	setTimeout := func(d time.Duration) {
		t.Helper()
		srv := &mcpv1alpha1.McpServer{}
		if err := objects.Get(ctx, types.NamespacedName{Namespace: obsNS, Name: "docs"}, srv); err != nil {
			t.Fatal(err)
		}
		srv.Spec.OperationTimeout = &metav1.Duration{Duration: d}
		if err := objects.Update(ctx, srv); err != nil {
			t.Fatal(err)
		}
	}
	setTimeout(20 * time.Second)

	var sampled int
	auto := roundsAgent(t, hs.URL, obsToken, true, &sampled)
	call := func(cs *sdk.ClientSession, p *sdk.CallToolParams) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	form := map[string]any{"ask": "form"}

	// The go-sdk's own loop answers the round.
	if got := resultText(call(auto, &sdk.CallToolParams{Name: echoLocal, Arguments: form})); got != "accept map[name:Ada]" {
		t.Fatalf("the server's form came to %q, want the agent's answer", got)
	}
	// What the policy refuses is refused on the stream, the agent unasked.
	if got := resultText(call(auto, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{"ask": "sample"}})); got != "refused" || sampled != 0 {
		t.Errorf("a sampling request the policy refuses came to %q, the agent asked %d times", got, sampled)
	}
	if g := log.Take(); !strings.Contains(g, `"decision":"Relayed"`) || !strings.Contains(g, `"interactionResult":"accept"`) || strings.Contains(g, "Ada") || strings.Contains(g, "who are you") {
		t.Errorf("the relayed request was not audited as it should be: %s", g)
	}

	// An agent that did not declare elicitation is not asked in a round:
	// the server hears a decline.
	pcs := undeclaredAgent(t, hs.URL, obsToken)
	_ = log.Take()
	if got := resultText(call(pcs, &sdk.CallToolParams{Name: echoLocal, Arguments: form})); got != "decline map[]" {
		t.Errorf("an agent that declared no elicitation: the form came to %q, want declined", got)
	}
	if g := log.Take(); !strings.Contains(g, `"reason":"`+audit.RefusedNotDeclared+`"`) {
		t.Errorf("the refusal was not audited as undeclared: %s", g)
	}

	// By hand: the round, its state bound to its caller, taken once.
	var none int
	manual := roundsAgent(t, hs.URL, obsToken, false, &none)
	first := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form})
	if !first.NeedsInput() || len(first.InputRequests) != 1 || first.InputRequests[parkKey] == nil || !strings.HasPrefix(first.RequestState, roundPrefix) {
		t.Fatalf("the server's request reached the agent as %+v; want one request under the gateway's state", first)
	}
	answer := sdk.InputResponseMap{parkKey: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Mallory"}}}
	other := roundsAgent(t, hs.URL, otherToken, false, &none)
	if res := call(other, &sdk.CallToolParams{Name: echoLocal, Arguments: form, InputResponses: answer, RequestState: first.RequestState}); !res.IsError || !strings.Contains(resultText(res), string(kindInputStateInvalid)) {
		t.Errorf("another agent presenting the state was answered %q", resultText(res))
	}
	if got := resultText(call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form, InputResponses: answer, RequestState: first.RequestState})); got != "accept map[name:Mallory]" {
		t.Errorf("the answer came to the server as %q", got)
	}
	if res := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form, InputResponses: answer, RequestState: first.RequestState}); !res.IsError || !strings.Contains(resultText(res), string(kindInputRoundLost)) {
		t.Errorf("the state presented twice was answered %q", resultText(res))
	}

	// Each round's state answers that round only: a call that asks twice
	// gets two states, and the first presented again finds nothing.
	twice := map[string]any{"ask": "twice"}
	r1 := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: twice})
	first1 := sdk.InputResponseMap{parkKey: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "one"}}}
	r2 := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: twice, InputResponses: first1, RequestState: r1.RequestState})
	if !r2.NeedsInput() || r2.RequestState == r1.RequestState {
		t.Fatalf("the second round came as %+v; want a round of its own state", r2)
	}
	if res := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: twice, InputResponses: first1, RequestState: r1.RequestState}); !res.IsError || !strings.Contains(resultText(res), string(kindInputRoundLost)) {
		t.Errorf("the first round's state presented for the second was answered %q", resultText(res))
	}
	second := sdk.InputResponseMap{parkKey: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "two"}}}
	if got := resultText(call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: twice, InputResponses: second, RequestState: r2.RequestState})); got != "accept map[name:one] then accept map[name:two]" {
		t.Errorf("the two rounds came to the server as %q", got)
	}

	// A caller parks a bounded number of calls.
	var states []string
	for range maxParkedPerCaller {
		res := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form})
		if !res.NeedsInput() {
			t.Fatalf("a call that should park answered %q", resultText(res))
		}
		states = append(states, res.RequestState)
	}
	_ = log.Take()
	if got := resultText(call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form})); got != "decline map[]" {
		t.Errorf("a call past the bound came to %q, want the server's request declined", got)
	}
	if g := log.Take(); !strings.Contains(g, `"reason":"`+audit.RefusedTooManyWaiting+`"`) || strings.Contains(g, `"decision":"Relayed"`) {
		t.Errorf("the request past the bound was not audited as refused: %s", g)
	}
	declined := sdk.InputResponseMap{parkKey: &sdk.ElicitResult{Action: "decline"}}
	for _, s := range states {
		if got := resultText(call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form, InputResponses: declined, RequestState: s})); got != "decline map[]" {
			t.Errorf("a parked call answered %q", got)
		}
	}

	// Nobody comes back: the server hears a refusal when its operation
	// timeout is up, and the call is recorded as never answered.
	setTimeout(time.Second)
	_ = log.Take()
	left := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form})
	if !left.NeedsInput() {
		t.Fatalf("the call answered %q", resultText(left))
	}
	poll.Until(t, 10*time.Second, "the call nobody came back for recorded", func() error {
		if !strings.Contains(log.String(), `"errorKind":"`+kindInputNotAnswered+`"`) {
			return errors.New("no record of it yet")
		}
		return nil
	})
	// Its state names a call that is gone, and has expired with it (by
	// the second, so either may be found first): refused without a call.
	if res := call(manual, &sdk.CallToolParams{Name: echoLocal, Arguments: form, InputResponses: answer, RequestState: left.RequestState}); !res.IsError ||
		(!strings.Contains(resultText(res), string(kindInputRoundLost)) && !strings.Contains(resultText(res), string(kindInputStateInvalid))) {
		t.Errorf("an answer after the server's wait ended was answered %q", resultText(res))
	}
}
