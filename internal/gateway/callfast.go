package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// A tools/call of the 2026-07-28 revision is read and answered here when
// it has the one plain shape most calls have, and goes through the same
// stages as every other call (g.call): the same decision, rules, audit and
// upstream call. What is left out is the SDK's server machinery around
// them, which for one small message decoded the request several times
// into fresh 32 KiB buffers, built a connection and a session per request,
// and decided the tool twice (docs/adr/037-gateway-call-path.md). Anything
// else (another revision, a progress token, an answer to an input request,
// a tool whose arguments travel in headers too, a call that needs an
// approval, a tool the caller may not see, a request the SDK would refuse)
// is served by the SDK as before. TestFastCallMatchesTheSDK proves the two
// answer the same bytes.

// maxFastCallBody bounds the request body this path reads; a larger one is
// left to the SDK.
const maxFastCallBody = 1 << 20

// plainCall is a tools/call request of the plain shape.
type plainCall struct {
	id   json.RawMessage
	args json.RawMessage
	meta sdk.Meta
}

// serveCall answers r, a tools/call of the 2026-07-28 revision, and
// reports whether it did; when it did not, r is as it came (its body
// restored) for the SDK to serve, and nothing was decided, counted or
// audited for it.
func (g *Gateway) serveCall(w http.ResponseWriter, r *http.Request) bool {
	name := r.Header.Get("Mcp-Name")
	if g.noFastCall.Load() || r.Method != http.MethodPost || r.Header.Get("MCP-Protocol-Version") != modernProtocol ||
		r.Header.Get("Mcp-Method") != "tools/call" || !toolname.ValidLocalName(name) ||
		!jsonContent(r.Header.Get("Content-Type")) || !acceptsBoth(r.Header.Values("Accept")) || !hostAccepted(r) {
		return false
	}
	info := auth.TokenInfoFromContext(r.Context())
	id := identityOf(info)
	if id == nil || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFastCallBody+1))
	// The SDK reads the body again: from what was read, then the rest.
	r.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(body), r.Body), Closer: r.Body}
	if err != nil || len(body) > maxFastCallBody {
		return false
	}
	call, ok := plainCallRequest(body, name)
	if !ok {
		return false
	}
	// The SDK's path serves the call with a server offering the tool when
	// the caller may see it; here the call is only taken when it may be
	// made without a question for anyone.
	pre, err := g.decideVisible(r.Context(), id, name)
	if err != nil || pre == nil || pre.v.approval {
		return false
	}
	o := &pre.offer
	if schema := o.tool.Status.InputSchema; schema != nil && bytes.Contains(schema.Raw, []byte(xMCPHeader)) {
		// The SDK checks the Mcp-Param headers of such a tool.
		return false
	}
	req := &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Meta: call.meta, Name: name, Arguments: call.args},
		Extra:  &sdk.RequestExtra{TokenInfo: info, Header: r.Header},
	}
	ctx, obs := g.startCall(r.Context(), req)
	res, err := g.callDecided(ctx, req, o.ref(), pre)
	g.endCall(obs, err)
	g.writeCallAnswer(w, call.id, res, err)
	g.fastCalls.Add(1)
	return true
}

// plainCallRequest reads body as a tools/call of the plain shape for the
// tool the Mcp-Name header names: JSON-RPC 2.0, a simple id, and params
// holding the tool's name (as in the header), optionally its arguments,
// and the revision's _meta (its version, the client's capabilities and
// name, and optionally the W3C trace context), each member named exactly
// and once.
func plainCallRequest(body []byte, name string) (plainCall, bool) {
	var c plainCall
	top, err := mcp.ObjectMembers(body)
	if err != nil || len(top) != 4 || string(top["jsonrpc"]) != `"2.0"` || string(top["method"]) != `"tools/call"` ||
		!simpleID.Match(top["id"]) || top["params"] == nil {
		return c, false
	}
	params, err := mcp.ObjectMembers(top["params"])
	if err != nil || string(params["name"]) != strconv.Quote(name) || params["_meta"] == nil {
		return c, false
	}
	for k := range params {
		if k != "name" && k != "arguments" && k != "_meta" {
			return c, false
		}
	}
	meta, err := mcp.ObjectMembers(params["_meta"])
	if err != nil || string(meta[sdk.MetaKeyProtocolVersion]) != `"`+modernProtocol+`"` {
		return c, false
	}
	// The stages read only the trace context of _meta, which is decoded;
	// the capabilities and the client's name are checked for their shape
	// and kept as they came.
	c.meta = make(sdk.Meta, len(meta))
	for k, raw := range meta {
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
	c.id, c.args = top["id"], params["arguments"]
	return c, true
}

// decideVisible decides a call of the tool the caller's namespace offers
// under name, as the decide stage would: the decision, when the caller may
// see the tool; nil when it may not.
func (g *Gateway) decideVisible(ctx context.Context, id *Identity, name string) (*decided, error) {
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
// this revision: one application/json body holding the JSON-RPC response,
// whose result says it is complete (or asks for input) and names the
// gateway in _meta.
func (g *Gateway) writeCallAnswer(w http.ResponseWriter, id json.RawMessage, res *sdk.CallToolResult, callErr error) {
	var out bytes.Buffer
	out.WriteString(`{"jsonrpc":"2.0","id":`)
	out.Write(id)
	if msg, ok := g.callResult(res, callErr); ok {
		out.WriteString(`,"result":`)
		out.Write(msg)
	} else {
		out.WriteString(`,"error":`)
		out.Write(msg)
	}
	out.WriteString("}")
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.Bytes())
}

// callResult encodes a call's result, or, reporting false, its JSON-RPC
// error, as the SDK would for this revision.
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
	if callErr == nil {
		callErr = errors.New("no result")
	}
	// As the SDK's JSON-RPC layer turns a handler's error into the wire's:
	// the code of a JSON-RPC error it wraps, the outer message.
	we := &jsonrpc.Error{Message: callErr.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(callErr, &wrapped) {
		we.Code, we.Data = wrapped.Code, wrapped.Data
	}
	b, err := json.Marshal(we)
	if err != nil {
		b = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	return b, false
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
	if g.textResultPrefix == nil || res.Meta != nil || len(res.Content) != 1 || res.StructuredContent != nil ||
		res.InputRequests != nil || res.RequestState != "" {
		return nil, false
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok || text.Meta != nil || text.Annotations != nil {
		return nil, false
	}
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
