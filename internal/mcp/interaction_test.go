package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The client declares elicitation and sampling, so that a server which
// lists some tools only to such clients lists them to the import; it
// grants none of their requests by itself (ADR 064).

// The TypeScript reference server registers its elicitation and sampling
// tools only for a client declaring those capabilities: the import lists
// them, and a call of them, made by the client alone, is declined.
func TestEverythingListsItsInteractionTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	srv, err := tsagent.StartEverything(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ep := mcp.Endpoint{Name: "everything", URL: srv.URL, AllowPrivateNetwork: true, Timeout: 20 * time.Second}
	cl := newClient()

	cat, err := cl.ListTools(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range cat.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{tsagent.EverythingEcho, "trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request"} {
		if !slices.Contains(names, want) {
			t.Errorf("the import does not list %q; it lists %v", want, names)
		}
	}

	out, err := cl.CallTool(ctx, ep, "trigger-elicitation-request", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Text, "declined") {
		t.Errorf("the elicitation was not declined: %q", out.Text)
	}
	out, err = cl.CallTool(ctx, ep, "trigger-sampling-request", map[string]any{"prompt": "hello"})
	if err == nil && strings.Contains(out.Text, "sampling result") && !out.IsError {
		t.Errorf("a sampling request was granted: %q", out.Text)
	}
}

// A go-sdk server with sessions asks for input during a call: it sees the
// client's declaration, and its requests are refused (the elicitation
// declined, the sampling request an error), in the call's own session.
func TestServerRequestsRefused(t *testing.T) {
	var (
		mu       sync.Mutex
		declared *sdk.ClientCapabilities
		elicited *sdk.ElicitResult
		urlErr   error
		sampled  error
	)
	s := sdk.NewServer(&sdk.Implementation{Name: "asks", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		mu.Lock()
		defer mu.Unlock()
		declared = req.Session.InitializeParams().Capabilities
		var err error
		elicited, err = req.Session.Elicit(ctx, &sdk.ElicitParams{
			Message:         "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			return nil, nil, err
		}
		_, urlErr = req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "sign in", URL: "https://example.com/sign-in", ElicitationID: "e1"})
		_, sampled = req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}}) //nolint:staticcheck // deprecated in 2026-07-28, still what servers of the initialize era send
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(hs.Close)
	ep := mcp.Endpoint{Name: "asks", URL: hs.URL, AllowPrivateNetwork: true, Timeout: 20 * time.Second}

	out, err := newClient().CallTool(t.Context(), ep, "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "done" {
		t.Fatalf("the call answered %q", out.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	//nolint:staticcheck // sampling is deprecated in 2026-07-28, still declared for servers of the initialize era
	if declared == nil || declared.Elicitation == nil || declared.Elicitation.Form == nil || declared.Elicitation.URL == nil || declared.Sampling == nil {
		t.Fatalf("the client declared %+v, want elicitation (form, url) and sampling", declared)
	}
	if elicited == nil || elicited.Action != "decline" || elicited.Content != nil {
		t.Errorf("the form elicitation was answered %+v, want declined", elicited)
	}
	if urlErr != nil {
		t.Errorf("the URL elicitation failed rather than being declined: %v", urlErr)
	}
	if sampled == nil {
		t.Error("the sampling request was granted")
	}
}
