package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// What the upstream sends during a call, relayed to the agent that made
// the call and to no one else (docs/adr/064-interaction-relayed-under-policy.md).
//
// Progress: an agent that puts a progressToken in a tools/call's _meta is
// sent the upstream's progress of that call, under its own token, on the
// call's own answer, an event stream. The upstream is asked for progress
// under a token of the gateway's client, new per call (the agent's token
// never leaves the gateway), and only notifications on the call's own
// response stream bearing that token are relayed, their numbers only: the
// server's message is text nothing screened, and is left out. The call
// goes through the same stages as every other call (callThrough), whether
// the front door reads it (a call without sessions kept here: the chart's
// initialize era, and 2026-07-28) or the SDK does (a session kept in this
// process, whose stream the SDK writes).

// progressRelay passes one call's progress to its agent: each
// notification encoded into one buffer reused for the next, so relaying
// holds nothing that grows with their number.
type progressRelay struct {
	// token is the agent's progressToken as it sent it (a JSON string or
	// integer).
	token []byte
	write func(msg []byte)
	buf   []byte
}

func (p *progressRelay) progress(pr mcp.Progress) {
	b := append(p.buf[:0], `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	b = append(b, p.token...)
	b = append(b, `,"progress":`...)
	b = append(b, pr.Progress...)
	if pr.Total != nil {
		b = append(b, `,"total":`...)
		b = append(b, pr.Total...)
	}
	b = append(b, `}}`...)
	p.buf = b
	p.write(b)
}

type progressKey struct{}

// progressOf is the function the send stage hands the call's progress
// to; nil when the agent asked for none.
func progressOf(ctx context.Context) func(mcp.Progress) {
	f, _ := ctx.Value(progressKey{}).(func(mcp.Progress))
	return f
}

func withProgress(ctx context.Context, f func(mcp.Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// sessionRelay binds a call the SDK serves to its caller: a 2026-07-28
// call to the caller's answers of an input-required round, if any; a call
// in a session kept in this process to that session: its progress is relayed there, on the call's
// stream, under the agent's token (when the agent gave one), and its
// server's requests are asked of the agent there (interaction.go). A call
// without a session to write to (the SDK's stateless answers are one JSON
// body) gets neither.
func (g *Gateway) sessionRelay(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	if req.ProtocolVersion() >= modernProtocol {
		// A 2026-07-28 caller answers a server's request for input by
		// calling again (interaction.go).
		round := agentRound{state: req.Params.RequestState}
		if req.Params.InputResponses != nil {
			round.responses, _ = json.Marshal(req.Params.InputResponses)
		}
		return context.WithValue(ctx, roundKey{}, round)
	}
	if req.Session == nil || g.Stateless {
		return ctx
	}
	ctx = context.WithValue(ctx, askerKey{}, agentAsker(sessionAsker{req.Session}))
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return ctx
	}
	return withProgress(ctx, func(pr mcp.Progress) {
		p := &sdk.ProgressNotificationParams{ProgressToken: tok}
		p.Progress, _ = strconv.ParseFloat(string(pr.Progress), 64)
		if pr.Total != nil {
			p.Total, _ = strconv.ParseFloat(string(pr.Total), 64)
		}
		_ = req.Session.NotifyProgress(ctx, p)
	})
}

// serveRelayedCall answers a tools/call that asks for progress, of the
// 2026-07-28 revision or of the initialize era without sessions kept
// here, as an event stream: the call's progress, then its answer. It
// reports whether it did; when it did not, nothing was decided, counted or
// audited, and the SDK serves the call.
func (g *Gateway) serveRelayedCall(ctx context.Context, w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity) bool {
	modern := m.era >= modernProtocol
	if m.notification() || (modern && (m.era != modernProtocol || r.Header.Get("Mcp-Method") != "tools/call")) {
		return false
	}
	call, ok := progressCallRequest(m.params, modern)
	if !ok || (modern && r.Header.Get("Mcp-Name") != call.name) {
		return false
	}
	req := &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Meta: call.meta, Name: call.name, Arguments: call.args},
		Extra:  &sdk.RequestExtra{TokenInfo: info, Header: r.Header},
	}
	pre, refused, ok := g.decideFront(ctx, id, req)
	if !ok {
		return false
	}
	if modern && pre != nil {
		if schema := pre.offer.tool.Status.InputSchema; schema != nil && bytes.Contains(schema.Raw, []byte(xMCPHeader)) {
			// The SDK checks the Mcp-Param headers of such a tool.
			return false
		}
	}
	s := newEventStream(w)
	relay := &progressRelay{token: call.token, write: s.message}
	ctx = withProgress(ctx, relay.progress)
	if !modern {
		// The agent may be asked on the stream too (streamask.go).
		ctx, _ = g.withStreamAsker(ctx, id, w, s)
	}
	res, err := g.callThrough(ctx, req, pre, refused)
	var msg []byte
	if modern {
		msg, ok = g.callResult(res, err)
	} else {
		msg, ok = eraCallResult(resultForEra(res, m.era), err)
	}
	s.response(m.id, msg, ok)
	g.budgets.Charge(id, s.n)
	g.eraAnswers.Add(1)
	return true
}

// progressCall is a tools/call asking for progress, as the front door
// reads it.
type progressCall struct {
	name  string
	args  json.RawMessage
	meta  sdk.Meta
	token []byte
}

// progressCallRequest reads the params of a tools/call that asks for
// progress: the tool's name, optionally its arguments, and _meta holding
// a progressToken (a string, or an integer the SDK writes back as sent)
// and, in 2026-07-28, the revision's own members, each named once.
func progressCallRequest(raw json.RawMessage, modern bool) (progressCall, bool) {
	var c progressCall
	params, err := mcp.ObjectMembers(raw)
	if err != nil || params["_meta"] == nil || json.Unmarshal(params["name"], &c.name) != nil || !toolname.ValidLocalName(c.name) {
		return c, false
	}
	for k := range params {
		if k != "name" && k != "arguments" && k != "_meta" {
			return c, false
		}
	}
	meta, err := mcp.ObjectMembers(params["_meta"])
	if err != nil || !simpleID(meta["progressToken"]) {
		return c, false
	}
	c.token, c.args = meta["progressToken"], params["arguments"]
	c.meta = make(sdk.Meta, len(meta))
	for k, v := range meta {
		switch {
		case k == "progressToken":
		case modern && k == sdk.MetaKeyProtocolVersion:
			if string(v) != `"`+modernProtocol+`"` {
				return c, false
			}
			c.meta[k] = modernProtocol
		case modern && (k == sdk.MetaKeyClientCapabilities || k == sdk.MetaKeyClientInfo):
			if v[0] != '{' {
				return c, false
			}
			c.meta[k] = v
		case modern && (k == "traceparent" || k == "tracestate"):
			var s string
			if json.Unmarshal(v, &s) != nil {
				return c, false
			}
			c.meta[k] = s
		default:
			return c, false
		}
	}
	if modern && (c.meta[sdk.MetaKeyProtocolVersion] == nil || c.meta[sdk.MetaKeyClientCapabilities] == nil || c.meta[sdk.MetaKeyClientInfo] == nil) {
		return c, false
	}
	return c, true
}

// eventStream is a call's answer written as Server-Sent Events, as the
// SDK writes a POST's stream: each message one event, flushed, the answer
// last.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	// n counts the bytes written, charged to the caller's budget.
	n int
}

func newEventStream(w http.ResponseWriter) *eventStream {
	return &eventStream{w: w, rc: http.NewResponseController(w)}
}

// message writes one JSON-RPC message (compact JSON, so one line) as an
// event.
func (s *eventStream) message(msg []byte) {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache, no-transform")
		s.w.WriteHeader(http.StatusOK)
	}
	for _, part := range [...][]byte{eventPrefix, msg, eventSuffix} {
		n, _ := s.w.Write(part)
		s.n += n
	}
	_ = s.rc.Flush()
}

var (
	eventPrefix = []byte("event: message\ndata: ")
	eventSuffix = []byte("\n\n")
)

// response writes the answer to the request id: msg is its result, or,
// when ok is false, its error.
func (s *eventStream) response(id json.RawMessage, msg []byte, ok bool) {
	member := `,"result":`
	if !ok {
		member = `,"error":`
	}
	b := make([]byte, 0, len(`{"jsonrpc":"2.0","id":`)+len(id)+len(member)+len(msg)+1)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, member...)
	b = append(b, msg...)
	b = append(b, '}')
	s.message(b)
}
