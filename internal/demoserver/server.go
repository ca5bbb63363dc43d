package demoserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// Flavor names the MCP library a server is written with.
type Flavor string

const (
	// GoSDK is the official SDK, github.com/modelcontextprotocol/go-sdk.
	GoSDK Flavor = "go-sdk"
	// MCPGo is github.com/mark3labs/mcp-go.
	MCPGo Flavor = "mcp-go"
)

// Path is the URL path the MCP endpoint is served on. Other paths answer 404,
// so a client that strips or rewrites the path is noticed.
const Path = "/mcp"

// Header is an HTTP header name and value.
type Header struct {
	Name  string
	Value string
}

// Options configures a server. The zero value (apart from Flavor, which
// defaults to GoSDK) is a stateful server with the built-in tools only, no
// catalog and no credential.
type Options struct {
	// Flavor picks the library. Empty means GoSDK.
	Flavor Flavor

	// Stateless makes the server issue no session id.
	Stateless bool

	// JSONResponse makes go-sdk answer calls with application/json instead
	// of text/event-stream. mcp-go always answers these tools with
	// application/json; the field is ignored there.
	JSONResponse bool

	// LegacyOnly restricts the server to the initialize-era revisions
	// (2025-11-25 and earlier), so a dual-era client has to fall back.
	LegacyOnly bool

	// ProtocolVersions, if set, restricts a go-sdk server to exactly these
	// revisions (ServerOptions.SupportedProtocolVersions), in place of
	// LegacyOnly's list: it advertises only them, answers an initialize
	// asking for another with the newest of them, and refuses a request
	// whose MCP-Protocol-Version header names another with 400. mcp-go
	// cannot be narrowed that far (its initialize negotiates every revision
	// it implements), so New refuses the option for it.
	ProtocolVersions []string

	// Tools is the size of the generated catalog (tool_0001 …).
	Tools int

	// PageSize limits how many tools one tools/list page carries. Zero keeps
	// the library's default: 1000 for go-sdk, unlimited for mcp-go.
	PageSize int

	// RequireBearer, if set, is the token every request must present as
	// "Authorization: Bearer <token>".
	RequireBearer string

	// AlsoAcceptBearer are further bearer tokens accepted besides
	// RequireBearer, for a server reached with two credentials (a delegated
	// server: a discovery token for imports, exchanged tokens for calls).
	AlsoAcceptBearer []string

	// RequireHeader, if Name and Value are set, is a header every request
	// must carry with exactly that value. It is an alternative to
	// RequireBearer; setting both is an error.
	RequireHeader Header

	// Name, Title and Version are the server's self-description. Defaults:
	// "mcpserver-<flavor>", "", "1.0.0".
	Name, Title, Version string
}

// Stats is a snapshot of what a server has observed. Counts are cumulative
// from the start of the server.
type Stats struct {
	// Requests counts HTTP requests to the endpoint, of any method, before
	// the credential check.
	Requests int
	// Rejected counts requests answered 401 by the credential check. They
	// never reached the MCP library.
	Rejected int
	// Aborted counts requests whose client went away before the response was
	// complete: the request context ended while the library was still
	// serving it, or, for a request the client cancelled, within a moment
	// of the library ending it (the cancellation can be seen before the
	// closed connection). Closing the server counts too. It is updated
	// asynchronously; read it with Await.
	Aborted int
	// Deletes counts HTTP DELETE requests that passed the credential check.
	Deletes int
	// SessionCarried counts requests that carried an Mcp-Session-Id header.
	SessionCarried int
	// Methods counts JSON-RPC requests and notifications by method, for
	// requests that passed the credential check.
	Methods map[string]int
	// Calls counts tool handler invocations by tool name: a call counted here
	// reached the tool's code.
	Calls map[string]int
	// CredentialPresented counts requests that carried the credential header
	// (Authorization, or RequireHeader.Name when that is set), whatever its
	// value.
	CredentialPresented int
	// LastCredential is the value of the credential header on the most
	// recent request that carried it ("Bearer …" for Authorization). Test
	// servers only: it is a secret in any real deployment.
	LastCredential string
	// LastProtocolVersion is the MCP-Protocol-Version header of the most
	// recent request that carried one.
	LastProtocolVersion string
	// SlowStarted, SlowCancelled and SlowCompleted count the slow tool's
	// invocations, those that ended because their context ended, and those
	// whose duration elapsed.
	SlowStarted, SlowCancelled, SlowCompleted int
	// CancelledEnded counts requests the client cancelled with
	// notifications/cancelled whose stream the library ended while the
	// client still held the request: the moment after which a drop must
	// still count as Aborted.
	CancelledEnded int
	// Listening is how many subscriptions/listen streams are open that the
	// library acknowledged (notifications/subscriptions/acknowledged
	// written): it registers a subscription before it acknowledges it, so
	// a tool list change made now is announced on each of them. A stream
	// leaves the count when its request ends (the client left).
	Listening int
	// ListChangedSent counts the notifications/tools/list_changed the
	// library wrote on those streams. The library folds changes less than
	// 10ms apart into one notification.
	ListChangedSent int
	// MethodsByCredential counts JSON-RPC methods by the credential header
	// value that carried them ("" for none): which credential was used for
	// what. Test servers only.
	MethodsByCredential map[string]map[string]int
}

