package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
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

// parkStatePrefix marks the server state a sealed round carries when the
// round is a parked call's.
const parkStatePrefix = "park."

// parkKey is the key of a parked call's request in the round.
const parkKey = "input"

// The bounds of parked calls: per caller, and on one replica.
const (
	maxParkedPerCaller = 8
	maxParkedCalls     = 1024
)

// kindInputRoundLost: a call answering a round of a parked call that is
// not here (another replica's, ended, or already answered).
const kindInputRoundLost mcp.Kind = "InputRoundLost"

// kindInputNotAnswered is the after record of a parked call whose caller
// never came back with an answer.
const kindInputNotAnswered = "InputNotAnswered"

var errNotAsked = errors.New("the caller could not be asked")

// parkedCalls are the calls parked on this replica, by id.
type parkedCalls struct {
	mu       sync.Mutex
	m        map[string]*parkedCall
	byCaller map[string]int
}

// parkedCall is one call made on its own goroutine for a 2026-07-28
// caller.
type parkedCall struct {
	g        *Gateway
	id       string
	caller   string
	deadline time.Time
	cancel   context.CancelFunc
	// progress is where the server's progress goes: the waiting call's
	// relay, nil while nobody waits.
	progress atomic.Pointer[func(mcp.Progress)]

	mu sync.Mutex
	// waiter is the channel of the call waiting for what comes next; nil
	// while the call is parked.
	waiter chan parkEvent
	// pending takes the caller's answer while the call is parked.
	pending chan json.RawMessage
	// scope is the last waiting call's, for the record of a call nobody
	// waits for any more; abandoned is set when that call went away (it
	// records its own end).
	scope     *callScope
	abandoned bool
	// rec and tool are the last waiting call's record and tool, read when
	// it waited, for the record of a call nobody waits for any more.
	rec  audit.Record
	tool string
}

// parkEvent is what a waiting call is handed: a request for input, or
// the call's end.
type parkEvent struct {
	ask *parkedAsk
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
	id     string
	answer json.RawMessage
}

// parkedRound is set on the scope of a call that parked: what its round
// asks, and the call it belongs to.
type parkedRound struct {
	call *parkedCall
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
	p := &parkedCall{g: g, id: newParkID(), caller: c.rec.Namespace + "/" + c.rec.Caller, deadline: g.now().Add(timeout)}
	if f := progressOf(ctx); f != nil {
		p.progress.Store(&f)
	}
	w := make(chan parkEvent, 1)
	p.waiter, p.scope = w, c
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
		own = append(own, mcp.WithInteraction(p), mcp.WithProgress(p.relayProgress), mcp.WithCallInfo(&info))
		out, err := g.MCP.CallTool(callCtx, ep, c.tool.Spec.RemoteName, c.args, own...)
		endUpstream(span, &info, out, err)
		p.finish(out, err)
	}()
	return p.await(ctx, c, w)
}

// resumeParked hands the caller's answer to the parked call its round's
// state names and waits for what comes next.
func (g *Gateway) resumeParked(ctx context.Context, c *callScope, id string, answer json.RawMessage) (*mcp.CallOutcome, error) {
	p := g.parked.take(id, c.rec.Namespace+"/"+c.rec.Caller)
	if p == nil {
		return nil, &resultError{kind: kindInputRoundLost}
	}
	p.mu.Lock()
	ans := p.pending
	if ans == nil {
		// The server's wait ended as the caller came back.
		p.mu.Unlock()
		return nil, &resultError{kind: kindInputRoundLost}
	}
	w := make(chan parkEvent, 1)
	p.pending, p.waiter, p.scope = nil, w, c
	p.mu.Unlock()
	if f := progressOf(ctx); f != nil {
		p.progress.Store(&f)
	}
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
			c.parked = &parkedRound{call: p, ask: *ev.ask}
			return &mcp.CallOutcome{InputRequired: true}, nil
		}
		return ev.out, ev.err
	case <-ctx.Done():
		p.mu.Lock()
		p.waiter, p.abandoned = nil, true
		p.mu.Unlock()
		p.cancel()
		return nil, &mcp.Error{Kind: mcp.KindCancelled, Method: "tools/call", Err: ctx.Err()}
	}
}

