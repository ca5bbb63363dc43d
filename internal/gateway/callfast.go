package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// A tools/call of the 2026-07-28 revision is read and answered here when
// it has the one plain shape most calls have, and goes through the same
// stages as every other call (g.call): the same decision, rules, audit and
// upstream call. What is left out is the SDK's server machinery around
// them, which for one small message decoded the request several times
// into fresh 32 KiB buffers, built a connection and a session per request,
// and decided the tool twice (docs/adr/037-gateway-call-path.md). A call
// with a progress token is answered as an event stream (relay.go).
// Anything else (another revision, an answer to an input request, a tool
// whose arguments travel in headers too, a call that needs an approval, a
// tool the caller may not see, a request the SDK would refuse) is served
// by the SDK as before. TestFastCallMatchesTheSDK proves the two answer
// the same bytes.

// serveCall answers r, a tools/call of the 2026-07-28 revision, and
// reports whether it did; when it did not, nothing was decided, counted or
// audited for it, and the SDK serves it.
func (g *Gateway) serveCall(w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity) bool {
	name := r.Header.Get("Mcp-Name")
	if g.noFastCall.Load() || m.era != modernProtocol || r.Header.Get("Mcp-Method") != "tools/call" || !toolname.ValidLocalName(name) {
		return false
	}
	call, ok := plainCallRequest(m.body, name)
	if !ok {
		return false
	}
	// The SDK's path serves the call with a server offering the tool when
	// the caller may see it; here the call is only taken when it may be
	// made without a question for anyone.
	req := &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Meta: call.meta, Name: name, Arguments: call.args},
		Extra:  &sdk.RequestExtra{TokenInfo: info, Header: r.Header},
	}
	pre, refused, ok := g.decideFront(r.Context(), id, req)
	if !ok {
		return false
	}
	if pre != nil {
		if schema := pre.offer.tool.Status.InputSchema; schema != nil && bytes.Contains(schema.Raw, []byte(xMCPHeader)) {
			// The SDK checks the Mcp-Param headers of such a tool.
			return false
		}
	}
	// The stages tell a 2026-07-28 caller (which may take part in a
	// server's input-required rounds) by its message.
	ctx := context.WithValue(r.Context(), messageKey{}, m)
	res, err := g.callThrough(ctx, req, pre, refused)
	g.budgets.Charge(id, g.writeCallAnswer(w, call.id, res, err))
	g.fastCalls.Add(1)
	return true
}

// serveEraCall answers a tools/call of the initialize era of the plain
// shape agents send (the tool's name and its arguments, nothing else),
// when it may be made without a question for anyone; it reports whether
// it did.
func (g *Gateway) serveEraCall(ctx context.Context, w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity) bool {
	if m.notification() || m.params == nil {
		return false
	}
	var p mcp.Members
	if mcp.ReadMembers(m.params, &p) != nil || p.Get("name") == nil || p.Len() > 2 || (p.Len() == 2 && p.Get("arguments") == nil) {
		return false
	}
	name, ok := plainString(p.Get("name"))
	if !ok && json.Unmarshal(p.Get("name"), &name) != nil || !toolname.ValidLocalName(name) {
		return false
	}
	req := &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Name: name, Arguments: p.Get("arguments")},
		Extra:  &sdk.RequestExtra{TokenInfo: info, Header: r.Header},
	}
	pre, refused, ok := g.decideFront(ctx, id, req)
	if !ok {
		return false
	}
	// The agent may be asked on the answer's stream (streamask.go).
	ctx, asker := g.withStreamAsker(ctx, id, w, nil)
	res, err := g.callThrough(ctx, req, pre, refused)
	res = resultForEra(res, m.era)
	if s := asker.stream(); s != nil {
		// It was: the answer is the stream's last event.
		msg, ok := eraCallResult(res, err)
		s.response(m.id, msg, ok)
		g.budgets.Charge(id, s.n)
	} else if pieces, typed := g.typedAnswer(res, false); err == nil && typed {
		// A result carrying an image is written around it (resultraw.go).
		g.budgets.Charge(id, writeAnswer(w, m.id, pieces))
	} else {
		msg, ok := eraCallResult(res, err)
		g.budgets.Charge(id, writeResponse(w, m.id, msg, ok))
	}
	g.eraAnswers.Add(1)
	return true
}

