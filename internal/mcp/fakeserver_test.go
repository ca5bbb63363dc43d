package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
)

// confProfile is one connection profile of the conformance suite: what the
// operator configured (the Endpoint) and what the server does about era and
// session state. Nothing else may differ between profiles.
type confProfile struct {
	name string
	// modern is true for the stateless 2026-07-28 server.
	modern bool
	// version is the revision the server negotiates.
	version string
	// session is the id a legacy server issues; "" issues none.
	session string
	// sse makes the server frame ordinary answers as event streams.
	sse bool
	// caps are the capability names the server declares.
	caps []string
	// info is what the server says about itself.
	info mcp.ServerInfo
	// ep is the operator's configuration; fields differ per profile so that
	// checks do not assert one constant twice.
	ep mcp.Endpoint
	// secret is the credential value, kept to search outputs for it.
	secret string
	// eraTTL is the client's era cache lifetime in this profile.
	eraTTL time.Duration
	// listChanged declares tools.listChanged.
	listChanged bool
}

// confProfiles are the three supported connection profiles.
func confProfiles() []confProfile {
	return []confProfile{
		{
			name:    "legacy-stateless",
			version: "2025-03-26",
			caps:    []string{"tools", "logging"},
			info:    mcp.ServerInfo{Name: "tickets-server", Version: "3.1.0"},
			secret:  "tok-ALPHA-0b9e51",
			eraTTL:  5 * time.Minute,
			ep: mcp.Endpoint{
				Name:     "team-a/tickets",
				URL:      "https://tickets.example.test:4010/mcp",
				Timeout:  7 * time.Second,
				MaxPages: 3,
				MaxTools: 6,
			},
		},
		{
			name:    "legacy-session",
			version: "2025-11-25",
			session: "sess-7f3a9c1e-2b4d",
			sse:     true,
			caps:    []string{"tools", "resources", "prompts"},
			info:    mcp.ServerInfo{Name: "docs-server", Title: "Docs", Version: "0.9.2"},
			secret:  "key-BRAVO-77c0d2",
			eraTTL:  10 * time.Minute,
			ep: mcp.Endpoint{
				Name:     "team-b/docs",
				URL:      "https://docs.example.test:40101/rpc",
				Timeout:  11 * time.Second,
				MaxPages: 4,
				MaxTools: 8,
			},
		},
		{
			name:    "modern-stateless",
			modern:  true,
			version: "2026-07-28",
			caps:    []string{"tools", "completions"},
			info:    mcp.ServerInfo{Name: "search-server", Version: "2026.7.1"},
			secret:  "tok-CHARLIE-4e1f08",
			eraTTL:  15 * time.Minute,
			ep: mcp.Endpoint{
				Name:     "team-c/search",
				URL:      "https://search.example.test:8443/mcp",
				Timeout:  13 * time.Second,
				MaxPages: 5,
				MaxTools: 10,
			},
		},
	}
}

// endpoint returns the profile's endpoint with its credential. The legacy
// session profile sends the credential in a named header, the others as a
// bearer token.
func (p confProfile) endpoint() mcp.Endpoint {
	ep := p.ep
	header := ""
	if p.session != "" {
		header = "X-Api-Key"
	}
	ep.Credential = &mcp.Credential{Header: header, Value: secret.New(p.secret)}
	return ep
}

// credentialHeader returns the header name and value the credential travels in.
func (p confProfile) credentialHeader() (string, string) {
	if p.session != "" {
		return "X-Api-Key", p.secret
	}
	return "Authorization", "Bearer " + p.secret
}

// newFakeClock is a settable clock for budgets and expiry.
func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
}

// seenRequest is one request the fake server received.
type seenRequest struct {
	HTTPMethod  string
	URL         *url.URL
	Header      http.Header
	Body        []byte
	RPC         map[string]any
	RPCMethod   string
	ID          any
	HasID       bool
	Params      map[string]any
	Deadline    time.Time
	HasDeadline bool
	// Share is the part of the budget the client granted this leg, as
	// recorded on the request's context.
	Share      time.Duration
	HasShare   bool
	ReceivedAt time.Time
	ctx        context.Context
}

// fakeHang is a response sentinel: the fake server never answers and the round
// trip ends only when the request's context does.
var fakeHang = &http.Response{}

// fakeHandler answers one request; returning nil falls through to the
// default behaviour of the profile's server.
type fakeHandler func(r *seenRequest) *http.Response

