package mcp

import (
	"context"
	"encoding/json"
)

// What a server sends during an operation beside the answer it owes: in
// the initialize era, notifications and requests of its own on the
// response's event stream (progress, elicitation, sampling). This client
// declares the elicitation (form and URL) and sampling capabilities to
// every server, so that a server which offers some tools only to clients
// declaring them lists those too: the catalog imported is the one agents
// are offered (docs/adr/064-interaction-relayed-under-policy.md). It never
// grants such a request by itself: a server's request on a stream is
// answered with a refusal (an elicitation declined, anything else an
// error), unless the caller of a CallTool relays it (WithInteraction).

// clientCapabilities is what this client declares, in the initialize
// request's capabilities and in 2026-07-28 request metadata alike.
var clientCapabilities = map[string]any{
	"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
	"sampling":    map[string]any{},
}

// maxServerRequests bounds the requests of its own a server has answered
// within one operation; past it they are ignored, so that a server cannot
// turn one call into any number of requests from this client.
const maxServerRequests = 16

// The methods of the requests a server may send a client.
const (
	MethodElicit = "elicitation/create"
	MethodSample = "sampling/createMessage"
)

// JSON-RPC error codes this client answers a server's request with.
const (
	// codeUserRejected is what the specification has a client answer a
	// sampling request it refuses with.
	codeUserRejected   = -1
	codeMethodNotFound = -32601
)

// methodReply names the leg that carries this client's answer to a
// server's request.
const methodReply = "reply"

// answerServerRequest answers a server's request read on a stream of a
// legacy operation (m, whose tape the caller releases): with what the
// caller's interaction gives, or a refusal. Only a legacy server sends
// requests on a stream; a 2026-07-28 one asks for input in its result.
func (o *operation) answerServerRequest(ctx context.Context, m *message) {
	t := m.tape
	if o.era != eraLegacy || o.serverRequests >= maxServerRequests {
		return
	}
	if k := t.e[m.idAt].kind; k != kString && k != kNumber {
		return
	}
	o.serverRequests++
	id := t.raw(m.idAt)
	method, _ := t.stringAt(m.methodAt)
	var result json.RawMessage
	var rerr *RPCError
	switch method {
	case "ping":
		result = json.RawMessage(`{}`)
	case MethodElicit, MethodSample:
		if o.interaction != nil {
			var params json.RawMessage
			if m.paramsAt >= 0 {
				params = t.raw(m.paramsAt)
			}
			result, rerr = o.interaction.Request(ctx, method, params)
		} else {
			result, rerr = refusal(method)
		}
	default:
		rerr = &RPCError{Code: codeMethodNotFound, Message: "Method not found"}
	}
	reply := make([]byte, 0, 64+len(id)+len(result))
	reply = append(reply, `{"jsonrpc":"2.0","id":`...)
	reply = append(reply, id...)
	if rerr != nil {
		e, _ := json.Marshal(rerr)
		reply = append(reply, `,"error":`...)
		reply = append(reply, e...)
	} else {
		reply = append(reply, `,"result":`...)
		reply = append(reply, result...)
	}
	reply = append(reply, '}')
	_, _ = o.exchange(ctx, leg{method: methodReply, notify: true, version: o.version, body: reply})
}

// refusal is this client's own answer to an elicitation or sampling
// request: declined, or refused as a person would refuse it.
func refusal(method string) (json.RawMessage, *RPCError) {
	if method == MethodElicit {
		return json.RawMessage(`{"action":"decline"}`), nil
	}
	return nil, &RPCError{Code: codeUserRejected, Message: "the client does not grant this request"}
}

// RPCError is a JSON-RPC error object this client sends a server in
// answer to its request.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Interaction is what the caller of a CallTool does with what the server
// sends during the call beside its answer. Its methods are called on the
// goroutine reading the answer, one at a time.
type Interaction interface {
	// Request answers the server's request of method (MethodElicit or
	// MethodSample) with params as sent (untrusted): a result, or an
	// error. The call's answer is not read until it returns.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *RPCError)
}

// WithInteraction has CallTool hand what the server sends during the call
// to in, rather than refusing it.
func WithInteraction(in Interaction) CallOption {
	return func(o *callOptions) { o.interaction = in }
}

// Progress is one progress notification of a call: its numbers as the
// server wrote them (each checked to be a JSON number; Total nil when the
// server sent none). The slices are valid only during the call of the
// function given to WithProgress; the server's message is not passed on.
type Progress struct {
	Progress, Total []byte
}

// WithProgress asks the server for progress of the call (a progress token
// of this client's own, never the caller's, in the request's _meta) and
// hands each notification of it to fn, on the goroutine reading the
// answer, in the order the server sent them. A notification for another
// token, or malformed, is skipped.
func WithProgress(fn func(Progress)) CallOption {
	return func(o *callOptions) { o.progress = fn }
}

// methodProgress is the progress notification's method.
const methodProgress = "notifications/progress"

// notified reads a notification on a stream of the operation (m, whose
// tape the caller releases): progress of the call goes to the caller that
// asked for it; anything else is skipped.
func (o *operation) notified(m *message) {
	t := m.tape
	if o.progress == nil || m.paramsAt < 0 || t.e[m.paramsAt].kind != kObject || !t.stringIs(m.methodAt, methodProgress) {
		return
	}
	if tok := t.member(m.paramsAt, "progressToken"); tok < 0 || !t.stringIs(tok, o.progressToken) {
		return
	}
	p := t.member(m.paramsAt, "progress")
	if p < 0 || t.e[p].kind != kNumber {
		return
	}
	var total []byte
	if n := t.member(m.paramsAt, "total"); n >= 0 {
		if t.e[n].kind != kNumber {
			return
		}
		total = t.raw(n)
	}
	o.progress(Progress{Progress: t.raw(p), Total: total})
}

// WithInputRounds has CallTool take part in a 2026-07-28 server's
// input-required rounds for its caller: the server's input_required
// result is returned as an outcome (CallOutcome.InputRequired, the result
// as sent in CallOutcome.Result) rather than failing the call, and
// responses and state, from the caller's answer to the previous round
// (nil and "" for a first call), are sent with the call as its
// inputResponses and requestState. A server of the initialize era is
// called as without it.
func WithInputRounds(responses json.RawMessage, state string) CallOption {
	return func(o *callOptions) { o.rounds = &inputRound{responses: responses, state: state} }
}

type inputRound struct {
	responses json.RawMessage
	state     string
}
