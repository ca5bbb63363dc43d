package mcp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// rsServer is a small, real MCP server over net/http for end-to-end tests and
// benchmarks: the client's real dialer, HTTP stack, body reading and SSE
// decoding run against it on loopback. It speaks either the 2026-07-28 era
// or a legacy, session-issuing 2025-11-25 era, in JSON or SSE framing.
type rsServer struct {
	modern   bool
	sse      bool
	tools    []map[string]any
	pageSize int

	mu       sync.Mutex
	sessions map[string]bool
	next     int
}

func newRSServer(modern, sse bool, tools, pageSize int) *rsServer {
	s := &rsServer{modern: modern, sse: sse, pageSize: pageSize, sessions: map[string]bool{}}
	for i := range tools {
		s.tools = append(s.tools, map[string]any{
			"name":        fmt.Sprintf("tool_%04d", i),
			"description": "Looks things up.",
			"inputSchema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query": map[string]any{"type": "string", "description": "What to look up.", "minLength": 1},
					"limit": map[string]any{"type": "integer", "default": 10},
				},
				"required": []any{"query"},
			},
		})
	}
	return s
}

// start serves s on loopback for the test's lifetime.
func (s *rsServer) start(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	return srv
}

type rsMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Cursor    *string        `json:"cursor"`
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      map[string]any `json:"_meta"`
	} `json:"params"`
}

func (s *rsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete && !s.modern {
		s.mu.Lock()
		delete(s.sessions, r.Header.Get("Mcp-Session-Id"))
		s.mu.Unlock()
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m rsMessage
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if s.modern {
		s.serveModern(w, r, &m)
		return
	}
	s.serveLegacy(w, r, &m)
}

func (s *rsServer) serveModern(w http.ResponseWriter, r *http.Request, m *rsMessage) {
	v, _ := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
	if v != "2026-07-28" || r.Header.Get("MCP-Protocol-Version") != v {
		s.write(w, http.StatusBadRequest, m.ID, nil, map[string]any{"code": -32022, "message": "Unsupported protocol version",
			"data": map[string]any{"supported": []string{"2026-07-28"}, "requested": v}})
		return
	}
	switch m.Method {
	case "server/discover":
		s.write(w, http.StatusOK, m.ID, map[string]any{
			"resultType": "complete", "supportedVersions": []string{"2026-07-28"},
			"capabilities": map[string]any{"tools": map[string]any{}},
			"_meta":        map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "rs", "version": "1"}},
			"ttlMs":        0, "cacheScope": "public",
		}, nil)
	case "tools/list":
		res := s.page(m)
		res["resultType"] = "complete"
		s.write(w, http.StatusOK, m.ID, res, nil)
	case "tools/call":
		s.write(w, http.StatusOK, m.ID, map[string]any{"resultType": "complete", "content": s.callContent(m)}, nil)
	default:
		s.write(w, http.StatusNotFound, m.ID, nil, map[string]any{"code": -32601, "message": "Method not found"})
	}
}

func (s *rsServer) serveLegacy(w http.ResponseWriter, r *http.Request, m *rsMessage) {
	switch m.Method {
	case "server/discover":
		http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
		return
	case "initialize":
		s.mu.Lock()
		s.next++
		sid := "rs-session-" + strconv.Itoa(s.next)
		s.sessions[sid] = true
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		s.write(w, http.StatusOK, m.ID, map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "rs", "version": "1"},
		}, nil)
		return
	}
	s.mu.Lock()
	ok := s.sessions[r.Header.Get("Mcp-Session-Id")]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch m.Method {
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		s.write(w, http.StatusOK, m.ID, s.page(m), nil)
	case "tools/call":
		s.write(w, http.StatusOK, m.ID, map[string]any{"content": s.callContent(m)}, nil)
	default:
		s.write(w, http.StatusOK, m.ID, nil, map[string]any{"code": -32601, "message": "Method not found"})
	}
}

func (s *rsServer) page(m *rsMessage) map[string]any {
	start := 0
	if m.Params.Cursor != nil {
		start, _ = strconv.Atoi(*m.Params.Cursor)
	}
	end := min(start+s.pageSize, len(s.tools))
	res := map[string]any{"tools": s.tools[start:end]}
	if end < len(s.tools) {
		res["nextCursor"] = strconv.Itoa(end)
	}
	return res
}

func (s *rsServer) callContent(m *rsMessage) []any {
	return []any{
		map[string]any{"type": "text", "text": "called " + m.Params.Name + " with " + fmt.Sprint(m.Params.Arguments["query"])},
		map[string]any{"type": "image", "data": "aGk=", "mimeType": "image/png"},
	}
}

func (s *rsServer) write(w http.ResponseWriter, status int, id json.RawMessage, result, rpcErr map[string]any) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		msg["error"] = rpcErr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	if s.sse && status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// rsEras are the server variants the end-to-end tests and benchmarks use.
var rsEras = []struct {
	name        string
	modern, sse bool
}{
	{"legacy-session-json", false, false},
	{"legacy-session-sse", false, true},
	{"modern-json", true, false},
	{"modern-sse", true, true},
}

