package gateway

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// Cancellation of a call, relayed upstream
// (docs/adr/064-interaction-relayed-under-policy.md). A call's context
// ends when its agent cancels it, and the MCP client then cancels the
// upstream's request as its revision says: it drops the request (which in
// 2026-07-28 is the cancellation) and, in a session of the initialize
// era, sends notifications/cancelled. An agent cancels:
//
//   - by closing the call's stream (its request's context ends), in every
//     era;
//   - in a session kept in this process, with notifications/cancelled,
//     which the go-sdk's session applies to the call's context;
//   - without sessions kept here (the chart's initialize era), with
//     notifications/cancelled naming the request id of a call it has in
//     flight on this replica: the calls the front door serves are kept
//     here by caller and id until they end. Only the caller that made a
//     call can cancel it. A notification that reaches another replica
//     finds nothing there and is ignored, as the specification lets a
//     receiver ignore one: the call runs to its end, and its answer goes
//     to a client that no longer waits for it.

// inflightCalls are the calls the front door serves in the initialize era
// without sessions, by caller and request id, each with the function
// that cancels it.
type inflightCalls struct {
	mu sync.Mutex
	m  map[inflightKey]*inflightCall
}

// inflightKey names a call: the caller's identity (user name and the
// namespace it calls in) and the JSON-RPC id as it sent it.
type inflightKey struct {
	caller, namespace, id string
}

type inflightCall struct {
	cancel context.CancelFunc
	// shared is set when the caller has two calls in flight under one id
	// (two clients of one ServiceAccount): a cancellation could mean
	// either, so it cancels neither.
	shared bool
	n      int
}

// track keeps the call m of caller id until done is called, and returns
// the call's context, a child of parent that cancel ends. The context is
// passed down, not put in a copy of the request.
func (c *inflightCalls) track(parent context.Context, id *authn.Identity, m *message) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	k := inflightKey{caller: id.Username, namespace: id.Namespace, id: string(m.id)}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[inflightKey]*inflightCall)
	}
	e := c.m[k]
	if e == nil {
		e = &inflightCall{cancel: cancel}
		c.m[k] = e
	} else {
		e.shared = true
	}
	e.n++
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		if e.n--; e.n == 0 {
			delete(c.m, k)
		}
		c.mu.Unlock()
		cancel()
	}
}

// cancel cancels the call of caller id whose request id is requestID (as
// sent), if exactly one is in flight here; it reports whether it did.
func (c *inflightCalls) cancel(id *authn.Identity, requestID json.RawMessage) bool {
	k := inflightKey{caller: id.Username, namespace: id.Namespace, id: string(requestID)}
	c.mu.Lock()
	e := c.m[k]
	ok := e != nil && !e.shared
	c.mu.Unlock()
	if ok {
		e.cancel()
	}
	return ok
}

// cancelled applies a notifications/cancelled of the initialize era
// without sessions kept here to the caller's call it names.
func (g *Gateway) cancelled(id *authn.Identity, m *message) {
	p, err := mcp.ObjectMembers(m.params)
	if err != nil || !simpleID(p["requestId"]) {
		return
	}
	g.calls.cancel(id, p["requestId"])
}
