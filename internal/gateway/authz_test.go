package gateway

import (
	"fmt"
	"sync"
	"testing"
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/gateway/authz/authztest"
)

// sarAuthorizer is a SubjectAccessReviewAuthorizer reviewing at sars.
func sarAuthorizer(t *testing.T, sars *authztest.SARServer, edit func(*authz.SubjectAccessReviewAuthorizer)) *authz.SubjectAccessReviewAuthorizer {
	t.Helper()
	a := &authz.SubjectAccessReviewAuthorizer{Client: authztest.Client(t, sars)}
	if edit != nil {
		edit(a)
	}
	return a
}

// A caller granted every tool of its namespace lists hundreds of tools
// at the cost of one review, however many of its lists run at once: a
// namespace of 600 tools made 600 reviews per identity before.
func TestAListCostsOneReviewPerIdentity(t *testing.T) {
	sars := &authztest.SARServer{Allow: map[string]bool{"": true}}
	tools := make([]*mcpv1alpha1.McpTool, 0, 600)
	for i := range 600 {
		tools = append(tools, listTool(fmt.Sprintf("t%03d", i), plainSchema))
	}
	_, hs := listGateway(t, sarAuthorizer(t, sars, nil), tools...)
	var wg sync.WaitGroup
	answers := make([]listAnswer, 16)
	for i := range answers {
		wg.Go(func() { answers[i] = postList(t, hs.URL, plainListBody(fmt.Sprint(i+1))) })
	}
	wg.Wait()
	for i, a := range answers {
		if a.status != 200 || countTools(a.body) != 600 {
			t.Fatalf("list %d: %d with %d tools, want 600", i, a.status, countTools(a.body))
		}
	}
	if got := sars.Count(); got != 1 {
		t.Errorf("16 lists of 600 tools by one identity made %d reviews, want 1", got)
	}
	if spec := sars.Reviews[0]; spec.ResourceAttributes.Name != "" || spec.ResourceAttributes.Verb != authz.VerbCall {
		t.Errorf("the review asked %+v, want the verb on every McpTool", spec.ResourceAttributes)
	}

	// Granted by name only: each tool is reviewed, once.
	byName := &authztest.SARServer{Allow: map[string]bool{listTool("t000", plainSchema).Name: true}}
	_, hs = listGateway(t, sarAuthorizer(t, byName, func(a *authz.SubjectAccessReviewAuthorizer) {
		a.NamespaceBurst, a.AllowTTL, a.DenyTTL = 1<<20, time.Hour, time.Hour
	}), tools...)
	if a := postList(t, hs.URL, plainListBody("1")); countTools(a.body) != 1 {
		t.Fatalf("granted one tool by name: %d tools listed", countTools(a.body))
	}
	_ = postList(t, hs.URL, plainListBody("2"))
	if got := byName.Count(); got != 601 {
		t.Errorf("two lists granted by name made %d reviews, want 601 (every tool once, and every tool of the namespace once)", got)
	}
}

// countTools counts the tools of a list answer by their names.
func countTools(body string) int {
	n := 0
	for i := 0; i+len(`"name":"mcp_`) <= len(body); i++ {
		if body[i:i+len(`"name":"mcp_`)] == `"name":"mcp_` {
			n++
		}
	}
	return n
}