// decideFront decides, once, a call the front door read: the decision
// when the caller may see the tool; refused when it may not (the call is
// refused, with its reason, without its arguments decoded). ok is false
// when the gateway's own code does not take the call: the decision failed
// (the SDK's path answers that it could not decide) or the call needs a
// question for someone (an approval).
func (g *Gateway) decideFront(ctx context.Context, id *authn.Identity, req *sdk.CallToolRequest) (pre *decided, refused, ok bool) {
	pre, err := g.decideVisible(ctx, id, req.Params.Name)
	switch {
	case errors.Is(err, ErrOwnerNotServed):
		return nil, true, true
	case err != nil:
		return nil, false, false
	case pre == nil:
		return nil, true, true
	case pre.v.approval, g.writeDownAsks(id, pre):
		return nil, false, false
	}
	return pre, false, true
}

// callThrough makes a call the front door decided through the stages
// (pre), or refuses it (refused), observed as every call is.
func (g *Gateway) callThrough(ctx context.Context, req *sdk.CallToolRequest, pre *decided, refused bool) (*sdk.CallToolResult, error) {
	ctx, obs := g.startCall(ctx, req)
	var res *sdk.CallToolResult
	var err error
	if refused {
		res = g.refuseUnoffered(ctx, req)
	} else {
		res, err = g.callDecided(ctx, req, pre.offer.ref(), pre)
	}
	g.endCall(obs, err)
	return res, err
}

// plainCall is a tools/call request of the plain shape.
type plainCall struct {
	id   json.RawMessage
	args json.RawMessage
	meta sdk.Meta
}

// plainCallRequest reads body as a tools/call of the plain shape for the
// tool the Mcp-Name header names: JSON-RPC 2.0, a simple id, and params
// holding the tool's name (as in the header), optionally its arguments,
// and the revision's _meta (its version, the client's capabilities and
// name, and optionally the W3C trace context), each member named exactly
// and once.
func plainCallRequest(body []byte, name string) (plainCall, bool) {
	var c plainCall
	var top, params, meta mcp.Members
	if mcp.ReadMembers(body, &top) != nil || top.Len() != 4 || string(top.Get("jsonrpc")) != `"2.0"` || string(top.Get("method")) != `"tools/call"` ||
		!simpleID(top.Get("id")) || top.Get("params") == nil {
		return c, false
	}
	if mcp.ReadMembers(top.Get("params"), &params) != nil || !quoted(params.Get("name"), name) || params.Get("_meta") == nil {
		return c, false
	}
	for i := range params.Len() {
		if k := params.Name(i); k != "name" && k != "arguments" && k != "_meta" {
			return c, false
		}
	}
	if mcp.ReadMembers(params.Get("_meta"), &meta) != nil || string(meta.Get(sdk.MetaKeyProtocolVersion)) != `"`+modernProtocol+`"` {
		return c, false
	}
	// The stages read only the trace context of _meta, which is decoded;
	// the capabilities and the client's name are checked for their shape
	// and kept as they came.
	c.meta = make(sdk.Meta, meta.Len())
	for i := range meta.Len() {
		k, raw := meta.Name(i), meta.Value(i)
		switch k {
		case sdk.MetaKeyProtocolVersion:
			c.meta[k] = modernProtocol
		case sdk.MetaKeyClientCapabilities:
			if raw[0] != '{' {
				return c, false
			}
			c.meta[k] = raw
		case sdk.MetaKeyClientInfo:
			ci, err := mcp.ObjectMembers(raw)
			// A name of at least one character: its quotes and more.
			if n := ci["name"]; err != nil || len(n) < 3 || n[0] != '"' {
				return c, false
			}
			c.meta[k] = raw
		case "traceparent", "tracestate":
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return c, false
			}
			c.meta[k] = v
		default:
			return c, false
		}
	}
	if c.meta[sdk.MetaKeyClientCapabilities] == nil || c.meta[sdk.MetaKeyClientInfo] == nil {
		return c, false
	}
	c.id, c.args = top.Get("id"), params.Get("arguments")
	return c, true
}

// quoted reports whether raw is s as strconv.Quote writes it.
func quoted(raw []byte, s string) bool {
	return len(raw) == len(s)+2 && raw[0] == '"' && raw[len(raw)-1] == '"' && string(raw[1:len(raw)-1]) == s && !strings.ContainsAny(s, "\\\"")
}