// fakeServer emulates an MCP server of one profile behind an
// http.RoundTripper. Checks script its work answers (pages, call results)
// and may override any method.
type fakeServer struct {
	t *testing.T
	p confProfile

	mu   sync.Mutex
	reqs []*seenRequest

	// pages answers tools/list for a cursor (nil: first page).
	pages func(cursor *string) (tools []any, next any)
	// callResult answers tools/call.
	callResult map[string]any
	// override answers a JSON-RPC method (or "DELETE") instead of the default.
	override map[string]fakeHandler
	// onRequest runs for every request before it is answered.
	onRequest func(r *seenRequest)
}

// on overrides the answer to a JSON-RPC method (or "DELETE").
func (s *fakeServer) on(method string, h fakeHandler) { s.override[method] = h }

func newFakeServer(t *testing.T, p confProfile) *fakeServer {
	s := &fakeServer{t: t, p: p, override: map[string]fakeHandler{}}
	s.pages = func(cursor *string) ([]any, any) {
		return []any{confTool("alpha"), confTool("beta")}, nil
	}
	s.callResult = map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}
	return s
}

// client returns a client wired to this server.
func (s *fakeServer) client(opts mcp.Options) *mcp.Client {
	opts.HTTPClient = &http.Client{Transport: s}
	return mcp.New(opts)
}

func (s *fakeServer) requests() []*seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*seenRequest(nil), s.reqs...)
}

// rpcMethods lists the JSON-RPC methods (and "DELETE"/"GET") received, in order.
func (s *fakeServer) rpcMethods() []string {
	var out []string
	for _, r := range s.requests() {
		switch {
		case r.HTTPMethod != http.MethodPost:
			out = append(out, r.HTTPMethod)
		default:
			out = append(out, r.RPCMethod)
		}
	}
	return out
}

func (s *fakeServer) count(method string) int {
	n := 0
	for _, m := range s.rpcMethods() {
		if m == method {
			n++
		}
	}
	return n
}

