package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// A server's requests for input during a call (elicitation, sampling),
// relayed to the agent that made the call under the tool's policy
// (spec.interaction), each audited without its content
// (docs/adr/064-interaction-relayed-under-policy.md). The MCP client
// hands the send stage each request it reads on the call's own response
// stream (mcp.WithInteraction); the stage checks it against the tool's
// policy, screens what the agent would be asked as a result's text is
// (askscreen.go), asks the calling agent through the channel its call
// came on, and answers the server with what the agent said, or with a
// refusal.
// A session kept in this process is such a channel; for a 2026-07-28
// caller the call parks and the request becomes a round (parked.go);
// without either (the chart's initialize era), every request is refused.

// agentAsker asks the agent that made a call what its server asks,
// bound to that call: it is the call's own session, set on the call's
// context, never looked up.
type agentAsker interface {
	ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// bounded is an agentAsker that holds the call while the agent answers,
// within bounds: room says why it cannot now ("" when it can).
type bounded interface {
	room() string
}

type askerKey struct{}

func askerOf(ctx context.Context) agentAsker {
	a, _ := ctx.Value(askerKey{}).(agentAsker)
	return a
}

// sessionAsker asks through the agent's session kept in this process:
// the go-sdk sends the request on the call's stream and waits for the
// agent's answer in that session.
type sessionAsker struct{ ss *sdk.ServerSession }

func (s sessionAsker) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case mcp.MethodElicit:
		var p sdk.ElicitParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		res, err := s.ss.Elicit(ctx, &p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	default:
		var p sdk.CreateMessageParams //nolint:staticcheck // deprecated in 2026-07-28, still what clients and servers of the initialize era send
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		res, err := s.ss.CreateMessage(ctx, &p) //nolint:staticcheck // deprecated in 2026-07-28; relayed for servers of the initialize era
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
}

// callInteraction answers one call's server requests (mcp.Interaction).
type callInteraction struct {
	g     *Gateway
	c     *callScope
	asker agentAsker
}

// interactionFor is what the send stage hands the client for the call's
// server requests.
func (g *Gateway) interactionFor(ctx context.Context, c *callScope) *callInteraction {
	return &callInteraction{g: g, c: c, asker: askerOf(ctx)}
}

// Request relays the server's request, screened, to the calling agent
// when the tool's policy and the screening allow it and the agent can be
// asked, and answers it with a refusal otherwise. Either way one audit
// record says what was asked and what came of it; without that record
// nothing is relayed.
func (ci *callInteraction) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.RPCError) {
	var policy *mcpv1alpha1.ToolInteraction
	if ci.c.tool != nil {
		policy = ci.c.tool.Spec.Interaction
	}
	kind, mode, refused := checkInteraction(policy, method, params)
	if refused == "" && ci.asker == nil {
		refused = audit.RefusedNoChannel
	}
	if _, parked := ci.asker.(*parkedCall); parked && refused == "" && !ci.c.declares(method, params) {
		// A round goes only to a 2026-07-28 caller that declared it can
		// answer what it asks.
		refused = audit.RefusedNotDeclared
	}
	if b, ok := ci.asker.(bounded); ok && refused == "" {
		// A channel that holds the call while the agent answers, and has
		// no room for another.
		refused = b.room()
	}
	rec := interactionRecord(ci.c, ci.g.now(), kind, mode)
	if refused == "" {
		// What the agent would be asked is screened as a result's text
		// is (askscreen.go).
		params, refused = ci.g.screenAsk(ctx, ci.c, &rec, method, params)
	}
	if refused != "" {
		rec.Decision, rec.Reason = audit.DecisionRefused, refused
		ci.write(ctx, rec)
		return refuseRequest(method)
	}
	rec.Decision = audit.DecisionRelayed
	// Recorded before the agent is asked: no record, no relay.
	if !ci.write(ctx, rec) {
		return refuseRequest(method)
	}
	res, err := ci.asker.ask(ctx, method, params)
	rec.Time = ci.g.now()
	if err != nil {
		rec.InteractionResult = "error"
		ci.write(ctx, rec)
		return refuseRequest(method)
	}
	rec.InteractionResult = interactionResult(method, res)
	ci.write(ctx, rec)
	return res, nil
}

