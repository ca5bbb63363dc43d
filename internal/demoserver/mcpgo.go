package demoserver

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type mcpGo struct {
	server *server.MCPServer
	http   *server.StreamableHTTPServer
}

func newMCPGo(opts Options) *mcpGo {
	so := []server.ServerOption{server.WithToolCapabilities(true)}
	if opts.PageSize > 0 {
		so = append(so, server.WithPaginationLimit(opts.PageSize))
	}
	if opts.Title != "" {
		so = append(so, server.WithTitle(opts.Title))
	}
	srv := server.NewMCPServer(opts.Name, opts.Version, so...)

	ho := []server.StreamableHTTPOption{
		// The library logs to slog.Default otherwise; test output should
		// show the test's failures, not the peer's chatter.
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)),
	}
	if opts.Stateless {
		ho = append(ho, server.WithStateLess(true))
	} else {
		// The library's default issues ids without checking them; a
		// stateful peer that rejects an unknown id is the stricter test.
		ho = append(ho, server.WithStateful(true))
	}
	if opts.LegacyOnly {
		ho = append(ho, server.WithStreamableHTTPProtocolVersions(legacyVersions...))
	}
	return &mcpGo{server: srv, http: server.NewStreamableHTTPServer(srv, ho...)}
}

func (m *mcpGo) handler() http.Handler { return m.http }

func (m *mcpGo) put(specs ...toolSpec) {
	tools := make([]server.ServerTool, 0, len(specs))
	for _, sp := range specs {
		t := mcp.NewToolWithRawSchema(sp.name, sp.description, sp.schema)
		t.Title = sp.title
		if sp.readOnly {
			readOnly := true
			t.Annotations.ReadOnlyHint = &readOnly
		}
		run := sp.run
		tools = append(tools, server.ServerTool{Tool: t, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := run(ctx, req.GetArguments())
			res := &mcp.CallToolResult{IsError: r.isError}
			if r.image != nil {
				res.Content = append(res.Content, mcp.NewImageContent(base64.StdEncoding.EncodeToString(r.image), "image/png"))
			}
			res.Content = append(res.Content, mcp.NewTextContent(r.text))
			return res, nil
		}})
	}
	// One batch: AddTool per tool would send a list_changed notification
	// per tool to every session.
	m.server.AddTools(tools...)
}

func (m *mcpGo) remove(names ...string) { m.server.DeleteTools(names...) }

func (m *mcpGo) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.http.Shutdown(ctx)
}
