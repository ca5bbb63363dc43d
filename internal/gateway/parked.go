package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Requests on a stream asked as rounds. An initialize-era server asks for
// input on the call's response stream and waits there for the answer; a
// 2026-07-28 agent is asked only in a result, and answers by calling
// again. To join them, the gateway makes a 2026-07-28 caller's call of a
// server it does not know to be of 2026-07-28 on a goroutine of its own.
// A request the tool's policy and the screening allow
// (callInteraction.Request, exactly as for a session) parks the call: the
// request goes to the caller as an input_required round under the
// gateway's sealed state (interaction.go), which names the parked call,
// while the server's stream waits for the answer. The caller's next call
// with that state passes every stage again; its send stage hands the
// answer to the parked call and waits for what comes next: another
// round, or the result.
//
// A parked call lives on the replica that made it and at most as long as
// the server's operation timeout. The state is taken once: presented a
// second time, after the call ended, or on another replica, it finds no
// call and the call fails (InputRoundLost); the server, left waiting,
// hears a refusal when the time is up.

// parkKey is the key of a parked call's request in the round.
const parkKey = "input"

// The bounds of parked calls: per caller, per namespace, and on one
// replica.
const (
	maxParkedPerCaller    = 8
	maxParkedPerNamespace = 64
	maxParkedCalls        = 1024
)

// kindInputRoundLost: a call answering a round of a parked call that is
// not here (another replica's, ended, or already answered).
const kindInputRoundLost mcp.Kind = "InputRoundLost"

// kindInputNotAnswered is the after record of a parked call whose caller
// never came back with an answer.
const kindInputNotAnswered = "InputNotAnswered"

var errNotAsked = errors.New("the caller could not be asked")

// parkedCalls are the rounds of parked calls waiting on this replica, by
// the key their state names.
type parkedCalls struct {
	mu          sync.Mutex
	m           map[string]*parkedCall
	byCaller    map[string]int
	byNamespace map[string]int
}

// parkedCall is one call made on its own goroutine for a 2026-07-28
// caller.
type parkedCall struct {
	g                 *Gateway
	id                string
	caller, namespace string
	deadline          time.Time
	cancel            context.CancelFunc

	// progress is where the server's progress goes: the waiting call's
	// relay, nil while nobody waits. It is called, and changed, under
	// progMu, so that nothing is written to a request that has ended.
	progMu   sync.Mutex
	progress func(mcp.Progress)

	mu sync.Mutex
	// round counts the rounds asked; key names the one parked now ("" when
	// none is): the id and the round's number, so that each round's state
	// answers that round only.
	round int
	key   string
	// waiter is the channel of the call waiting for what comes next; nil
	// while the call is parked or its caller went away (abandoned, which
	// records its own end).
	waiter    chan parkEvent
	abandoned bool
	// pending takes the caller's answer while the call is parked.
	pending chan json.RawMessage
	// scope is a copy of the waiting call's scope, taken while it waits:
	// the server's requests are decided, screened and audited with it, and
	// a call nobody waits for any more is recorded with it.
	scope callScope
}

// parkEvent is what a waiting call is handed: a request for input under
// the round's key, or the call's end.
type parkEvent struct {
	ask *parkedAsk
	key string
	out *mcp.CallOutcome
	err error
}

// parkedAsk is a request of the server's, as the screening left it.
type parkedAsk struct {
	method string
	params json.RawMessage
}

// parkResume is what a call answering a parked call's round brings.
type parkResume struct {
	key    string
	answer json.RawMessage
}

// parkedRound is set on the scope of a call that parked: what its round
// asks, under which key, and the call it belongs to.
type parkedRound struct {
	call *parkedCall
	key  string
	ask  parkedAsk
}

// parkable reports whether a 2026-07-28 caller's call of ep is made so
// that it can park: unless the server is known to be of 2026-07-28, which
// sends no request of its own.
func (g *Gateway) parkable(ep mcp.Endpoint) bool {
	return !g.MCP.RemembersModern(ep)
}

// sendParkable makes the call to ep with opts, and options that hand the
// server's requests and progress to the parked call, on a goroutine of
// its own, which ends the call's span; and waits for its first event.
func (g *Gateway) sendParkable(ctx context.Context, c *callScope, ep mcp.Endpoint, span trace.Span, opts []mcp.CallOption) (*mcp.CallOutcome, error) {
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = mcp.DefaultTimeout
	}
	p := &parkedCall{g: g, id: newParkID(), caller: c.rec.Namespace + "/" + c.rec.Caller, namespace: c.rec.Namespace, deadline: g.now().Add(timeout)}
	w := make(chan parkEvent, 1)
	relay := progressOf(ctx)
	p.wait(ctx, c, w)
	// The call outlives this request when it parks: its context keeps the
	// request's values (its span, its caller) and ends with the call.
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	// The goroutine's own options: the caller's slice stays its own (and
	// on its stack).
	own := make([]mcp.CallOption, 0, len(opts)+3)
	own = append(own, opts...)
	go func() {
		defer cancel()
		var info mcp.CallInfo
		own = append(own, mcp.WithInteraction(p), mcp.WithCallInfo(&info))
		if relay != nil {
			// Progress was asked for: it goes to whichever call waits.
			own = append(own, mcp.WithProgress(p.relayProgress))
		}
		out, err := g.MCP.CallTool(callCtx, ep, c.tool.Spec.RemoteName, c.args, own...)
		endUpstream(span, &info, out, err)
		p.finish(out, err)
	}()
	return p.await(ctx, c, w)
}