// interactionRecord begins the audit record of a server's request for
// input during c: the call's record, as a record of the interaction
// phase, without what the call's own stages found or were told (its
// inspection, its guardrail answer), which are not the request's.
func interactionRecord(c *callScope, now time.Time, kind, mode string) audit.Record {
	rec := c.rec
	rec.Phase, rec.Time, rec.Interaction, rec.InteractionMode = audit.PhaseInteraction, now, kind, mode
	rec.Outcome, rec.ErrorKind, rec.LatencyMillis = "", "", 0
	rec.Inspection, rec.InspectionAction, rec.Guardrail = nil, "", ""
	return rec
}

func (ci *callInteraction) write(ctx context.Context, rec audit.Record) bool {
	if err := ci.g.Audit.Write(ctx, rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a server's request could not be written; refusing it", "tool", ci.c.key.String())
		return false
	}
	return true
}

// refuseRequest is the answer to a request the agent is not asked: an
// elicitation declined, a sampling request refused as a person would.
func refuseRequest(method string) (json.RawMessage, *mcp.RPCError) {
	if method == mcp.MethodElicit {
		return json.RawMessage(`{"action":"decline"}`), nil
	}
	return nil, &mcp.RPCError{Code: -1, Message: "the request was not relayed to the user"}
}

// interactionResult names what the agent answered, never its content:
// an elicitation's action, or that a sampling request was answered.
func interactionResult(method string, res json.RawMessage) string {
	if method != mcp.MethodElicit {
		return "answered"
	}
	var r struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(res, &r)
	switch r.Action {
	case "accept", "decline", "cancel":
		return r.Action
	}
	return "error"
}