// ask is the parked call's agentAsker: it hands the request to the
// waiting call, parks, and waits for the caller's answer until the
// server's operation timeout.
func (p *parkedCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ans := make(chan json.RawMessage, 1)
	p.mu.Lock()
	w := p.waiter
	if w == nil || !p.g.parked.add(p) {
		p.mu.Unlock()
		return nil, errNotAsked
	}
	p.waiter, p.pending = nil, ans
	// Read while the call that waited still waits: it writes its record
	// once it is handed the request.
	p.rec, p.tool = p.scope.rec, p.scope.key.String()
	p.mu.Unlock()
	p.progress.Store(nil)
	w <- parkEvent{ask: &parkedAsk{method: method, params: params}}
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
		p.pending = nil
		p.mu.Unlock()
		p.g.parked.remove(p)
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
	if f := p.progress.Load(); f != nil {
		(*f)(pr)
	}
}

// finish hands the call's end to the call waiting for it; with none, the
// call's end is recorded against the last call that waited.
func (p *parkedCall) finish(out *mcp.CallOutcome, err error) {
	p.g.parked.remove(p)
	p.mu.Lock()
	w, abandoned, rec, tool := p.waiter, p.abandoned, p.rec, p.tool
	p.waiter = nil
	p.mu.Unlock()
	if w != nil {
		w <- parkEvent{out: out, err: err}
		return
	}
	if abandoned {
		return
	}
	rec.Phase, rec.Time, rec.Outcome, rec.ErrorKind = audit.PhaseAfter, p.g.now(), audit.OutcomeFailed, kindInputNotAnswered
	rec.Interaction, rec.InteractionMode, rec.Decision, rec.Reason, rec.InteractionResult = "", "", "", "", ""
	if err := p.g.Audit.Write(context.Background(), rec); err != nil {
		logging.FromContext(context.Background(), logging.Gateway).Error(err, "the audit record of a call nobody came back for could not be written", "tool", tool, "callID", rec.CallID)
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
	result := g.round(ctx, c, requests, g.sealFor(c, []string{parkKey}, parkStatePrefix+pr.call.id, pr.call.deadline))
	if result.IsError {
		// The caller cannot be asked: the server's wait ends.
		pr.call.cancel()
	}
	return result
}

// parkedID is the parked call a sealed round's server state names, if it
// does.
func parkedID(state string) (string, bool) {
	return strings.CutPrefix(state, parkStatePrefix)
}

func newParkID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// add keeps p, parked, under its id, within the bounds.
func (ps *parkedCalls) add(p *parkedCall) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.m[p.id]; ok {
		return true
	}
	if len(ps.m) >= maxParkedCalls || ps.byCaller[p.caller] >= maxParkedPerCaller {
		return false
	}
	if ps.m == nil {
		ps.m, ps.byCaller = map[string]*parkedCall{}, map[string]int{}
	}
	ps.m[p.id] = p
	ps.byCaller[p.caller]++
	metrics.GatewayAgentWaits.WithLabelValues(waitParked).Inc()
	return true
}

// The kinds of GatewayAgentWaits.
const (
	waitParked = "parked"
	waitStream = "stream"
)

// take removes and returns the parked call id of caller, nil when there
// is none.
func (ps *parkedCalls) take(id, caller string) *parkedCall {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[id]
	if p == nil || p.caller != caller {
		return nil
	}
	ps.drop(p)
	return p
}

func (ps *parkedCalls) remove(p *parkedCall) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m[p.id] == p {
		ps.drop(p)
	}
}

func (ps *parkedCalls) drop(p *parkedCall) {
	metrics.GatewayAgentWaits.WithLabelValues(waitParked).Dec()
	delete(ps.m, p.id)
	if ps.byCaller[p.caller]--; ps.byCaller[p.caller] <= 0 {
		delete(ps.byCaller, p.caller)
	}
}

// Request is the parked call's mcp.Interaction: the server's request is
// decided, screened and audited as in a session (callInteraction), with
// the scope of the call that waits for it now, and asked by parking.
func (p *parkedCall) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.RPCError) {
	p.mu.Lock()
	c := p.scope
	p.mu.Unlock()
	return (&callInteraction{g: p.g, c: c, asker: p}).Request(ctx, method, params)
}
