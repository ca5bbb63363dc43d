package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// decodePage is one tools/list result of just under mcp.MaxBodyBytes once
// framed as an event stream, and the JSON-RPC message inside it.
type decodePage struct {
	framed  []byte // "event: message\ndata: <message>\n\n"
	message []byte
	tools   int
}

// buildDecodePage generates tools shaped like real ones (title,
// description, a schema with a few typed and described properties, an
// enum, required, annotations) until the framed page reaches the body cap.
func buildDecodePage() decodePage {
	var tools []json.RawMessage
	size := 0
	const frame = len("event: message\ndata: ") + len("\n\n")
	envelope := func(ts []json.RawMessage) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "ID", "result": map[string]any{"tools": ts}})
		return b
	}
	for i := 1; ; i++ {
		t, _ := json.Marshal(map[string]any{
			"name":        fmt.Sprintf("search_tickets_%05d", i),
			"title":       fmt.Sprintf("Search tickets (%d)", i),
			"description": "Searches the ticket system for tickets matching a query, newest first. " + strings.Repeat("Returns at most limit tickets. ", 2),
			"inputSchema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query":  map[string]any{"type": "string", "description": "Free-text query.", "minLength": 1},
					"limit":  map[string]any{"type": "integer", "description": "Largest number of tickets to return.", "default": 20},
					"status": map[string]any{"type": "string", "enum": []string{"open", "pending", "closed"}},
					"labels": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				},
				"required":             []string{"query"},
				"additionalProperties": false,
			},
			"annotations": map[string]any{"readOnlyHint": true, "openWorldHint": false},
		})
		// +1 for the separating comma.
		if frame+size+len(t)+1+len(envelope(nil)) > mcp.MaxBodyBytes {
			break
		}
		tools = append(tools, t)
		size += len(t) + 1
	}
	msg := envelope(tools)
	framed := append(append([]byte("event: message\ndata: "), msg...), "\n\n"...)
	return decodePage{framed: framed, message: msg, tools: len(tools)}
}

// pageServer answers our client in memory, as a legacy server without
// sessions: initialize, notifications/initialized, then tools/list with
// the page. No sockets: what is measured is the client's reading of it.
type pageServer struct{ page decodePage }

func (p *pageServer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	var msg struct {
		ID     string `json:"id"`
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Request: req, Body: http.NoBody}
	switch msg.Method {
	case "server/discover":
		// A legacy server's answer to a modern request.
		resp.StatusCode = http.StatusBadRequest
	case "initialize":
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":"` + msg.ID + `","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"page","version":"1"}}}`))
	case "notifications/initialized":
		resp.StatusCode = http.StatusAccepted
	case "tools/list":
		// The page carries the id "ID"; the client's id is put in place
		// by reading the page around it, without copying it: the
		// server's allocations would otherwise count as the client's.
		i := bytes.Index(p.page.framed, []byte(`"id":"ID"`))
		resp.Header.Set("Content-Type", "text/event-stream")
		resp.Body = io.NopCloser(io.MultiReader(
			bytes.NewReader(p.page.framed[:i]),
			strings.NewReader(`"id":"`+msg.ID+`"`),
			bytes.NewReader(p.page.framed[i+len(`"id":"ID"`):]),
		))
	default:
		resp.StatusCode = http.StatusBadRequest
	}
	return resp, nil
}

// BenchmarkDecode reads one 2 MiB event-stream tools/list page through our
// client (handshake legs included, answered from memory; SSE framing, the
// strict JSON-RPC checks, per-tool validation, schema normalisation) and,
// as the baseline, decodes the same JSON-RPC message with one
// json.Unmarshal into a struct holding []mcp.Tool. Throughput is page bytes
// per second.
func BenchmarkDecode(b *testing.B) {
	page := buildDecodePage()
	b.Run("baseline", func(b *testing.B) {
		b.SetBytes(int64(len(page.framed)))
		b.ReportAllocs()
		for b.Loop() {
			var m struct {
				Result struct {
					Tools []mcp.Tool `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(page.message, &m); err != nil {
				b.Fatal(err)
			}
			if len(m.Result.Tools) != page.tools {
				b.Fatalf("%d tools", len(m.Result.Tools))
			}
		}
		b.ReportMetric(float64(page.tools), "tools/page")
	})
	b.Run("ours", func(b *testing.B) {
		c := mcp.New(mcp.Options{HTTPClient: &http.Client{Transport: &pageServer{page: page}}})
		ep := mcp.Endpoint{Name: "page", URL: "http://page.invalid/mcp"}
		run := func() {
			cat, err := c.ListTools(b.Context(), ep)
			if err != nil {
				b.Fatal(err)
			}
			if len(cat.Tools) != page.tools {
				b.Fatalf("%d tools (%d skipped)", len(cat.Tools), len(cat.Skipped))
			}
		}
		run() // era detection, once per origin in the operator
		b.SetBytes(int64(len(page.framed)))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			run()
		}
		b.ReportMetric(float64(page.tools), "tools/page")
	})
}