// checkInteraction decides a server's request against the tool's policy
// (nil: form elicitation only): its kind and mode, and why it is refused
// ("" when it may be relayed).
func checkInteraction(p *mcpv1alpha1.ToolInteraction, method string, params json.RawMessage) (kind, mode, refused string) {
	if method != mcp.MethodElicit && method != mcp.MethodSample {
		// A round may ask for roots, which the gateway has none of to
		// give, or for what no revision defines.
		return "", "", audit.RefusedMalformedRequest
	}
	if method != mcp.MethodElicit {
		if p == nil || !p.Sampling {
			return audit.InteractionSampling, "", audit.RefusedSamplingNotAllowed
		}
		return audit.InteractionSampling, "", ""
	}
	var e struct {
		Mode            string `json:"mode"`
		URL             string `json:"url"`
		RequestedSchema *struct {
			Properties map[string]struct {
				Format string `json:"format"`
			} `json:"properties"`
		} `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &e) != nil {
		return audit.InteractionElicitation, "", audit.RefusedMalformedRequest
	}
	switch {
	case e.Mode == "url" || (e.Mode == "" && e.URL != ""):
		if e.RequestedSchema != nil || !urlHostAllowed(p, e.URL) {
			return audit.InteractionElicitation, "url", audit.RefusedURLHostNotAllowed
		}
		return audit.InteractionElicitation, "url", ""
	case e.Mode == "form" || e.Mode == "":
		if p != nil && p.FormElicitation == mcpv1alpha1.FormElicitationRefused {
			return audit.InteractionElicitation, "form", audit.RefusedFormNotAllowed
		}
		if e.URL != "" || e.RequestedSchema == nil {
			return audit.InteractionElicitation, "form", audit.RefusedMalformedRequest
		}
		for name, f := range e.RequestedSchema.Properties {
			if strings.EqualFold(f.Format, "password") || (p != nil && slices.Contains(p.SensitiveFields, name)) {
				return audit.InteractionElicitation, "form", audit.RefusedSensitiveField
			}
		}
		return audit.InteractionElicitation, "form", ""
	default:
		return audit.InteractionElicitation, "", audit.RefusedMalformedRequest
	}
}

// urlHostAllowed reports whether raw is an https URL, without userinfo,
// to a host the policy names: exactly, or below a "*." domain.
func urlHostAllowed(p *mcpv1alpha1.ToolInteraction, raw string) bool {
	if p == nil || len(p.URLElicitationHosts) == 0 {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range p.URLElicitationHosts {
		if domain, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+domain) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// Input-required rounds (2026-07-28). A server asks for input by
// answering a call with input_required: requests for input, and state the
// caller must send back with its answers when it calls again. The gateway
// passes on the requests the tool's policy and the screening allow,
// screened (each audited; the others are left out, and the server gets
// no answer to them) and, in place of the server's state, its own,
// sealed: the caller, the tool, the arguments' hash, the ids of the
// requests it passed on, the server's state and an expiry, under an HMAC
// of the approval keys every replica shares. A call that comes back with state is made only when the seal
// holds and names that caller, tool and arguments, and carries upstream
// the server's state and only the answers to the requests passed on.

// inputRoundTTL is how long a caller has to answer a round.
const inputRoundTTL = 10 * time.Minute

// sealedRound is what the state the gateway hands a caller says.
type sealedRound struct {
	Caller    string   `json:"c"`
	Namespace string   `json:"n"`
	Tool      string   `json:"t"`
	Arguments string   `json:"a"`
	Asked     []string `json:"i"`
	State     string   `json:"s,omitempty"`
	Expires   int64    `json:"e"`
	// Approval is "Approved" when the call that was asked had passed a
	// person's or the client's approval, and names it: the call that
	// answers a parked call's round continues that call, and is not
	// approved again (approvedRound).
	Approval     string `json:"p,omitempty"`
	ApprovalName string `json:"pn,omitempty"`
	ApprovedBy   string `json:"pb,omitempty"`
	// Park names the round of a call parked on the replica that sealed it
	// (parked.go); State is then empty. It is the gateway's own mark: the
	// server's State, opaque to everyone else, is never read for it.
	Park string `json:"k,omitempty"`
}

// sealFor begins the sealed round of c's call: its caller, tool,
// arguments and approval.
func (c *callScope) sealFor(asked []string, state string, expires time.Time) sealedRound {
	s := sealedRound{
		Caller: c.rec.Caller, Namespace: c.rec.Namespace, Tool: c.key.String(), Arguments: c.rec.ArgumentsHash,
		Asked: asked, State: state, Expires: expires.Unix(),
	}
	if c.rec.Approval == approvedMark {
		s.Approval, s.ApprovalName, s.ApprovedBy = approvedMark, c.rec.ApprovalName, c.rec.ApprovedBy
	}
	return s
}

// approvedMark is what an approved call's record says of its approval.
const approvedMark = "Approved"

// sealedFor reads the gateway's round state a 2026-07-28 call carries,
// when it holds for c's caller, tool and arguments and has not expired.
func (g *Gateway) sealedFor(ctx context.Context, c *callScope, state string) (sealedRound, bool) {
	if !strings.HasPrefix(state, roundPrefix) {
		return sealedRound{}, false
	}
	s, ok := g.unsealRound(ctx, strings.TrimPrefix(state, roundPrefix))
	if !ok || s.Caller != c.rec.Caller || s.Namespace != c.rec.Namespace || s.Tool != c.key.String() ||
		s.Arguments != c.rec.ArgumentsHash || g.now().Unix() > s.Expires {
		return sealedRound{}, false
	}
	return s, true
}

// approvedRound reports whether c's call answers a round of a parked
// call of the same caller, tool and arguments that was approved, and
// names that approval. Such a call is no call of its own: it hands the
// answer to the approved call waiting on this replica, once (a state
// whose parked call is gone makes no call at all), so it is not approved
// again. The round of a 2026-07-28 server is not such a round: answering
// it calls the server again, as often as the state is presented, and the
// server alone decides whether that acts again; that call is approved as
// any call is.
func (g *Gateway) approvedRound(ctx context.Context, c *callScope) (name, by string, ok bool) {
	round, isRound := ctx.Value(roundKey{}).(agentRound)
	if !isRound {
		return "", "", false
	}
	s, ok := g.sealedFor(ctx, c, round.state)
	if !ok || s.Park == "" || s.Approval != approvedMark {
		return "", "", false
	}
	return s.ApprovalName, s.ApprovedBy, true
}

// inputRoundDomain separates these MACs from the approval keys' other
// uses.
const inputRoundDomain = "mcp-catalog input round\x00"

type roundKey struct{}

// agentRound is a 2026-07-28 caller's call as the SDK read it: its
// answers and state, when it answers a round.
type agentRound struct {
	responses json.RawMessage
	state     string
}

// inputRounds is the client option of a 2026-07-28 caller's call: it
// takes part in the server's input-required rounds, sending the answers
// of the caller's previous round when its state is the gateway's and
// names this caller, tool and arguments. Nil for a caller of the
// initialize era.
func (g *Gateway) inputRounds(ctx context.Context, c *callScope) (mcp.CallOption, error) {
	round, ok := ctx.Value(roundKey{}).(agentRound)
	if !ok {
		if m := messageOf(ctx); m == nil || m.era != modernProtocol {
			return nil, nil
		}
		// The front door takes only first calls: no answers.
	}
	if !strings.HasPrefix(round.state, roundPrefix) {
		// No state of a round of the server's: a first call, or the
		// answer to the gateway's own question (an approval, whose
		// stage read it). Nothing of it goes upstream.
		return firstRound, nil
	}
	s, ok := g.sealedFor(ctx, c, round.state)
	if !ok {
		return nil, &resultError{kind: kindInputStateInvalid}
	}
	var answers map[string]json.RawMessage
	if round.responses != nil && json.Unmarshal(round.responses, &answers) != nil {
		return nil, &resultError{kind: kindInputStateInvalid}
	}
	for k := range answers {
		if !slices.Contains(s.Asked, k) {
			// Only the answers to what the caller was asked go upstream.
			delete(answers, k)
		}
	}
	if s.Park != "" {
		// The round of a call parked here: the answer goes to it, not in
		// a new call (parked.go).
		c.resume = &parkResume{key: s.Park, answer: answers[parkKey]}
		return nil, nil
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, &resultError{kind: kindInputStateInvalid}
	}
	return mcp.WithInputRounds(b, s.State), nil
}

// firstRound is the option of a call that answers no round: made once,
// as it holds nothing of any call.
var firstRound = mcp.WithInputRounds(nil, "")

// kindInputStateInvalid: a call answering a round whose state the gateway
// did not seal for this caller, tool and arguments, or sealed too long ago.
const kindInputStateInvalid mcp.Kind = "InputStateInvalid"

// declares reports whether the 2026-07-28 caller of c declared, in its
// request's _meta, that it can answer a request of method with params in
// a round: the elicitation capability (its form mode, which an empty
// capability means, or its url mode) or the sampling one. A server must
// not send a round a client did not declare, nor may the gateway.
func (c *callScope) declares(method string, params json.RawMessage) bool {
	if c.req == nil {
		return false
	}
	caps := c.req.ClientCapabilities()
	if caps == nil {
		return false
	}
	if method == mcp.MethodSample {
		return caps.Sampling != nil //nolint:staticcheck // deprecated in 2026-07-28, still what a caller declares to be asked for sampling
	}
	e := caps.Elicitation
	if e == nil {
		return false
	}
	var p struct {
		Mode string `json:"mode"`
		URL  string `json:"url"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
		return e.URL != nil
	}
	return e.Form != nil || e.URL == nil
}