// decideVisible decides a call of the tool the caller's namespace offers
// under name, as the decide stage would: the decision, when the caller may
// see the tool; nil when it may not.
func (g *Gateway) decideVisible(ctx context.Context, id *authn.Identity, name string) (*decided, error) {
	o, err := g.offerNamed(ctx, id.Namespace, name)
	if err != nil || o == nil {
		return nil, err
	}
	policies, err := g.accessPolicies(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := g.verdictFor(ctx, id, *o, ceilingFor(id, policies), nil)
	if err != nil || !v.allowed() {
		return nil, err
	}
	return &decided{offer: *o, policies: policies, v: v}, nil
}

// writeCallAnswer writes the answer to a call as the SDK writes it for
// the 2026-07-28 revision: one application/json body holding the JSON-RPC
// response, whose result says it is complete (or asks for input) and
// names the gateway in _meta. It returns the bytes written.
func (g *Gateway) writeCallAnswer(w http.ResponseWriter, id json.RawMessage, res *sdk.CallToolResult, callErr error) int {
	if pieces, typed := g.typedAnswer(res, true); callErr == nil && typed {
		// A result carrying an image is written around it (resultraw.go).
		return writeAnswer(w, id, pieces)
	}
	msg, ok := g.callResult(res, callErr)
	return writeResponse(w, id, msg, ok)
}

// callResult encodes a call's result, or, reporting false, its JSON-RPC
// error, as the SDK would for the 2026-07-28 revision.
func (g *Gateway) callResult(res *sdk.CallToolResult, callErr error) ([]byte, bool) {
	if callErr == nil && res != nil && res.InputRequests != nil && (len(res.Content) > 0 || res.StructuredContent != nil) {
		callErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
	}
	if callErr == nil && res != nil {
		if b, ok := g.textResult(res); ok {
			return b, true
		}
		if _, named := res.Meta[sdk.MetaKeyServerInfo]; !named {
			if res.Meta == nil {
				res.Meta = sdk.Meta{}
			}
			res.Meta[sdk.MetaKeyServerInfo] = g.implementation()
		}
		b, err := json.Marshal(res)
		if err == nil && len(b) > 2 && b[len(b)-1] == '}' {
			// The result's type is the SDK's to set, on a field it does
			// not export; it is written after the result's own members,
			// where the SDK's encoding puts it.
			kind := `,"resultType":"complete"}`
			if res.InputRequests != nil {
				kind = `,"resultType":"input_required"}`
			}
			return append(b[:len(b)-1], kind...), true
		}
		callErr = err
		if callErr == nil {
			callErr = errors.New("the result could not be encoded")
		}
	}
	return rpcError(callErr), false
}

// eraCallResult encodes a call's result, or, reporting false, its JSON-RPC
// error, as the SDK would for a revision of the initialize era: the
// result's own members only.
func eraCallResult(res *sdk.CallToolResult, callErr error) ([]byte, bool) {
	if callErr == nil && res != nil {
		if b, ok := eraTextResult(res); ok {
			return b, true
		}
		b, err := json.Marshal(res)
		if err == nil {
			return b, true
		}
		callErr = err
	}
	return rpcError(callErr), false
}

// rpcError encodes err as the SDK's JSON-RPC layer turns a handler's error
// into the wire's: the code of a JSON-RPC error it wraps, the outer
// message.
func rpcError(err error) []byte {
	if err == nil {
		err = errors.New("no result")
	}
	we := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		we.Code, we.Data = wrapped.Code, wrapped.Data
	}
	b, merr := json.Marshal(we)
	if merr != nil {
		b = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	return b
}

// buildTextResultPrefix is the encoding of a result holding one text block
// as the SDK writes it for this gateway, up to the text's value: the
// _meta naming the gateway, then the content list. It is cut from the
// SDK's own encoding of such a result with an empty text; nil when that
// encoding does not end as expected, and then every result is encoded
// whole.
func (g *Gateway) buildTextResultPrefix() []byte {
	b, err := json.Marshal(&sdk.CallToolResult{
		Meta:    sdk.Meta{sdk.MetaKeyServerInfo: g.implementation()},
		Content: []sdk.Content{&sdk.TextContent{}},
	})
	const emptyText = `""}]}`
	if err != nil || !bytes.HasSuffix(b, []byte(`"text":`+emptyText)) {
		return nil
	}
	return b[:len(b)-len(emptyText)]
}

// textResult encodes the result most calls get, one text block and
// nothing else (what record makes of an upstream answer), without the
// SDK's reflection: the same bytes as its encoding
// (TestTextResultMatchesTheSDK), reporting false for any other result.
func (g *Gateway) textResult(res *sdk.CallToolResult) ([]byte, bool) {
	if g.textResultPrefix == nil || !plainText(res) {
		return nil, false
	}
	text := res.Content[0].(*sdk.TextContent)
	// encoding/json's string encoding is the SDK's: HTML characters,
	// U+2028, U+2029 and invalid UTF-8 escaped alike.
	value, err := json.Marshal(text.Text)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(g.textResultPrefix)+len(value)+len(`}],"isError":true,"resultType":"complete"}`))
	b = append(b, g.textResultPrefix...)
	b = append(b, value...)
	b = append(b, `}]`...) // the block, the content list
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, `,"resultType":"complete"}`...), true
}

