package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// The front door (docs/gateway.md, "One front door"). Every request to
// Path has been identified and charged to its caller's budgets before it
// gets here (verify, served, budgeted); here its body is read once, within
// MaxRequestBytes, and taken apart once into a message. The messages of
// every era that are of the plain shapes agents send are answered by the
// gateway's own code: initialize, ping, notifications, tools/list and
// tools/call of the initialize era (2025-03-26 to 2025-11-25, without
// sessions kept here), and tools/list and tools/call of 2026-07-28. A call
// goes through the one pipeline of stages (call.go) whichever era it is
// of, and a list is written from the list cache's bytes; a call that asks
// for progress is answered as an event stream (relay.go). Anything else
// (a batch, a cursor, an approval asked of the agent's own client, a
// session kept in this process) is served by the go-sdk, as
// it is for every request in tests that compare the two byte for byte,
// with a server that offers only what the request names.

// DefaultMaxRequestBytes bounds the body of a request to the gateway:
// room for the arguments of any call an agent makes, and a bound on what
// one request can make a replica hold.
const DefaultMaxRequestBytes = 1 << 20

// initializeEraVersions are the revisions of the initialize era the
// gateway answers itself, newest first: those the go-sdk negotiates.
var initializeEraVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// message is one JSON-RPC message as the front door read it. Its members
// are slices of body.
type message struct {
	body []byte
	// era is the request's MCP-Protocol-Version header, empty when it has
	// none.
	era    string
	id     json.RawMessage
	method string
	params json.RawMessage
}

// notification reports whether m is a notification (it has no id).
func (m *message) notification() bool { return m.id == nil }

type messageKey struct{}

// messageOf is the message the front door read for the request with ctx;
// nil when it read none (a GET, a batch, a body that is not one JSON-RPC
// message).
func messageOf(ctx context.Context) *message {
	m, _ := ctx.Value(messageKey{}).(*message)
	return m
}

// maxRequestBytes is the bound on a request's body.
func (g *Gateway) maxRequestBytes() int64 {
	if g.MaxRequestBytes > 0 {
		return g.MaxRequestBytes
	}
	return DefaultMaxRequestBytes
}

// front is the front door: it reads the request's message, answers it
// when the gateway's own code can, and hands anything else to sdkPath with
// the body as it came.
func (g *Gateway) front(sdkPath http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if r.Method == http.MethodPost && r.Body != nil {
			// The bytes this request may make the replica hold: its length,
			// or the bound when it does not say.
			n := r.ContentLength
			if n < 0 || n > g.maxRequestBytes() {
				n = g.maxRequestBytes()
			}
			if id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context())); id != nil {
				if !g.inflight.Take(id.Namespace, n) {
					g.refuseBytesInFlight(w)
					return
				}
				defer g.inflight.Give(id.Namespace, n)
			}
			body, ok := g.readBody(w, r)
			if !ok {
				return
			}
			if m := readMessage(body); m != nil {
				m.era = r.Header.Get("MCP-Protocol-Version")
				// The gateway's own code reads m as it is handed; the
				// SDK's path finds it in the context.
				if g.answer(w, r, m) {
					return
				}
				ctx = context.WithValue(ctx, messageKey{}, m)
			} else if g.serveReply(w, r, body) {
				// An agent's answer to a request of the gateway's
				// (streamask.go).
				return
			}
			// The SDK reads the body again, from what was read.
			r.Body = readCloser{Reader: bytes.NewReader(body), Closer: r.Body}
		}
		// The SDK asks for the request's server more than once per request
		// (once only to learn the protocol versions); the memo makes that
		// one server, not several.
		ctx = context.WithValue(ctx, memoKey{}, &serverMemo{})
		sdkPath.ServeHTTP(w, r.WithContext(ctx))
	})
}

// readBody reads r's body whole, or answers 413 when it is larger than
// the gateway accepts, before reading more than that bound of it.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := g.maxRequestBytes()
	if r.ContentLength > limit {
		g.refuseTooLarge(w, limit)
		return nil, false
	}
	if r.ContentLength > 0 {
		// A body of a stated length is read into a buffer of that length:
		// the server ends it there.
		b := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return nil, false
		}
		return b, true
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if n > limit {
		g.refuseTooLarge(w, limit)
		return nil, false
	}
	if err != nil {
		http.Error(w, "reading the request body failed", http.StatusBadRequest)
		return nil, false
	}
	return buf.Bytes(), true
}

// refuseTooLarge answers a request whose body is over the bound: 413, and
// a JSON-RPC error without an id (the message was not read).
func (g *Gateway) refuseTooLarge(w http.ResponseWriter, limit int64) {
	metrics.GatewayRefusals.WithLabelValues(audit.RefusedTooLarge).Inc()
	w.Header().Set("Connection", "close")
	writeUnread(w, http.StatusRequestEntityTooLarge, -32600,
		"the request body is larger than the gateway accepts ("+strconv.FormatInt(limit, 10)+" bytes)")
}