// inputRequired is a server's input_required result, as read.
type inputRequired struct {
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

// askForInput is the record stage's answer to an input_required result:
// the requests the tool's policy allows passed on to the caller with the
// gateway's sealed state, each audited; a round none of whose requests
// may be passed on fails the call.
func (g *Gateway) askForInput(ctx context.Context, c *callScope, out *mcp.CallOutcome) *sdk.CallToolResult {
	var r inputRequired
	_ = json.Unmarshal(out.Result, &r)
	var policy *mcpv1alpha1.ToolInteraction
	if c.tool != nil {
		policy = c.tool.Spec.Interaction
	}
	allowed := map[string]json.RawMessage{}
	var asked []string
	for id, req := range r.InputRequests {
		kind, mode, refused := checkInteraction(policy, req.Method, req.Params)
		if refused == "" && !c.declares(req.Method, req.Params) {
			refused = audit.RefusedNotDeclared
		}
		rec := interactionRecord(c, g.now(), kind, mode)
		params := req.Params
		if refused == "" {
			params, refused = g.screenAsk(ctx, c, &rec, req.Method, req.Params)
		}
		rec.Decision, rec.Reason = audit.DecisionRelayed, refused
		if refused != "" {
			rec.Decision = audit.DecisionRefused
		}
		if err := g.Audit.Write(ctx, rec); err != nil || refused != "" {
			continue
		}
		b, err := json.Marshal(map[string]any{"method": req.Method, "params": params})
		if err != nil {
			continue
		}
		allowed[id], asked = b, append(asked, id)
	}
	var requests sdk.InputRequestMap
	if b, err := json.Marshal(allowed); err == nil && len(asked) > 0 {
		if json.Unmarshal(b, &requests) != nil {
			requests = nil
		}
	}
	if len(requests) == 0 {
		c.rec.Outcome, c.rec.ErrorKind = audit.OutcomeFailed, string(kindInputRefused)
		c.obs.end(audit.OutcomeFailed, string(kindInputRefused))
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(
			"The call to %s failed (%s): its server asked for input this tool's policy does not let the gateway pass on.", c.tool.Status.LocalName, kindInputRefused)}}}
	}
	return g.round(ctx, c, requests, c.sealFor(asked, r.RequestState, g.now().Add(inputRoundTTL)))
}

