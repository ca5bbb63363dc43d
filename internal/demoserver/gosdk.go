package demoserver

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyVersions are the initialize-era revisions both libraries implement.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// modernVersion is the stateless revision both libraries implement.
const modernVersion = "2026-07-28"

type goSDK struct {
	server *mcp.Server
	h      http.Handler
}

func newGoSDK(opts Options) *goSDK {
	so := &mcp.ServerOptions{
		PageSize: opts.PageSize,
		// Only tools: the default would also declare logging, and a
		// capability list that depends on the library's defaults makes
		// assertions about it brittle.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	}
	switch {
	case len(opts.ProtocolVersions) > 0:
		so.SupportedProtocolVersions = opts.ProtocolVersions
	case opts.LegacyOnly:
		so.SupportedProtocolVersions = legacyVersions
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: opts.Title, Version: opts.Version}, so)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    opts.Stateless,
		JSONResponse: opts.JSONResponse,
		// Without it a 2026-07-28 handler outlives the request its client
		// abandoned, and a cancellation test could not see the upstream stop.
		PropagateRequestCancellation: true,
	})
	return &goSDK{server: srv, h: h}
}

func (g *goSDK) handler() http.Handler { return g.h }

func (g *goSDK) put(specs ...toolSpec) {
	for _, sp := range specs {
		t := &mcp.Tool{
			Name:        sp.name,
			Title:       sp.title,
			Description: sp.description,
			InputSchema: sp.schema,
		}
		if sp.readOnly {
			t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		run := sp.run
		g.server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := map[string]any{}
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "arguments are not an object"}}}, nil
				}
			}
			r := run(ctx, args)
			res := &mcp.CallToolResult{IsError: r.isError}
			if r.image != nil {
				res.Content = append(res.Content, &mcp.ImageContent{Data: r.image, MIMEType: "image/png"})
			}
			res.Content = append(res.Content, &mcp.TextContent{Text: r.text})
			return res, nil
		})
	}
}

func (g *goSDK) remove(names ...string) { g.server.RemoveTools(names...) }

// close ends the sessions a stateful handler keeps, which also cancels
// their in-flight handlers.
func (g *goSDK) close() {
	for ss := range g.server.Sessions() {
		_ = ss.Close()
	}
}