// TestRealHTTPOperations drives all three operations through the real HTTP
// stack and the SSRF-safe dialer (loopback allowed by the per-server opt-in).
func TestRealHTTPOperations(t *testing.T) {
	for _, e := range rsEras {
		t.Run(e.name, func(t *testing.T) {
			s := newRSServer(e.modern, e.sse, 25, 10)
			srv := s.start(t)
			cl := mcp.New(mcp.Options{Egress: loopbackEgress})
			ep := mcp.Endpoint{Name: "e2e/" + e.name, URL: srv.URL + "/mcp", AllowPrivateNetwork: true}
			p, err := cl.Probe(t.Context(), ep)
			if err != nil {
				t.Fatal(err)
			}
			confEqual(t, "capabilities", p.Capabilities, []string{"tools"})
			confEqual(t, "session issued", p.SessionIssued, !e.modern)
			c, err := cl.ListTools(t.Context(), ep)
			if err != nil {
				t.Fatal(err)
			}
			confEqual(t, "tools", len(c.Tools), 25)
			confEqual(t, "pages", c.Pages, 3)
			confEqual(t, "schema", string(c.Tools[7].InputSchema),
				`{"properties":{"limit":{"type":"integer"},"query":{"description":"What to look up.","type":"string"}},"required":["query"],"type":"object"}`)
			out, err := cl.CallTool(t.Context(), ep, "tool_0003", map[string]any{"query": "q"})
			if err != nil {
				t.Fatal(err)
			}
			confEqual(t, "text", out.Text, "[Note: 1 non-text content block dropped (1 image); only text is returned.]\ncalled tool_0003 with q")
			if !e.modern {
				s.mu.Lock()
				open := len(s.sessions)
				s.mu.Unlock()
				confEqual(t, "sessions left open", open, 0)
			}
		})
	}
}

// TestLoopbackNeedsOptIn: with the production dialer, a loopback server is
// refused unless the server or the manager opted in.
func TestLoopbackNeedsOptIn(t *testing.T) {
	srv := newRSServer(true, false, 1, 10).start(t)
	ep := mcp.Endpoint{Name: "local/blocked", URL: srv.URL}
	_, err := mcp.New(mcp.Options{}).Probe(t.Context(), ep)
	var e *mcp.Error
	if mcp.KindOf(err) != mcp.KindBlockedAddress || !errors.As(err, &e) {
		t.Fatalf("loopback without opt-in: %v", err)
	}
	var blocked *egress.BlockedAddressError
	if !errors.As(err, &blocked) || !blocked.Private {
		t.Fatalf("cause %v is not a private-address refusal", err)
	}
	if _, err := mcp.New(mcp.Options{AllowPrivateNetworks: true}).Probe(t.Context(), ep); err != nil {
		t.Fatalf("manager-wide opt-in: %v", err)
	}
	ep.AllowPrivateNetwork = true
	if _, err := mcp.New(mcp.Options{}).Probe(t.Context(), ep); mcp.KindOf(err) != mcp.KindBlockedAddress {
		t.Fatalf("per-server opt-in outside the administrator's ranges: %v", err)
	}
	if _, err := mcp.New(mcp.Options{Egress: loopbackEgress}).Probe(t.Context(), ep); err != nil {
		t.Fatalf("per-server opt-in within the administrator's ranges: %v", err)
	}
	// A hostname that resolves to loopback is refused the same way: the
	// check is on the resolved address, not on the name.
	ep.AllowPrivateNetwork = false
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ep.URL = "http://localhost:" + port
	if _, err := mcp.New(mcp.Options{}).Probe(t.Context(), ep); mcp.KindOf(err) != mcp.KindBlockedAddress {
		t.Fatalf("localhost without opt-in: %v", err)
	}
}

func TestUnreachableIsTyped(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	_, err := mcp.New(mcp.Options{AllowPrivateNetworks: true}).Probe(t.Context(), mcp.Endpoint{Name: "gone", URL: url})
	var e *mcp.Error
	if !errors.As(err, &e) || e.Kind != mcp.KindUnreachable || e.Detail != "connection refused" {
		t.Fatalf("closed port: %v", err)
	}
}

func benchmarkOperation(b *testing.B, op func(*mcp.Client, mcp.Endpoint) error) {
	for _, e := range rsEras {
		b.Run(e.name, func(b *testing.B) {
			srv := newRSServer(e.modern, e.sse, 120, 50).start(b)
			cl := mcp.New(mcp.Options{Egress: loopbackEgress})
			ep := mcp.Endpoint{Name: "bench", URL: srv.URL, AllowPrivateNetwork: true}
			b.ReportAllocs()
			for b.Loop() {
				if err := op(cl, ep); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkProbe(b *testing.B) {
	benchmarkOperation(b, func(cl *mcp.Client, ep mcp.Endpoint) error {
		_, err := cl.Probe(b.Context(), ep)
		return err
	})
}

func BenchmarkListTools(b *testing.B) {
	benchmarkOperation(b, func(cl *mcp.Client, ep mcp.Endpoint) error {
		c, err := cl.ListTools(b.Context(), ep)
		if err == nil && len(c.Tools) != 120 {
			err = fmt.Errorf("%d tools", len(c.Tools))
		}
		return err
	})
}

func BenchmarkCallTool(b *testing.B) {
	benchmarkOperation(b, func(cl *mcp.Client, ep mcp.Endpoint) error {
		_, err := cl.CallTool(b.Context(), ep, "tool_0001", map[string]any{"query": "q"})
		return err
	})
}