// wait makes c's call, waiting on w, the one the parked call's next event
// goes to.
func (p *parkedCall) wait(ctx context.Context, c *callScope, w chan parkEvent) {
	p.mu.Lock()
	p.waiter, p.scope = w, *c
	p.mu.Unlock()
	p.setProgress(progressOf(ctx))
}

func (p *parkedCall) setProgress(f func(mcp.Progress)) {
	p.progMu.Lock()
	p.progress = f
	p.progMu.Unlock()
}

// resumeParked hands the caller's answer to the parked call the round's
// key names and waits for what comes next.
func (g *Gateway) resumeParked(ctx context.Context, c *callScope, key string, answer json.RawMessage) (*mcp.CallOutcome, error) {
	p := g.parked.take(key, c.rec.Namespace+"/"+c.rec.Caller)
	if p == nil {
		return nil, &resultError{kind: kindInputRoundLost}
	}
	p.mu.Lock()
	ans := p.pending
	if ans == nil || p.key != key {
		// The server's wait ended as the caller came back.
		p.mu.Unlock()
		return nil, &resultError{kind: kindInputRoundLost}
	}
	p.pending, p.key = nil, ""
	p.mu.Unlock()
	w := make(chan parkEvent, 1)
	p.wait(ctx, c, w)
	ans <- answer
	return p.await(ctx, c, w)
}

// await waits for the parked call's next event: a request for input,
// which the record stage hands the caller as a round (c.parked), or the
// call's end. A caller that goes away cancels the call.
func (p *parkedCall) await(ctx context.Context, c *callScope, w chan parkEvent) (*mcp.CallOutcome, error) {
	select {
	case ev := <-w:
		if ev.ask != nil {
			c.parked = &parkedRound{call: p, key: ev.key, ask: *ev.ask}
			return &mcp.CallOutcome{InputRequired: true}, nil
		}
		return ev.out, ev.err
	case <-ctx.Done():
		p.abandon()
		return nil, &mcp.Error{Kind: mcp.KindCancelled, Method: "tools/call", Err: ctx.Err()}
	}
}

// abandon ends the call for a caller that records its end itself: nothing
// more goes to it, and the server's call is cancelled.
func (p *parkedCall) abandon() {
	p.mu.Lock()
	p.waiter, p.abandoned = nil, true
	p.mu.Unlock()
	p.setProgress(nil)
	p.cancel()
}

// Request is the parked call's mcp.Interaction: the server's request is
// decided, screened and audited as in a session (callInteraction), with
// the scope of the call that waits for it now, and asked by parking; with
// no call waiting (its caller went away), it is refused.
func (p *parkedCall) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.RPCError) {
	p.mu.Lock()
	c := p.scope
	waiting := p.waiter != nil
	p.mu.Unlock()
	ci := &callInteraction{g: p.g, c: &c}
	if waiting {
		ci.asker = p
	}
	return ci.Request(ctx, method, params)
}

// room is why a request could not be parked now, "" when it could.
func (p *parkedCall) room() string {
	if !p.g.parked.room(p.caller, p.namespace) {
		return audit.RefusedTooManyWaiting
	}
	return ""
}