// Server is a running (or ready to run) MCP server.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:<port>/mcp) once Start or Listen
	// returned; empty for a server from New that the caller serves itself.
	URL string

	opts    Options
	flavor  backend
	handler http.Handler
	stop    chan struct{} // closed by Close: releases blocked slow calls
	http    *httptest.Server

	mu        sync.Mutex
	stats     Stats
	credValue string // the accepted credential value; swapped by SetCredential
	tools     map[string]toolSpec
	closeOnce sync.Once
	// cancelled holds the ids of requests a client cancelled.
	cancelled map[string]bool
}

// backend is the library-specific half of a server.
type backend interface {
	handler() http.Handler
	// put adds the tools or replaces those with the same names.
	put(specs ...toolSpec)
	remove(names ...string)
	close()
}

// New builds a server without listening anywhere. Serve Handler yourself
// and call Close when done. It does not import package testing, so a demo
// binary can use it.
func New(opts Options) (*Server, error) {
	if opts.Flavor == "" {
		opts.Flavor = GoSDK
	}
	if opts.RequireBearer != "" && (opts.RequireHeader.Name != "" || opts.RequireHeader.Value != "") {
		return nil, errors.New("demoserver: RequireBearer and RequireHeader are exclusive")
	}
	if (opts.RequireHeader.Name == "") != (opts.RequireHeader.Value == "") {
		return nil, errors.New("demoserver: RequireHeader needs both a name and a value")
	}
	if opts.Tools < 0 || opts.PageSize < 0 {
		return nil, errors.New("demoserver: Tools and PageSize must not be negative")
	}
	if len(opts.ProtocolVersions) > 0 && opts.Flavor != GoSDK {
		return nil, errors.New("demoserver: ProtocolVersions is supported by the go-sdk flavor only")
	}
	for _, v := range opts.ProtocolVersions {
		if v != modernVersion && !slices.Contains(legacyVersions, v) {
			return nil, fmt.Errorf("demoserver: protocol version %q is not one the libraries implement", v)
		}
	}
	if opts.Name == "" {
		opts.Name = "mcpserver-" + string(opts.Flavor)
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	s := &Server{
		opts:      opts,
		stop:      make(chan struct{}),
		credValue: opts.RequireBearer + opts.RequireHeader.Value,
		tools:     map[string]toolSpec{},
	}
	s.stats.Methods = map[string]int{}
	s.stats.Calls = map[string]int{}

	switch opts.Flavor {
	case GoSDK:
		s.flavor = newGoSDK(opts)
	case MCPGo:
		s.flavor = newMCPGo(opts)
	default:
		return nil, fmt.Errorf("demoserver: unknown flavor %q", opts.Flavor)
	}

	specs := s.builtinTools()
	for i := 1; i <= opts.Tools; i++ {
		specs = append(specs, s.catalogTool(CatalogToolName(i), catalogDescription(i)))
	}
	for _, sp := range specs {
		s.tools[sp.name] = sp
	}
	s.flavor.put(specs...)

	mux := http.NewServeMux()
	mux.Handle(Path, s.observe(s.flavor.handler()))
	s.handler = mux
	return s, nil
}

// Handler is the server's HTTP handler; the MCP endpoint is at [Path].
func (s *Server) Handler() http.Handler { return s.handler }

// Listen serves the server on a fresh port of 127.0.0.1 and sets URL.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.http = &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.handler}}
	s.http.Start()
	s.URL = s.http.URL + Path
	return nil
}

