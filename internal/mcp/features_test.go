package mcp_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// ListFeatures, GetPrompt and ReadResource against real servers: the
// go-sdk (stateless, both eras) and mcp-go (with sessions).

func TestListFeaturesFromTheGoSDK(t *testing.T) {
	up := mcpserver.StartFeatures(t, 64)
	c := mcp.New(mcp.Options{AllowPrivateNetworks: true})
	ep := mcp.Endpoint{Name: "ns/docs", URL: up.URL}
	f, err := c.ListFeatures(t.Context(), ep)
	if err != nil {
		t.Fatalf("ListFeatures: %v", err)
	}
	if !f.PromptsOffered || !f.ResourcesOffered {
		t.Fatalf("capabilities not seen: %+v", f.Probe.Capabilities)
	}
	if len(f.Prompts) != 1 || f.Prompts[0].Name != mcpserver.PromptReview || len(f.Prompts[0].Arguments) != 1 || !f.Prompts[0].Arguments[0].Required {
		t.Fatalf("prompts = %+v", f.Prompts)
	}
	uris := map[string]mcp.Resource{}
	for _, r := range f.Resources {
		uris[r.URI] = r
	}
	if len(uris) != 3 {
		t.Fatalf("resources = %+v", f.Resources)
	}
	app := uris[mcpserver.ResourceApp]
	if !app.App() || !strings.HasPrefix(app.ContentHash, "sha256:") {
		t.Fatalf("the ui:// resource is not hashed: %+v", app)
	}
	if uris[mcpserver.ResourceReadme].ContentHash != "" {
		t.Fatal("a resource that is not an app is not read at import")
	}
	if up.Reads(mcpserver.ResourceReadme) != 0 || up.Reads(mcpserver.ResourceApp) != 1 {
		t.Fatalf("reads: readme %d, app %d", up.Reads(mcpserver.ResourceReadme), up.Reads(mcpserver.ResourceApp))
	}
	if len(f.Templates) != 1 || f.Templates[0].URITemplate != mcpserver.TemplateFile {
		t.Fatalf("templates = %+v", f.Templates)
	}

	got, err := c.GetPrompt(t.Context(), ep, mcpserver.PromptReview, map[string]string{"language": "Go"})
	if err != nil || !strings.Contains(string(got), "Review this Go code.") {
		t.Fatalf("GetPrompt = %s, %v", got, err)
	}
	read, err := c.ReadResource(t.Context(), ep, "docs://files/a.md", 0)
	if err != nil || !strings.Contains(string(read), "the file a.md") {
		t.Fatalf("ReadResource of a template's URI = %s, %v", read, err)
	}
	// The app's content reads as it was hashed.
	read, err = c.ReadResource(t.Context(), ep, mcpserver.ResourceApp, 0)
	if sum, ok := mcp.ContentDigest(read); err != nil || !ok || sum != app.ContentHash {
		t.Fatalf("the app's content digest %s, %v, want %s", sum, err, app.ContentHash)
	}
}

func TestReadResourceRefusesMoreThanItsBound(t *testing.T) {
	up := mcpserver.StartFeatures(t, 8<<10)
	c := mcp.New(mcp.Options{AllowPrivateNetworks: true})
	ep := mcp.Endpoint{Name: "ns/docs", URL: up.URL}
	_, err := c.ReadResource(t.Context(), ep, mcpserver.ResourceBig, 4<<10)
	var e *mcp.Error
	if !errors.As(err, &e) || e.Kind != mcp.KindOversized {
		t.Fatalf("err = %v, want %s", err, mcp.KindOversized)
	}
	if _, err := c.ReadResource(t.Context(), ep, mcpserver.ResourceBig, 16<<10); err != nil {
		t.Fatalf("a read within the bound: %v", err)
	}
}

