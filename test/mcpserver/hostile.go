package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
)

// HostileOptions shapes the catalog an amplifying server offers.
type HostileOptions struct {
	// Pages is how many tools/list pages the server announces. Default 100.
	Pages int
	// PageBytes is roughly how large each page's body is. Default just
	// under 2 MiB, the client's read cap.
	PageBytes int
	// ToolBytes is roughly how large one tool definition is. Default 96
	// KiB: under the normaliser's schema limit, so every definition is
	// valid and kept, and about twenty to a page, so that 100 pages stay
	// within the API's default tool ceiling of 2,000.
	ToolBytes int
	// Depth is how deeply each input schema nests objects. Default 24.
	Depth int
}

// Hostile is an MCP server whose catalog is built to make a client hold as
// much as possible: many pages near the read cap, each tool a deep schema
// whose every nested property carries a long description. Those are exactly
// what normalisation keeps, so the stored size is close to the sent size.
//
// It is written by hand, not with an SDK, so that it generates each page as
// it writes it and holds none of them: in a benchmark that measures the heap
// of its own process, only the client's memory shows.
type Hostile struct {
	// URL is the MCP endpoint.
	URL string

	opts    HostileOptions
	srv     *httptest.Server
	pages   atomic.Int64
	perPage int
}

// StartHostile starts an amplifying server, closed when the test ends.
func StartHostile(t TB, opts HostileOptions) *Hostile {
	t.Helper()
	if opts.Pages <= 0 {
		opts.Pages = 100
	}
	if opts.PageBytes <= 0 {
		opts.PageBytes = 2<<20 - 64<<10
	}
	if opts.ToolBytes <= 0 {
		opts.ToolBytes = 96 << 10
	}
	if opts.Depth <= 0 {
		opts.Depth = 24
	}
	h := &Hostile{opts: opts}
	// Measure one definition, so that a page stays under PageBytes.
	var size countingWriter
	h.writeTool(&size, 9999, 99)
	h.perPage = max(1, (opts.PageBytes-256)/(int(size)+1))
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	h.URL = h.srv.URL + Path
	t.Cleanup(h.srv.Close)
	return h
}

// PagesServed counts the tools/list pages written so far.
func (h *Hostile) PagesServed() int { return int(h.pages.Load()) }

// ToolsPerPage is how many tools one page carries.
func (h *Hostile) ToolsPerPage() int { return h.perPage }

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

func (h *Hostile) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	switch req.Method {
	case "initialize":
		writeResult(w, req.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"amplifier","version":"1"}}`)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		page, _ := strconv.Atoi(req.Params.Cursor)
		h.writePage(w, req.ID, page)
	default:
		// Answers server/discover (and anything else) as a server of the
		// initialize era does, so clients fall back to initialize.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
	}
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

// writePage streams page n; the cursor of the next page is its number.
func (h *Hostile) writePage(w http.ResponseWriter, id json.RawMessage, n int) {
	h.pages.Add(1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[`, id)
	for i := range h.ToolsPerPage() {
		if i > 0 {
			_, _ = io.WriteString(w, ",")
		}
		h.writeTool(w, n, i)
	}
	_, _ = io.WriteString(w, "]")
	if n+1 < h.opts.Pages {
		fmt.Fprintf(w, `,"nextCursor":"%d"`, n+1)
	}
	_, _ = io.WriteString(w, "}}")
}

// writeTool writes one definition of about ToolBytes: a chain of Depth
// nested objects, each level with a few string properties whose
// descriptions share the remaining bytes.
func (h *Hostile) writeTool(w io.Writer, page, i int) {
	const fanout = 4
	per := max(16, h.opts.ToolBytes/(h.opts.Depth*fanout))
	const phrase = "a long description that survives normalisation; "
	filler := strings.Repeat(phrase, per/len(phrase)+1)[:per]
	fmt.Fprintf(w, `{"name":"bloat_%04d_%02d","description":%q,"inputSchema":`, page, i, filler)
	for d := range h.opts.Depth {
		fmt.Fprintf(w, `{"type":"object","description":%q,"properties":{`, filler)
		for p := range fanout - 1 {
			fmt.Fprintf(w, `"field_%d":{"type":"string","description":%q},`, p, filler)
		}
		if d == h.opts.Depth-1 {
			fmt.Fprintf(w, `"leaf":{"type":"string","description":%q}`, filler)
		} else {
			_, _ = io.WriteString(w, `"next":`)
		}
	}
	for range h.opts.Depth {
		_, _ = io.WriteString(w, "}}")
	}
	_, _ = io.WriteString(w, "}")
}