// round is the result that hands the caller requests under state s,
// sealed, and records that the call asked; or, when there are no
// requests or s cannot be sealed, the call's failure.
func (g *Gateway) round(ctx context.Context, c *callScope, requests sdk.InputRequestMap, s sealedRound) *sdk.CallToolResult {
	state, err := g.sealRound(ctx, s)
	if err != nil || len(requests) == 0 {
		c.rec.Outcome, c.rec.ErrorKind = audit.OutcomeFailed, string(kindInputRefused)
		c.obs.end(audit.OutcomeFailed, string(kindInputRefused))
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "The call's request for input could not be passed on."}}}
	}
	c.rec.Outcome = audit.OutcomeInputRequired
	c.obs.end(audit.OutcomeInputRequired, "")
	return &sdk.CallToolResult{InputRequests: requests, RequestState: state}
}

// kindInputRefused: the server asked only for input the policy refuses.
const kindInputRefused mcp.Kind = "InputRefused"

// Rounds answered in a session. A 2026-07-28 server asks an
// initialize-era agent in a session kept here for input as it asks any
// caller, by answering the call input_required; that agent cannot answer
// a round, but it can be asked in its session, as an initialize-era
// server's requests on a stream are. The gateway asks each request of
// the round through callInteraction.Request (the tool's policy, the
// screening, one audit record each; a refused elicitation declined, a
// refused sampling request left unanswered), then calls the server again
// with the answers and the server's own state, which never leaves the
// gateway. The call is one call to the agent and in the audit trail,
// however many rounds it took.

// maxBridgedRounds bounds the rounds one call answers in a session: a
// server may ask again for what it was not given.
const maxBridgedRounds = 8

// kindInputRoundsExceeded: the server was still asking for input after
// maxBridgedRounds rounds.
const kindInputRoundsExceeded mcp.Kind = "InputRoundsExceeded"

// answerInSession asks the agent in its session what round n of the
// server's input_required answer out asks, and returns the option that
// carries the answers and the server's state upstream.
func (g *Gateway) answerInSession(ctx context.Context, c *callScope, out *mcp.CallOutcome, n int) (mcp.CallOption, error) {
	if n >= maxBridgedRounds {
		return nil, &resultError{kind: kindInputRoundsExceeded}
	}
	var r inputRequired
	if json.Unmarshal(out.Result, &r) != nil {
		return nil, &resultError{kind: mcp.KindInvalidResponse}
	}
	ci := g.interactionFor(ctx, c)
	answers := make(map[string]json.RawMessage, len(r.InputRequests))
	// In the order of the ids, so that an agent is asked the same round
	// the same way every time.
	for _, id := range slices.Sorted(maps.Keys(r.InputRequests)) {
		req := r.InputRequests[id]
		if res, refused := ci.Request(ctx, req.Method, req.Params); refused == nil {
			answers[id] = res
		}
	}
	if len(r.InputRequests) > 0 && len(answers) == 0 {
		return nil, &resultError{kind: kindInputRefused}
	}
	var responses json.RawMessage
	if len(answers) > 0 {
		b, err := json.Marshal(answers)
		if err != nil {
			return nil, &resultError{kind: kindInputRefused}
		}
		responses = b
	}
	return mcp.WithInputRounds(responses, r.RequestState), nil
}

func (g *Gateway) sealRound(ctx context.Context, s sealedRound) (string, error) {
	ks, err := g.approvalKeys.Keys(ctx, false)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	sig := approvals.MAC(ks.Current, []byte(inputRoundDomain+payload))
	return roundPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// roundPrefix marks the state of a server's round, apart from the state
// of the gateway's own questions (approvals).
const roundPrefix = "round."

func (g *Gateway) unsealRound(ctx context.Context, token string) (sealedRound, bool) {
	var s sealedRound
	payload, sig64, ok := strings.Cut(token, ".")
	if !ok || len(token) > 64<<10 {
		return s, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil {
		return s, false
	}
	if ok, err := approvals.VerifyMAC(ctx, g.approvalKeys, []byte(inputRoundDomain+payload), sig); err != nil || !ok {
		return s, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &s) != nil {
		return s, false
	}
	return s, true
}
