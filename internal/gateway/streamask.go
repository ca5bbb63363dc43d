package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Asking an agent without a session. Without sessions kept here (the
// chart's initialize era) an agent's tools/call is still one HTTP request
// the gateway answers, and the initialize era lets a server send its own
// requests on the event stream of that answer; the client sends its
// answer back in a POST of its own. A server's request the tool's policy
// and the screening allow (callInteraction.Request) is written on the
// call's answer, which becomes an event stream when it is the first thing
// written, under an id of the gateway's; the agent's POST of the
// response with that id, by the same caller, reaching this replica, is
// handed to the call, and answered 202. The call then goes on, and its
// answer is the stream's last event.
//
// The answer must reach the replica whose call waits: on another it finds
// nothing and is left to the SDK, and the call's wait ends, at most after
// maxStreamAskWait, with the server refused. The gateway cannot know
// whether a client without a session declared elicitation or sampling
// (no handshake is kept): a client that did not answers the request with
// an error, and the server hears a refusal.

// maxStreamAskWait bounds a call's wait for its agent's answer.
const maxStreamAskWait = time.Minute

// The bounds of requests waiting for their agents' answers: per caller,
// per namespace, and on one replica.
const (
	maxAsksPerCaller    = 8
	maxAsksPerNamespace = 64
	maxAsks             = 1024
)

// streamAskPrefix opens the ids of the gateway's requests to agents.
const streamAskPrefix = "gw-ask-"

// streamAsker asks the agent of one call without a session, on the call's
// answer stream: s, begun on w when the first request is written.
type streamAsker struct {
	g  *Gateway
	id *authn.Identity
	w  http.ResponseWriter
	s  *eventStream
}

// stream is the call's answer stream when a request was written on it
// (the answer is then written there too), nil otherwise.
func (a *streamAsker) stream() *eventStream {
	if a.s == nil || !a.s.started {
		return nil
	}
	return a.s
}

// pendingAsks are the gateway's requests to agents waiting for an answer
// on this replica, by caller and id.
type pendingAsks struct {
	mu          sync.Mutex
	m           map[askKey]chan json.RawMessage
	byCaller    map[string]int
	byNamespace map[string]int
}

// askKey names a request: its caller (namespace and user name, the
// namespace first, up to the first "/") and its id.
type askKey struct{ caller, id string }

func (k askKey) namespace() string {
	ns, _, _ := strings.Cut(k.caller, "/")
	return ns
}

var errAskRefused = errors.New("the agent answered with an error")

// room is why the agent cannot be asked now, "" when it can.
func (a *streamAsker) room() string {
	if !a.g.asks.room(askKey{caller: a.id.Namespace + "/" + a.id.Username}) {
		return audit.RefusedTooManyWaiting
	}
	return ""
}

func (a *streamAsker) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	k := askKey{caller: a.id.Namespace + "/" + a.id.Username, id: streamAskPrefix + newParkID()}
	reply := make(chan json.RawMessage, 1)
	if !a.g.asks.add(k, reply) {
		return nil, errNotAsked
	}
	defer a.g.asks.remove(k)
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", k.id, method, params})
	if err != nil {
		return nil, err
	}
	if a.s == nil {
		a.s = newEventStream(a.w)
	}
	a.s.message(msg)
	timer := time.NewTimer(maxStreamAskWait)
	defer timer.Stop()
	select {
	case r := <-reply:
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(r, &resp) != nil || resp.Error != nil || len(resp.Result) == 0 || resp.Result[0] != '{' {
			return nil, errAskRefused
		}
		return resp.Result, nil
	case <-timer.C:
		return nil, errNotAsked
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// withStreamAsker is ctx of a call without a session, answered on w,
// whose agent is asked on the answer's stream (s, when the answer is a
// stream already).
func (g *Gateway) withStreamAsker(ctx context.Context, id *authn.Identity, w http.ResponseWriter, s *eventStream) (context.Context, *streamAsker) {
	c := &askerContext{Context: ctx, a: streamAsker{g: g, id: id, w: w, s: s}}
	return c, &c.a
}

// askerContext is a context holding a call's streamAsker: one allocation
// for both, on every call without a session.
type askerContext struct {
	context.Context
	a streamAsker
}

func (c *askerContext) Value(k any) any {
	if _, ok := k.(askerKey); ok {
		return agentAsker(&c.a)
	}
	return c.Context.Value(k)
}

// serveReply takes a POST of a JSON-RPC response to one of the gateway's
// requests of an agent without a session, by that agent, to this
// replica, and answers 202; it reports whether it did.
func (g *Gateway) serveReply(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !g.Stateless || !plainHTTP(r) {
		return false
	}
	id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context()))
	if id == nil {
		return false
	}
	var top mcp.Members
	if mcp.ReadMembers(body, &top) != nil || string(top.Get("jsonrpc")) != `"2.0"` || top.Get("method") != nil ||
		top.Len() != 3 || (top.Get("result") == nil) == (top.Get("error") == nil) {
		return false
	}
	reqID, ok := plainString(top.Get("id"))
	if !ok || !strings.HasPrefix(reqID, streamAskPrefix) {
		return false
	}
	reply := g.asks.take(askKey{caller: id.Namespace + "/" + id.Username, id: reqID})
	if reply == nil {
		return false
	}
	reply <- append(json.RawMessage(nil), body...)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
	return true
}

// room reports whether a request of k's caller may wait now.
func (p *pendingAsks) room(k askKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m) < maxAsks && p.byCaller[k.caller] < maxAsksPerCaller && p.byNamespace[k.namespace()] < maxAsksPerNamespace
}

func (p *pendingAsks) add(k askKey, reply chan json.RawMessage) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= maxAsks || p.byCaller[k.caller] >= maxAsksPerCaller || p.byNamespace[k.namespace()] >= maxAsksPerNamespace {
		return false
	}
	if p.m == nil {
		p.m, p.byCaller, p.byNamespace = map[askKey]chan json.RawMessage{}, map[string]int{}, map[string]int{}
	}
	p.m[k] = reply
	p.byCaller[k.caller]++
	p.byNamespace[k.namespace()]++
	metrics.GatewayAgentWaits.WithLabelValues(waitStream).Inc()
	return true
}

// take removes and returns the reply channel of k; nil when none waits.
func (p *pendingAsks) take(k askKey) chan json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	reply, ok := p.m[k]
	if ok {
		p.drop(k)
	}
	return reply
}

func (p *pendingAsks) remove(k askKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[k]; ok {
		p.drop(k)
	}
}

func (p *pendingAsks) drop(k askKey) {
	metrics.GatewayAgentWaits.WithLabelValues(waitStream).Dec()
	delete(p.m, k)
	if p.byCaller[k.caller]--; p.byCaller[k.caller] <= 0 {
		delete(p.byCaller, k.caller)
	}
	ns := k.namespace()
	if p.byNamespace[ns]--; p.byNamespace[ns] <= 0 {
		delete(p.byNamespace, ns)
	}
}