// Close releases blocked slow calls, closes the library's sessions and stops
// the listener, if any. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.flavor.close()
		if s.http != nil {
			s.http.Close()
		}
	})
}

// Options returns the options the server was built with, defaults applied.
func (s *Server) Options() Options { return s.opts }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Methods = maps.Clone(s.stats.Methods)
	st.Calls = maps.Clone(s.stats.Calls)
	st.MethodsByCredential = make(map[string]map[string]int, len(s.stats.MethodsByCredential))
	for k, v := range s.stats.MethodsByCredential {
		st.MethodsByCredential[k] = maps.Clone(v)
	}
	return st
}

// Requests is Stats().Requests: zero proves the server received nothing.
func (s *Server) Requests() int { return s.Stats().Requests }

// Calls is Stats().Calls[tool].
func (s *Server) Calls(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.Calls[tool]
}

// Await polls the counters until cond holds or timeout passes, and returns
// the last snapshot and whether cond held. Some effects (a handler noticing
// its cancelled context) happen after the client has already returned.
func (s *Server) Await(timeout time.Duration, cond func(Stats) bool) (Stats, bool) {
	deadline := time.Now().Add(timeout)
	for {
		st := s.Stats()
		if cond(st) {
			return st, true
		}
		if time.Now().After(deadline) {
			return st, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SetCredential replaces the credential value the server accepts (the
// bearer token, or RequireHeader's value), as a rotated Secret would. It
// has no effect on a server that requires no credential.
func (s *Server) SetCredential(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.credValue != "" {
		s.credValue = value
	}
}

// ToolNames returns the names of the tools the server currently offers,
// sorted.
func (s *Server) ToolNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.tools))
}

// SetToolDescription changes a tool's description, keeping its name, schema
// and behaviour: the definition drift a re-import should notice.
func (s *Server) SetToolDescription(name, description string) error {
	return s.changeTool(name, func(sp *toolSpec) { sp.description = description })
}

// ChangeTool changes what a tool offers of its definition (description,
// input schema and read-only hint), keeping its name and behaviour: drift
// of every kind a re-import should explain.
func (s *Server) ChangeTool(name, description string, schema json.RawMessage, readOnly bool) error {
	return s.changeTool(name, func(sp *toolSpec) {
		sp.description, sp.schema, sp.readOnly = description, schema, readOnly
	})
}

// changeTool applies change to the named tool and offers the result.
func (s *Server) changeTool(name string, change func(*toolSpec)) error {
	s.mu.Lock()
	sp, ok := s.tools[name]
	if ok {
		change(&sp)
		s.tools[name] = sp
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("demoserver: no tool %q", name)
	}
	s.flavor.put(sp)
	return nil
}

// RemoveTools stops offering the named tools. Unknown names are ignored.
func (s *Server) RemoveTools(names ...string) {
	s.mu.Lock()
	for _, n := range names {
		delete(s.tools, n)
	}
	s.mu.Unlock()
	s.flavor.remove(names...)
}

// AddTools offers catalog-style tools with the given names (a "q" string
// argument, a text result), replacing any tool of the same name.
func (s *Server) AddTools(names ...string) {
	specs := make([]toolSpec, 0, len(names))
	for _, n := range names {
		specs = append(specs, s.catalogTool(n, "Catalog tool "+n+"."))
	}
	s.mu.Lock()
	for _, sp := range specs {
		s.tools[sp.name] = sp
	}
	s.mu.Unlock()
	s.flavor.put(specs...)
}

// credentialHeader is the header the credential travels in.
func (s *Server) credentialHeader() string {
	if s.opts.RequireHeader.Name != "" {
		return s.opts.RequireHeader.Name
	}
	return "Authorization"
}

// maxObservedBody bounds how much of a request body the counting layer
// reads; the libraries apply their own, larger limits.
const maxObservedBody = 8 << 20

// observe wraps the library's handler: count, check the credential, count
// JSON-RPC methods, and notice abandoned requests.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := s.credentialHeader()
		presented, carried := r.Header[http.CanonicalHeaderKey(hdr)]

		s.mu.Lock()
		s.stats.Requests++
		if carried {
			s.stats.CredentialPresented++
			s.stats.LastCredential = presented[0]
		}
		if r.Header.Get("Mcp-Session-Id") != "" {
			s.stats.SessionCarried++
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
			s.stats.LastProtocolVersion = v
		}
		want := s.credValue
		s.mu.Unlock()

		if want != "" {
			expected := want
			if s.opts.RequireBearer != "" {
				expected = "Bearer " + want
			}
			// One value, compared in constant time: a test server should not
			// teach timing-unsafe habits.
			ok := carried && len(presented) == 1 && subtle.ConstantTimeCompare([]byte(presented[0]), []byte(expected)) == 1
			for _, extra := range s.opts.AlsoAcceptBearer {
				ok = ok || (carried && len(presented) == 1 && subtle.ConstantTimeCompare([]byte(presented[0]), []byte("Bearer "+extra)) == 1)
			}
			if !ok {
				s.mu.Lock()
				s.stats.Rejected++
				s.mu.Unlock()
				if s.opts.RequireBearer != "" {
					w.Header().Set("WWW-Authenticate", `Bearer realm="mcpserver", error="invalid_token"`)
				} else {
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`ApiKey realm="mcpserver", header=%q`, hdr))
				}
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}

		var reqIDs, methods []string
		// Request ids are unique within a session, not across sessions.
		session := r.Header.Get("Mcp-Session-Id")
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxObservedBody))
			r.Body.Close()
			if err != nil {
				http.Error(w, "reading body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			rb := readRPCBody(body)
			methods = rb.methods
			reqIDs = rb.ids
			s.mu.Lock()
			for _, id := range rb.cancels {
				if s.cancelled == nil {
					s.cancelled = map[string]bool{}
				}
				s.cancelled[session+" "+id] = true
			}
			cred := ""
			if carried {
				cred = presented[0]
			}
			if s.stats.MethodsByCredential == nil {
				s.stats.MethodsByCredential = map[string]map[string]int{}
			}
			if s.stats.MethodsByCredential[cred] == nil {
				s.stats.MethodsByCredential[cred] = map[string]int{}
			}
			for _, m := range methods {
				s.stats.Methods[m]++
				s.stats.MethodsByCredential[cred][m]++
			}
			s.mu.Unlock()
		}
		if r.Method == http.MethodDelete {
			s.mu.Lock()
			s.stats.Deletes++
			s.mu.Unlock()
		}

		// The request context ends while the library still serves the
		// request only when the client closed the connection (or the server
		// is closing). Both checks are needed: some library paths keep
		// ServeHTTP blocked until the tool handler returns, long after the
		// client left, and others return at once when it leaves.
		var abort sync.Once
		countAbort := func() {
			abort.Do(func() {
				s.mu.Lock()
				s.stats.Aborted++
				s.mu.Unlock()
			})
		}
		stopWatch := context.AfterFunc(r.Context(), countAbort)
		if lw := s.watchListen(w, methods); lw != nil {
			w = lw
			defer lw.ended()
		}
		next.ServeHTTP(w, r)
		stopWatch()
		cancelled := s.takeCancelled(session, reqIDs)
		if r.Context().Err() != nil {
			countAbort()
			return
		}
		// A session-keeping library ends a request's stream itself once the
		// client cancels it with notifications/cancelled, which can come
		// before this process has noticed that the same client closed the
		// request's connection. Give the closing a moment to arrive, so that
		// whether a cancelled request counts as dropped does not depend on
		// which of the two was seen first.
		if cancelled {
			s.mu.Lock()
			s.stats.CancelledEnded++
			s.mu.Unlock()
			t := time.NewTimer(cancelledDropGrace)
			defer t.Stop()
			select {
			case <-r.Context().Done():
				countAbort()
			case <-t.C:
			}
		}
	})
}