// ask is the parked call's agentAsker: it hands the request to the
// waiting call, parks, and waits for the caller's answer until the
// server's operation timeout.
func (p *parkedCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !p.g.now().Before(p.deadline) {
		return nil, errNotAsked
	}
	// The reader reuses its buffers once this returns; the waiting call
	// reads the request after.
	params = bytes.Clone(params)
	ans := make(chan json.RawMessage, 1)
	p.mu.Lock()
	w := p.waiter
	if w == nil {
		p.mu.Unlock()
		return nil, errNotAsked
	}
	p.round++
	key := p.id + "." + strconv.Itoa(p.round)
	if !p.g.parked.add(p, key) {
		p.mu.Unlock()
		return nil, errNotAsked
	}
	p.waiter, p.pending, p.key = nil, ans, key
	p.mu.Unlock()
	p.setProgress(nil)
	w <- parkEvent{ask: &parkedAsk{method: method, params: params}, key: key}
	timer := time.NewTimer(p.deadline.Sub(p.g.now()))
	defer timer.Stop()
	select {
	case a := <-ans:
		return answered(a)
	case <-timer.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	if p.pending == ans {
		// Nobody took the round: the server hears a refusal.
		p.pending, p.key = nil, ""
		p.mu.Unlock()
		p.g.parked.remove(p, key)
		return nil, errNotAsked
	}
	p.mu.Unlock()
	return answered(<-ans)
}

// answered is the caller's answer to a parked request: nil when its call
// did not answer it.
func answered(a json.RawMessage) (json.RawMessage, error) {
	if len(a) == 0 || a[0] != '{' {
		return nil, errNotAsked
	}
	return a, nil
}

// relayProgress passes the server's progress to the call waiting, if any.
func (p *parkedCall) relayProgress(pr mcp.Progress) {
	p.progMu.Lock()
	defer p.progMu.Unlock()
	if p.progress != nil {
		p.progress(pr)
	}
}

// finish hands the call's end to the call waiting for it; with none, the
// call's end is recorded against the last call that waited.
func (p *parkedCall) finish(out *mcp.CallOutcome, err error) {
	p.mu.Lock()
	w, abandoned, c := p.waiter, p.abandoned, p.scope
	p.waiter = nil
	p.mu.Unlock()
	if w != nil {
		w <- parkEvent{out: out, err: err}
		return
	}
	if abandoned {
		return
	}
	rec := c.rec
	rec.Phase, rec.Time, rec.Outcome, rec.ErrorKind = audit.PhaseAfter, p.g.now(), audit.OutcomeFailed, kindInputNotAnswered
	rec.Interaction, rec.InteractionMode, rec.Decision, rec.Reason, rec.InteractionResult = "", "", "", "", ""
	if err := p.g.Audit.Write(context.Background(), rec); err != nil {
		logging.FromContext(context.Background(), logging.Gateway).Error(err, "the audit record of a call nobody came back for could not be written", "tool", c.key.String(), "callID", rec.CallID)
	}
}

// askParked is the record stage's answer to a call that parked: the
// server's request, screened, as a round under the gateway's sealed
// state naming the parked call.
func (g *Gateway) askParked(ctx context.Context, c *callScope) *sdk.CallToolResult {
	pr := c.parked
	var requests sdk.InputRequestMap
	b, err := json.Marshal(map[string]any{parkKey: map[string]any{"method": pr.ask.method, "params": pr.ask.params}})
	if err == nil {
		err = json.Unmarshal(b, &requests)
	}
	if err != nil {
		requests = nil
	}
	s := c.sealFor([]string{parkKey}, "", pr.call.deadline)
	s.Park = pr.key
	result := g.round(ctx, c, requests, s)
	if result.IsError {
		// The caller cannot be asked, and this call's record says how it
		// ended: the server's call is cancelled.
		pr.call.abandon()
	}
	return result
}

func newParkID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// room reports whether a round of caller, in namespace, may park now.
func (ps *parkedCalls) room(caller, namespace string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.m) < maxParkedCalls && ps.byCaller[caller] < maxParkedPerCaller && ps.byNamespace[namespace] < maxParkedPerNamespace
}

// add keeps p's round key, within the bounds.
func (ps *parkedCalls) add(p *parkedCall, key string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.m) >= maxParkedCalls || ps.byCaller[p.caller] >= maxParkedPerCaller || ps.byNamespace[p.namespace] >= maxParkedPerNamespace {
		return false
	}
	if ps.m == nil {
		ps.m, ps.byCaller, ps.byNamespace = map[string]*parkedCall{}, map[string]int{}, map[string]int{}
	}
	ps.m[key] = p
	ps.byCaller[p.caller]++
	ps.byNamespace[p.namespace]++
	metrics.GatewayAgentWaits.WithLabelValues(waitParked).Inc()
	return true
}

// The kinds of GatewayAgentWaits.
const (
	waitParked = "parked"
	waitStream = "stream"
)

// take removes and returns the parked call of caller whose round key is
// key, nil when there is none.
func (ps *parkedCalls) take(key, caller string) *parkedCall {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[key]
	if p == nil || p.caller != caller {
		return nil
	}
	ps.drop(p, key)
	return p
}

func (ps *parkedCalls) remove(p *parkedCall, key string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m[key] == p {
		ps.drop(p, key)
	}
}

func (ps *parkedCalls) drop(p *parkedCall, key string) {
	metrics.GatewayAgentWaits.WithLabelValues(waitParked).Dec()
	delete(ps.m, key)
	if ps.byCaller[p.caller]--; ps.byCaller[p.caller] <= 0 {
		delete(ps.byCaller, p.caller)
	}
	if ps.byNamespace[p.namespace]--; ps.byNamespace[p.namespace] <= 0 {
		delete(ps.byNamespace, p.namespace)
	}
}