func TestListFeaturesFromMCPGo(t *testing.T) {
	s := mgoserver.NewMCPServer("features", "1.0.0", mgoserver.WithToolCapabilities(false),
		mgoserver.WithPromptCapabilities(false), mgoserver.WithResourceCapabilities(false, false))
	s.AddPrompt(mgomcp.NewPrompt("summarise", mgomcp.WithPromptDescription("Summarises a text."),
		mgomcp.WithArgument("text", mgomcp.RequiredArgument(), mgomcp.ArgumentDescription("The text."))),
		func(context.Context, mgomcp.GetPromptRequest) (*mgomcp.GetPromptResult, error) {
			return &mgomcp.GetPromptResult{Messages: []mgomcp.PromptMessage{mgomcp.NewPromptMessage(mgomcp.RoleUser, mgomcp.NewTextContent("Summarise."))}}, nil
		})
	s.AddResource(mgomcp.NewResource("ui://widget", "widget", mgomcp.WithMIMEType(mcpserver.AppMimeType)),
		func(_ context.Context, req mgomcp.ReadResourceRequest) ([]mgomcp.ResourceContents, error) {
			return []mgomcp.ResourceContents{mgomcp.TextResourceContents{URI: req.Params.URI, MIMEType: mcpserver.AppMimeType, Text: "<p>widget</p>"}}, nil
		})
	hs := httptest.NewServer(mgoserver.NewStreamableHTTPServer(s, mgoserver.WithStateful(true)))
	t.Cleanup(hs.Close)
	c := mcp.New(mcp.Options{AllowPrivateNetworks: true})
	f, err := c.ListFeatures(t.Context(), mcp.Endpoint{Name: "ns/mgo", URL: hs.URL + "/mcp"})
	if err != nil {
		t.Fatalf("ListFeatures: %v", err)
	}
	if len(f.Prompts) != 1 || f.Prompts[0].Name != "summarise" || f.Prompts[0].Description != "Summarises a text." {
		t.Fatalf("prompts = %+v", f.Prompts)
	}
	if len(f.Resources) != 1 || !f.Resources[0].App() || f.Resources[0].ContentHash == "" {
		t.Fatalf("resources = %+v", f.Resources)
	}
}

func TestContentDigestIgnoresEncoding(t *testing.T) {
	a, ok1 := mcp.ContentDigest([]byte(`{"contents":[{"uri":"ui://a","mimeType":"text/html","text":"<p>"}]}`))
	b, ok2 := mcp.ContentDigest([]byte(`{"contents":[{"text":"\u003cp>","mimeType":"text/html","uri":"ui://a"}]}`))
	c, _ := mcp.ContentDigest([]byte(`{"contents":[{"uri":"ui://a","mimeType":"text/html","text":"<p >"}]}`))
	if !ok1 || !ok2 || a != b || a == c {
		t.Fatalf("digests %s %s %s", a, b, c)
	}
	if _, ok := mcp.ContentDigest([]byte(`{"contents":[{"uri":"x","blob":"not base64!"}]}`)); ok {
		t.Fatal("a blob that is not base64 has no digest")
	}
}

func TestListFeaturesKeepsAnAppItCannotReadWithoutAHash(t *testing.T) {
	up := mcpserver.StartFeatures(t, 0)
	// An app the server fails to read: the import goes on without its hash.
	up.RemoveContent(mcpserver.ResourceApp)
	c := mcp.New(mcp.Options{AllowPrivateNetworks: true})
	f, err := c.ListFeatures(t.Context(), mcp.Endpoint{Name: "ns/docs", URL: up.URL})
	if err != nil {
		t.Fatalf("ListFeatures: %v", err)
	}
	for _, r := range f.Resources {
		if r.App() && r.ContentHash != "" {
			t.Fatalf("an app that could not be read has a content hash: %+v", r)
		}
	}
	if len(f.Prompts) != 1 || len(f.Resources) != 3 {
		t.Fatalf("the rest is imported: %d prompts, %d resources", len(f.Prompts), len(f.Resources))
	}
}