// rpcBody is what the server notes of a JSON-RPC body (one message or a
// batch); a body it cannot read yields nothing.
type rpcBody struct {
	methods []string
	// ids are the ids of the requests it carries, compact JSON.
	ids []string
	// cancels are the request ids it cancels (notifications/cancelled).
	cancels []string
}

func readRPCBody(body []byte) rpcBody {
	type msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	var batch []msg
	if err := json.Unmarshal(body, &batch); err != nil {
		var one msg
		if json.Unmarshal(body, &one) != nil {
			return rpcBody{}
		}
		batch = []msg{one}
	}
	var out rpcBody
	for _, m := range batch {
		if m.Method == "" {
			continue
		}
		out.methods = append(out.methods, m.Method)
		if id := compactID(m.ID); id != "" {
			out.ids = append(out.ids, id)
		}
		if id := compactID(m.Params.RequestID); m.Method == "notifications/cancelled" && id != "" {
			out.cancels = append(out.cancels, id)
		}
	}
	return out
}

// compactID is a JSON-RPC id in one spelling, so that a request's id and
// the requestId of its cancellation compare equal.
func compactID(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// cancelledDropGrace bounds how long a cancelled request's handler waits to
// see its connection closed.
const cancelledDropGrace = 2 * time.Second

// takeCancelled reports whether a client cancelled one of the session's
// requests, which are served, and forgets their cancellations.
func (s *Server) takeCancelled(session string, ids []string) bool {
	if len(ids) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, id := range ids {
		key := session + " " + id
		found = found || s.cancelled[key]
		delete(s.cancelled, key)
	}
	return found
}

// listenWriter watches what the library writes on a subscriptions/listen
// stream, for Stats.Listening and Stats.ListChangedSent. The library writes
// each event in one Write.
type listenWriter struct {
	http.ResponseWriter
	s     *Server
	acked bool
}

// watchListen wraps w when the request is a subscriptions/listen; other
// requests are served unwrapped.
func (s *Server) watchListen(w http.ResponseWriter, methods []string) *listenWriter {
	if !slices.Contains(methods, "subscriptions/listen") {
		return nil
	}
	return &listenWriter{ResponseWriter: w, s: s}
}

func (lw *listenWriter) Write(p []byte) (int, error) {
	acked := !lw.acked && bytes.Contains(p, []byte(`"notifications/subscriptions/acknowledged"`))
	changed := bytes.Contains(p, []byte(`"notifications/tools/list_changed"`))
	if acked || changed {
		lw.s.mu.Lock()
		if acked {
			lw.acked = true
			lw.s.stats.Listening++
		}
		if changed {
			lw.s.stats.ListChangedSent++
		}
		lw.s.mu.Unlock()
	}
	return lw.ResponseWriter.Write(p)
}

// Flush flushes each event, as the server's writer does: mcp-go streams
// only through a writer that is an http.Flusher.
func (lw *listenWriter) Flush() {
	if f, ok := lw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer (go-sdk
// flushes every event through it).
func (lw *listenWriter) Unwrap() http.ResponseWriter { return lw.ResponseWriter }

// ended takes the stream out of Stats.Listening once its request ended.
func (lw *listenWriter) ended() {
	if !lw.acked {
		return
	}
	lw.s.mu.Lock()
	lw.s.stats.Listening--
	lw.s.mu.Unlock()
}

// countCall records a tool invocation.
func (s *Server) countCall(name string) {
	s.mu.Lock()
	s.stats.Calls[name]++
	s.mu.Unlock()
}