// writeUnread answers a request whose message was not read: status, and
// a JSON-RPC error without an id.
func writeUnread(w http.ResponseWriter, status, code int, message string) {
	msg, _ := json.Marshal(message)
	body := `{"jsonrpc":"2.0","id":null,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(msg) + `}}`
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// refuseBytesInFlight answers a request whose namespace holds its share
// of request bytes now: 503 with Retry-After, as for any load the caller
// should wait out.
func (g *Gateway) refuseBytesInFlight(w http.ResponseWriter) {
	metrics.GatewayRefusals.WithLabelValues(audit.RefusedBytesInFlight).Inc()
	w.Header().Set("Retry-After", "1")
	writeUnread(w, http.StatusServiceUnavailable, budget.ErrorCode,
		"the gateway holds as many request bytes of the caller's namespace as it may at once; retry later")
}

// readMessage takes body apart as one JSON-RPC 2.0 request or
// notification whose members are each named exactly once; nil for
// anything else, which the SDK answers.
func readMessage(body []byte) *message {
	var top mcp.Members
	if mcp.ReadMembers(body, &top) != nil || string(top.Get("jsonrpc")) != `"2.0"` {
		return nil
	}
	m := &message{body: body, id: top.Get("id"), params: top.Get("params")}
	n := 2
	if m.id != nil {
		if !simpleID(m.id) {
			return nil
		}
		n++
	}
	if m.params != nil {
		n++
	}
	if top.Len() != n {
		return nil
	}
	var ok bool
	if m.method, ok = plainString(top.Get("method")); !ok && json.Unmarshal(top.Get("method"), &m.method) != nil {
		return nil
	}
	if m.method == "" {
		return nil
	}
	return m
}

// answer answers m with the gateway's own code and reports whether it
// did; when it did not, nothing was decided, counted or audited for it.
func (g *Gateway) answer(w http.ResponseWriter, r *http.Request, m *message) bool {
	if !plainHTTP(r) {
		return false
	}
	info := auth.TokenInfoFromContext(r.Context())
	id := authn.IdentityOf(info)
	if id == nil {
		return false
	}
	if m.era >= modernProtocol {
		switch m.method {
		case "tools/call":
			return g.serveCall(w, r, m, info, id) || g.serveRelayedCall(r.Context(), w, r, m, info, id)
		case "tools/list":
			return g.serveList(w, r, m, id)
		case methodDiscover:
			return g.serveDiscover(w, r, m)
		}
		return false
	}
	if strings.HasPrefix(m.method, "tasks/") || m.method == "tools/call" {
		// Tasks are the front door's in every mode of the initialize era
		// (tasks.go).
		if !g.noInitializeEra.Load() && initializeEra(m.era) && g.serveTasks(w, r, m, info, id) {
			return true
		}
	}
	if !g.Stateless || g.noInitializeEra.Load() || !initializeEra(m.era) {
		// A session kept in this process is the SDK's.
		return false
	}
	switch m.method {
	case "initialize":
		if g.featuresEnabled(r.Context(), id.Namespace) {
			// The SDK answers it, declaring prompts and resources too
			// (features.go).
			return false
		}
		return g.serveInitialize(w, m)
	case "ping":
		if m.notification() || !emptyParams(m.params) {
			return false
		}
		writeResult(w, m.id, []byte("{}"))
	case "tools/list":
		if m.notification() || !emptyParams(m.params) {
			return false
		}
		return g.serveEraList(w, r, m, id)
	case "tools/call":
		if m.notification() {
			return false
		}
		// Kept, by caller and id, for a cancellation to find (cancel.go).
		ctx, done := g.calls.track(r.Context(), id, m)
		defer done()
		return g.serveEraCall(ctx, w, r, m, info, id) || g.serveRelayedCall(ctx, w, r, m, info, id)
	case methodInitialized, "notifications/cancelled":
		if !m.notification() {
			return false
		}
		// There is no session to mark initialized; a cancellation ends
		// the caller's call it names, if that call is in flight here.
		if m.method == "notifications/cancelled" {
			g.cancelled(id, m)
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
	default:
		return false
	}
	g.eraAnswers.Add(1)
	return true
}

// plainHTTP reports whether r passes the transport's checks as the SDK
// makes them: a POST of application/json that accepts both answer types,
// from a Host the SDK's DNS-rebinding guard lets through.
func plainHTTP(r *http.Request) bool {
	return r.Method == http.MethodPost && jsonContent(r.Header.Get("Content-Type")) &&
		acceptsBoth(r.Header.Values("Accept")) && hostAccepted(r)
}

// initializeEra reports whether a request's MCP-Protocol-Version is one
// of the initialize era the gateway answers itself (none: the transport's
// default, or an initialize that negotiates one).
func initializeEra(v string) bool {
	if v == "" {
		return true
	}
	for _, e := range initializeEraVersions {
		if v == e {
			return true
		}
	}
	return false
}

// emptyParams reports whether a request's params are absent or an empty
// object.
func emptyParams(raw json.RawMessage) bool {
	if raw == nil {
		return true
	}
	members, err := mcp.ObjectMembers(raw)
	return err == nil && len(members) == 0
}

// serveInitialize answers an initialize of the plain shape: the revision
// the client asks for when it is of the initialize era, else the newest
// of it, and the tools capability, as the SDK negotiates (and as it
// declares for a server whose sessions it does not keep: no listChanged).
func (g *Gateway) serveInitialize(w http.ResponseWriter, m *message) bool {
	if m.notification() || m.params == nil {
		return false
	}
	p, err := mcp.ObjectMembers(m.params)
	if err != nil || len(p) != 3 || p["capabilities"] == nil || p["clientInfo"] == nil {
		return false
	}
	var asked string
	if json.Unmarshal(p["protocolVersion"], &asked) != nil {
		return false
	}
	if c, err := mcp.ObjectMembers(p["capabilities"]); err != nil || c == nil {
		return false
	}
	ci, err := mcp.ObjectMembers(p["clientInfo"])
	if n := ci["name"]; err != nil || len(n) < 3 || n[0] != '"' {
		return false
	}
	version := initializeEraVersions[0]
	for _, v := range initializeEraVersions {
		if v == asked {
			version = v
		}
	}
	writeResult(w, m.id, g.initialized[version])
	g.eraAnswers.Add(1)
	return true
}

// buildInitialized encodes, per revision, the result of an initialize
// as the SDK encodes it for this gateway.
func (g *Gateway) buildInitialized() map[string][]byte {
	out := make(map[string][]byte, len(initializeEraVersions))
	for _, v := range initializeEraVersions {
		res := &sdk.InitializeResult{
			Capabilities:    &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
			ProtocolVersion: v,
			ServerInfo:      g.implementation(),
		}
		b, err := json.Marshal(res)
		if v == tasksProtocol {
			b, err = initializeWithTasks(res)
		}
		if err == nil {
			out[v] = b
		}
	}
	return out
}

// writeResult writes one JSON-RPC response holding result as an
// application/json answer, as the SDK writes the answer of a request it
// keeps no stream for.
func writeResult(w http.ResponseWriter, id json.RawMessage, result []byte) {
	_ = writeResponse(w, id, result, true)
}

// writeResponse writes the response to the request id: msg is its result,
// or, when ok is false, its error. It returns the bytes written.
func writeResponse(w http.ResponseWriter, id json.RawMessage, msg []byte, ok bool) int {
	member := `,"result":`
	if !ok {
		member = `,"error":`
	}
	size := len(`{"jsonrpc":"2.0","id":`) + len(id) + len(member) + len(msg) + 1
	h := w.Header()
	// The constant values are shared: nothing writes a header's values in
	// place, and setting them new allocated each on every answer.
	h["Cache-Control"], h["Content-Type"] = noCache, contentTypeJSON
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	b := make([]byte, 0, size)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, member...)
	b = append(b, msg...)
	b = append(b, '}')
	_, _ = w.Write(b)
	return size
}

// The values of the headers every JSON answer carries, shared by all.
var (
	noCache         = []string{"no-cache, no-transform"}
	contentTypeJSON = []string{"application/json"}
)

const methodDiscover = "server/discover"

// serveDiscover answers a 2026-07-28 server/discover of the plain shape:
// what the gateway is and speaks, the same for every caller, as the SDK
// answers it (listChanged declared while the gateway tells agents of
// changes).
func (g *Gateway) serveDiscover(w http.ResponseWriter, r *http.Request, m *message) bool {
	if g.noInitializeEra.Load() || m.era != modernProtocol || r.Header.Get("Mcp-Method") != methodDiscover || r.Header.Get("Mcp-Name") != "" {
		return false
	}
	if id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context())); id != nil && g.featuresEnabled(r.Context(), id.Namespace) {
		// The SDK answers it, declaring prompts and resources too
		// (features.go).
		return false
	}
	reqID, ok := plainMetaRequest(m.body, methodDiscover)
	if !ok {
		return false
	}
	result := g.discovered[0]
	if g.changes.running.Load() {
		result = g.discovered[1]
	}
	writeResult(w, reqID, result)
	g.eraAnswers.Add(1)
	return true
}

// buildDiscovered encodes the result of server/discover as the SDK
// encodes it for this gateway, without listChanged and with it.
func (g *Gateway) buildDiscovered() [2][]byte {
	var out [2][]byte
	var c sdk.Cacheable
	g.setCacheable(context.Background(), &sdk.ServerRequest[*sdk.DiscoverParams]{}, &c)
	for i, listChanged := range []bool{false, true} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		caps := `{"tools":{}}`
		if listChanged {
			caps = `{"tools":{"listChanged":true}}`
		}
		_ = enc.Encode(struct {
			ResultType        string          `json:"resultType"`
			Meta              map[string]any  `json:"_meta"`
			TTLMs             int             `json:"ttlMs"`
			CacheScope        string          `json:"cacheScope"`
			SupportedVersions []string        `json:"supportedVersions"`
			Capabilities      json.RawMessage `json:"capabilities"`
		}{"complete", map[string]any{sdk.MetaKeyServerInfo: g.implementation()}, c.TTLMs, c.CacheScope, sdk.SupportedProtocolVersions(), json.RawMessage(caps)})
		out[i] = bytes.TrimRight(buf.Bytes(), "\n")
	}
	return out
}