// eraTextResult encodes a result of one text block and nothing else as
// the SDK encodes it for a revision of the initialize era, reporting false
// for any other result (TestEraTextResultMatchesTheSDK).
func eraTextResult(res *sdk.CallToolResult) ([]byte, bool) {
	if !plainText(res) {
		return nil, false
	}
	value, err := json.Marshal(res.Content[0].(*sdk.TextContent).Text)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(`{"content":[{"type":"text","text":}],"isError":true}`)+len(value))
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, value...)
	b = append(b, `}]`...)
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true
}

// plainText reports whether res is one text block and nothing else, the
// result most calls get.
func plainText(res *sdk.CallToolResult) bool {
	if res.Meta != nil || len(res.Content) != 1 || res.StructuredContent != nil || res.InputRequests != nil || res.RequestState != "" {
		return false
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	return ok && text.Meta == nil && text.Annotations == nil
}

// The revisions that changed what a tools/call result may hold: structured
// content and resource links came with 2025-06-18; structured content that
// is not an object, with 2026-07-28.
const (
	structuredProtocol = "2025-06-18"
)

// resultForEra is res as a client speaking version may read it: the stages
// build one result whatever the era, and the edge (each era's encoder, and
// the SDK's path) asks for it in the era it answers. Of a result a
// revision cannot hold, what it can hold is given:
//   - structured content that is not an object, before 2026-07-28, and any
//     structured content before 2025-06-18, is left out; its JSON is given
//     as text when the result has no text block (the specification asks
//     servers to mirror it there, so most results already carry it);
//   - resource links before 2025-06-18 are left out, and a note says so.
//
// version "" is the oldest revision, as a request without the protocol
// version header is read. A result that needs nothing changed is res.
func resultForEra(res *sdk.CallToolResult, version string) *sdk.CallToolResult {
	if res == nil || version >= modernProtocol || (res.StructuredContent == nil && !hasResourceLink(res)) {
		return res
	}
	out := *res
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		object := len(raw) > 0 && raw[0] == '{'
		if !object || version < structuredProtocol {
			out.StructuredContent = nil
			if !hasText(res) {
				out.Content = append(append([]sdk.Content{}, res.Content...), &sdk.TextContent{Text: string(raw)})
			}
		}
	}
	if version < structuredProtocol && hasResourceLink(res) {
		kept, links := make([]sdk.Content, 0, len(out.Content)), 0
		for _, c := range out.Content {
			if _, ok := c.(*sdk.ResourceLink); ok {
				links++
				continue
			}
			kept = append(kept, c)
		}
		note := "[Note: " + strconv.Itoa(links) + " resource link(s) dropped; this client's protocol revision cannot carry them.]"
		out.Content = append([]sdk.Content{&sdk.TextContent{Text: note}}, kept...)
	}
	return &out
}

func hasText(res *sdk.CallToolResult) bool {
	for _, c := range res.Content {
		if _, ok := c.(*sdk.TextContent); ok {
			return true
		}
	}
	return false
}

func hasResourceLink(res *sdk.CallToolResult) bool {
	for _, c := range res.Content {
		if _, ok := c.(*sdk.ResourceLink); ok {
			return true
		}
	}
	return false
}
