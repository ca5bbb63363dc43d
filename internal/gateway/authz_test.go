package gateway

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// sarAuthorizer is a SubjectAccessReviewAuthorizer reviewing at sars.
func sarAuthorizer(t *testing.T, sars *sarServer, edit func(*SubjectAccessReviewAuthorizer)) *SubjectAccessReviewAuthorizer {
	t.Helper()
	hs := httptest.NewServer(sars)
	t.Cleanup(hs.Close)
	// No client-side limit: the authorizer's own shares are under test.
	c, err := authorizationv1client.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	a := &SubjectAccessReviewAuthorizer{Client: c}
	if edit != nil {
		edit(a)
	}
	return a
}

// A caller granted every tool of its namespace lists hundreds of tools
// at the cost of one review, however many of its lists run at once: a
// namespace of 600 tools made 600 reviews per identity before.
func TestAListCostsOneReviewPerIdentity(t *testing.T) {
	sars := &sarServer{allow: map[string]bool{"": true}}
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
	if got := sars.count(); got != 1 {
		t.Errorf("16 lists of 600 tools by one identity made %d reviews, want 1", got)
	}
	if spec := sars.reviews[0]; spec.ResourceAttributes.Name != "" || spec.ResourceAttributes.Verb != VerbCall {
		t.Errorf("the review asked %+v, want the verb on every McpTool", spec.ResourceAttributes)
	}

	// Granted by name only: each tool is reviewed, once.
	byName := &sarServer{allow: map[string]bool{listTool("t000", plainSchema).Name: true}}
	_, hs = listGateway(t, sarAuthorizer(t, byName, func(a *SubjectAccessReviewAuthorizer) {
		a.NamespaceBurst, a.AllowTTL, a.DenyTTL = 1<<20, time.Hour, time.Hour
	}), tools...)
	if a := postList(t, hs.URL, plainListBody("1")); countTools(a.body) != 1 {
		t.Fatalf("granted one tool by name: %d tools listed", countTools(a.body))
	}
	_ = postList(t, hs.URL, plainListBody("2"))
	if got := byName.count(); got != 601 {
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

// The answers remembered for one namespace's callers are theirs: another
// namespace reviewing thousands of tools evicts none of them.
func TestOneNamespaceCannotEvictAnothersAnswers(t *testing.T) {
	sars := &sarServer{allow: map[string]bool{"kept": true}}
	a := sarAuthorizer(t, sars, func(a *SubjectAccessReviewAuthorizer) {
		a.NamespaceBurst = 1 << 20
		a.AllowTTL = time.Hour
		a.DenyTTL = time.Hour
	})
	ctx := context.Background()
	calm := &Identity{Username: "system:serviceaccount:calm:bot", UID: "u1", Namespace: "calm", ServiceAccount: "bot"}
	noisy := &Identity{Username: "system:serviceaccount:noisy:bot", UID: "u2", Namespace: "noisy", ServiceAccount: "bot"}
	if ok, err := a.CanCall(ctx, calm, "calm", "kept"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for i := range maxAccessAnswers + 100 {
		if _, err := a.CanCall(ctx, noisy, "noisy", fmt.Sprintf("tool-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := sars.count()
	if ok, err := a.CanCall(ctx, calm, "calm", "kept"); err != nil || !ok || sars.count() != before {
		t.Errorf("the calm namespace's answer after the noisy one's %d reviews: %v, %v, %d more reviews; want it remembered", maxAccessAnswers+100, ok, err, sars.count()-before)
	}
}

// Each namespace's callers have their own share of reviews: one that has
// spent its share waits (and gives up with its request), while another
// namespace's callers are reviewed at once.
func TestReviewsAreSharedPerNamespace(t *testing.T) {
	sars := &sarServer{allow: map[string]bool{}}
	a := sarAuthorizer(t, sars, func(a *SubjectAccessReviewAuthorizer) { a.NamespaceRate = 0.001; a.NamespaceBurst = 3 })
	noisy := &Identity{Username: "system:serviceaccount:noisy:bot", Namespace: "noisy", ServiceAccount: "bot"}
	calm := &Identity{Username: "system:serviceaccount:calm:bot", Namespace: "calm", ServiceAccount: "bot"}
	for i := range 3 {
		if _, err := a.CanCall(context.Background(), noisy, "noisy", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.CanCall(ctx, noisy, "noisy", "fourth"); err == nil {
		t.Error("a fourth review past the namespace's share was made")
	}
	if _, err := a.CanCall(context.Background(), calm, "calm", "first"); err != nil {
		t.Errorf("another namespace's review while the first waits: %v", err)
	}
	if got := sars.count(); got != 4 {
		t.Errorf("%d reviews, want 4 (three of the noisy namespace's, one of the calm one's)", got)
	}
}
