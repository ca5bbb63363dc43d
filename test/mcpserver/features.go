package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The prompts, resources and templates of a FeatureServer, by default.
const (
	PromptReview   = "review_code"
	ResourceReadme = "docs://readme"
	ResourceBig    = "docs://big"
	TemplateFile   = "docs://files/{name}"
	ResourceApp    = "ui://dashboard/main"
	AppMimeType    = "text/html;profile=mcp-app"
)

// FeatureServer is a go-sdk MCP server that offers prompts, resources, a
// resource template and an MCP Apps ui:// resource besides one tool, and
// whose texts and contents a test changes while it runs.
type FeatureServer struct {
	// URL is the MCP endpoint.
	URL string

	srv     *mcp.Server
	hs      *httptest.Server
	handler http.Handler

	mu       sync.Mutex
	reads    map[string]int
	gets     int
	texts    map[string]string
	bigBytes int
}

// StartFeatures starts a FeatureServer, closed when the test ends. It
// keeps no sessions. bigBytes is the size of ResourceBig's text.
func StartFeatures(t TB, bigBytes int) *FeatureServer {
	t.Helper()
	f := &FeatureServer{reads: map[string]int{}, bigBytes: bigBytes, texts: map[string]string{
		ResourceReadme: "The readme.",
		ResourceApp:    "<html><body>dashboard</body></html>",
	}}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "features", Version: "1.0.0"}, nil)
	mcp.AddTool(f.srv, &mcp.Tool{Name: "ping", Description: "Answers pong."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	f.SetPrompt("Reviews code for bugs.")
	f.srv.AddResource(&mcp.Resource{URI: ResourceReadme, Name: "readme", Description: "The project's readme.", MIMEType: "text/plain"}, f.read)
	f.srv.AddResource(&mcp.Resource{URI: ResourceBig, Name: "big", Description: "A large document.", MIMEType: "text/plain"}, f.read)
	f.srv.AddResource(&mcp.Resource{URI: ResourceApp, Name: "dashboard", Description: "The dashboard app.", MIMEType: AppMimeType}, f.read)
	f.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateFile, Name: "file", Description: "A file of the docs.", MIMEType: "text/plain"}, f.read)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	f.handler = h
	f.hs = httptest.NewServer(h)
	f.URL = f.hs.URL + Path
	t.Cleanup(f.hs.Close)
	return f
}

// Handler serves the MCP endpoint, for a test that puts something in
// front of it (an authorization check) at an address of its own.
func (f *FeatureServer) Handler() http.Handler { return f.handler }

// SetPrompt offers PromptReview with description (replacing it).
func (f *FeatureServer) SetPrompt(description string) {
	f.srv.AddPrompt(&mcp.Prompt{Name: PromptReview, Description: description, Arguments: []*mcp.PromptArgument{{Name: "language", Description: "The language of the code.", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			f.mu.Lock()
			f.gets++
			f.mu.Unlock()
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Review this " + req.Params.Arguments["language"] + " code."}}}}, nil
		})
}

// RemovePrompt stops offering PromptReview.
func (f *FeatureServer) RemovePrompt() { f.srv.RemovePrompts(PromptReview) }

// SetContent changes the text a resource's reads return.
func (f *FeatureServer) SetContent(uri, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.texts[uri] = text
}

// Reads is how many times uri was read; Gets how many prompts/get.
func (f *FeatureServer) Reads(uri string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[uri]
}

// Gets is how many prompts/get the server answered.
func (f *FeatureServer) Gets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

func (f *FeatureServer) read(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	f.mu.Lock()
	f.reads[uri]++
	text, ok := f.texts[uri]
	f.mu.Unlock()
	switch {
	case uri == ResourceBig:
		text, ok = strings.Repeat("x", f.bigBytes), true
	case strings.HasPrefix(uri, "docs://files/"):
		text, ok = fmt.Sprintf("the file %s", strings.TrimPrefix(uri, "docs://files/")), true
	}
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	mime := "text/plain"
	if strings.HasPrefix(uri, "ui://") {
		mime = AppMimeType
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}, nil
}

// RemoveResource stops offering the resource uri.
func (f *FeatureServer) RemoveResource(uri string) { f.srv.RemoveResources(uri) }

// RemoveContent makes reads of uri fail with the spec's resource-not-found
// error, while the server still lists it.
func (f *FeatureServer) RemoveContent(uri string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.texts, uri)
}
