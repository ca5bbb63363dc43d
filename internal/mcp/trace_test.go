package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// traceHeaders records the traceparent header of every HTTP request in
// front of a real server.
type traceHeaders struct {
	mu   sync.Mutex
	seen []string
	next http.Handler
}

func (h *traceHeaders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, r.Method+" "+r.Header.Get("traceparent"))
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Trace context goes with every request of a call's operation, the
// session's handshake and teardown included, and reports the revision
// spoken and the tools/call request's id. A value that could end a header
// line is not sent at all.
func TestCallToolSendsTraceContextOnEveryRequest(t *testing.T) {
	for _, tc := range []struct {
		name, traceparent string
		want              string
	}{
		{"valid", testTraceparent, testTraceparent},
		{"a header injection", testTraceparent + "\r\nX-Evil: 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A session-issuing server in the initialize era: four requests
			// (initialize, initialized, tools/call, DELETE).
			srv, err := mcpserver.New(mcpserver.Options{LegacyOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			rec := &traceHeaders{next: srv.Handler()}
			hs := httptest.NewServer(rec)
			defer hs.Close()
			c := mcp.New(mcp.Options{AllowPrivateNetworks: true})
			var info mcp.CallInfo
			out, err := c.CallTool(context.Background(), mcp.Endpoint{Name: "t", URL: hs.URL + mcpserver.Path}, mcpserver.ToolEcho,
				map[string]any{"text": "hi"}, mcp.WithTraceContext(mcp.TraceContext{Traceparent: tc.traceparent}), mcp.WithCallInfo(&info))
			if err != nil || out.Text != "hi" {
				t.Fatalf("CallTool = %v, %v", out, err)
			}
			if info.ProtocolVersion != "2025-11-25" || info.RequestID == "" {
				t.Errorf("CallInfo %+v: want the revision spoken and the request id", info)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.seen) < 4 {
				t.Fatalf("requests %q: want the whole session", rec.seen)
			}
			for _, s := range rec.seen {
				if method, got, _ := strings.Cut(s, " "); got != tc.want {
					t.Errorf("%s request carried traceparent %q, want %q", method, got, tc.want)
				}
			}
		})
	}
}