func (s *fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	sr := &seenRequest{
		HTTPMethod: req.Method,
		URL:        req.URL,
		Header:     req.Header.Clone(),
		ReceivedAt: time.Now(),
		ctx:        req.Context(),
	}
	sr.Deadline, sr.HasDeadline = req.Context().Deadline()
	sr.Share, sr.HasShare = mcp.LegShareOf(req.Context())
	if req.Body != nil {
		sr.Body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	if len(sr.Body) > 0 {
		if err := json.Unmarshal(sr.Body, &sr.RPC); err == nil {
			sr.RPCMethod, _ = sr.RPC["method"].(string)
			sr.ID, sr.HasID = sr.RPC["id"]
			sr.Params, _ = sr.RPC["params"].(map[string]any)
		}
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, sr)
	onRequest := s.onRequest
	s.mu.Unlock()
	if onRequest != nil {
		onRequest(sr)
	}
	key := sr.RPCMethod
	if req.Method != http.MethodPost {
		key = req.Method
	}
	if h := s.override[key]; h != nil {
		if resp := h(sr); resp != nil {
			if resp == fakeHang {
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			return s.finish(sr, resp), nil
		}
	}
	return s.finish(sr, s.serve(sr)), nil
}

// finish ties the response to the request, as a real transport does.
func (s *fakeServer) finish(sr *seenRequest, resp *http.Response) *http.Response {
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	if resp.Body == nil {
		resp.Body = io.NopCloser(strings.NewReader(""))
	}
	resp.Request = &http.Request{Method: sr.HTTPMethod, URL: sr.URL}
	return resp
}

// serve is the profile's server behaviour.
func (s *fakeServer) serve(r *seenRequest) *http.Response {
	p := s.p
	if r.HTTPMethod == http.MethodDelete {
		if p.session == "" {
			return fakeStatus(http.StatusMethodNotAllowed)
		}
		return fakeStatus(http.StatusOK)
	}
	if r.HTTPMethod != http.MethodPost {
		return fakeStatus(http.StatusMethodNotAllowed)
	}
	if p.modern {
		return s.serveModern(r)
	}
	return s.serveLegacy(r)
}

func (s *fakeServer) serveModern(r *seenRequest) *http.Response {
	switch r.RPCMethod {
	case "server/discover":
		return s.reply(r, map[string]any{
			"resultType":        "complete",
			"supportedVersions": []any{s.p.version},
			"capabilities":      s.caps(),
			"instructions":      "Search the " + s.p.info.Name + " index.",
			"_meta": map[string]any{
				"io.modelcontextprotocol/serverInfo": map[string]any{"name": s.p.info.Name, "title": s.p.info.Title, "version": s.p.info.Version},
			},
			"ttlMs": 0, "cacheScope": "public",
		})
	case "tools/list":
		return s.reply(r, s.listResult(r, "complete"))
	case "tools/call":
		res := map[string]any{"resultType": "complete"}
		for k, v := range s.callResult {
			res[k] = v
		}
		return s.reply(r, res)
	}
	return fakeJSON(http.StatusBadRequest, fakeRPCError(r.ID, -32601, "Method not found", nil))
}

func (s *fakeServer) serveLegacy(r *seenRequest) *http.Response {
	p := s.p
	switch r.RPCMethod {
	case "server/discover":
		// A legacy server does not know the method. The stateless one says
		// so as a JSON-RPC error in a 400, the session one refuses the
		// request for lacking a session, as deployed SDKs do.
		if p.session == "" {
			return fakeJSON(http.StatusBadRequest, fakeRPCError(nil, -32600, "Invalid Request: server not initialized", nil))
		}
		return fakeText(http.StatusBadRequest, "text/plain", "Bad Request: No valid session ID provided")
	case "initialize":
		resp := s.reply(r, map[string]any{
			"protocolVersion": p.version,
			"capabilities":    s.caps(),
			"serverInfo":      map[string]any{"name": p.info.Name, "title": p.info.Title, "version": p.info.Version},
			"instructions":    "Use " + p.info.Name + " for lookups.",
		})
		if p.session != "" {
			resp.Header.Set("Mcp-Session-Id", p.session)
		}
		return resp
	}
	if p.session != "" && r.Header.Get("Mcp-Session-Id") != p.session {
		return fakeText(http.StatusBadRequest, "text/plain", "Bad Request: No valid session ID provided")
	}
	switch r.RPCMethod {
	case "notifications/initialized":
		return fakeStatus(http.StatusAccepted)
	case "tools/list":
		return s.reply(r, s.listResult(r, ""))
	case "tools/call":
		return s.reply(r, s.callResult)
	}
	return s.reply(r, nil)
}

func (s *fakeServer) listResult(r *seenRequest, resultType string) map[string]any {
	var cursor *string
	if c, ok := r.Params["cursor"].(string); ok {
		cursor = &c
	}
	tools, next := s.pages(cursor)
	res := map[string]any{"tools": tools}
	if next != nil {
		res["nextCursor"] = next
	}
	if resultType != "" {
		res["resultType"] = resultType
		res["ttlMs"] = 0
		res["cacheScope"] = "public"
	}
	return res
}

// reply frames a result for r in the profile's framing.
func (s *fakeServer) reply(r *seenRequest, result map[string]any) *http.Response {
	if result == nil {
		return fakeJSON(http.StatusOK, fakeRPCError(r.ID, -32601, "Method not found", nil))
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": result}
	if s.p.sse {
		return fakeSSE(http.StatusOK, confJSON(msg))
	}
	return fakeJSON(http.StatusOK, msg)
}

// confTool is a well-formed tool definition.
func confTool(name string) map[string]any {
	return map[string]any{
		"name":        name,
		"description": "The " + name + " tool.",
		"inputSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"query": map[string]any{"type": "string"}},
			"required":   []any{"query"},
		},
	}
}

// caps are the capabilities the profile's server declares.
func (s *fakeServer) caps() map[string]any {
	m := fakeCaps(s.p.caps)
	if s.p.listChanged {
		m["tools"] = map[string]any{"listChanged": true}
	}
	return m
}

func fakeCaps(names []string) map[string]any {
	m := map[string]any{}
	for _, n := range names {
		m[n] = map[string]any{}
	}
	return m
}

func fakeRPCError(id any, code int, msg string, data any) map[string]any {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	body := map[string]any{"jsonrpc": "2.0", "error": e}
	if id != nil {
		body["id"] = id
	}
	return body
}

func confJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func fakeStatus(code int) *http.Response {
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
}

func fakeJSON(code int, v any) *http.Response {
	return fakeText(code, "application/json", confJSON(v))
}

func fakeText(code int, contentType, body string) *http.Response {
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": {contentType}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}
}

// fakeSSE frames each payload as one "message" event.
func fakeSSE(code int, payloads ...string) *http.Response {
	var b bytes.Buffer
	for _, p := range payloads {
		fmt.Fprintf(&b, "event: message\ndata: %s\n\n", p)
	}
	return fakeText(code, "text/event-stream", b.String())
}

// fakeRawSSE returns an event stream with the given raw text.
func fakeRawSSE(text string) *http.Response {
	return fakeText(http.StatusOK, "text/event-stream", text)
}

// fakeBlockingBody returns a body that yields prefix and then blocks until ctx
// ends, like a server that keeps a stream open.
func fakeBlockingBody(ctx context.Context, prefix string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(prefix))
		<-ctx.Done()
		_ = pw.CloseWithError(ctx.Err())
	}()
	return pr
}

// fakeResponseFor builds the JSON text of a response to r with the given result.
func fakeResponseFor(r *seenRequest, result any) string {
	return confJSON(map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": result})
}
