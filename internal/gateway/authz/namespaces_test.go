package authz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz/authztest"
)

// sarAuthorizer is a SubjectAccessReviewAuthorizer reviewing at sars.
func sarAuthorizer(t *testing.T, sars *authztest.SARServer, edit func(*SubjectAccessReviewAuthorizer)) *SubjectAccessReviewAuthorizer {
	t.Helper()
	a := &SubjectAccessReviewAuthorizer{Client: authztest.Client(t, sars)}
	if edit != nil {
		edit(a)
	}
	return a
}

// The answers remembered for one namespace's callers are theirs: another
// namespace reviewing thousands of tools evicts none of them.
func TestOneNamespaceCannotEvictAnothersAnswers(t *testing.T) {
	sars := &authztest.SARServer{Allow: map[string]bool{"kept": true}}
	a := sarAuthorizer(t, sars, func(a *SubjectAccessReviewAuthorizer) {
		a.NamespaceBurst = 1 << 20
		a.AllowTTL = time.Hour
		a.DenyTTL = time.Hour
	})
	ctx := context.Background()
	calm := &authn.Identity{Username: "system:serviceaccount:calm:bot", UID: "u1", Namespace: "calm", ServiceAccount: "bot"}
	noisy := &authn.Identity{Username: "system:serviceaccount:noisy:bot", UID: "u2", Namespace: "noisy", ServiceAccount: "bot"}
	if ok, err := a.CanCall(ctx, calm, "calm", "kept"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for i := range maxAccessAnswers + 100 {
		if _, err := a.CanCall(ctx, noisy, "noisy", fmt.Sprintf("tool-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := sars.Count()
	if ok, err := a.CanCall(ctx, calm, "calm", "kept"); err != nil || !ok || sars.Count() != before {
		t.Errorf("the calm namespace's answer after the noisy one's %d reviews: %v, %v, %d more reviews; want it remembered", maxAccessAnswers+100, ok, err, sars.Count()-before)
	}
}

// Each namespace's callers have their own share of reviews: one that has
// spent its share waits (and gives up with its request), while another
// namespace's callers are reviewed at once.
func TestReviewsAreSharedPerNamespace(t *testing.T) {
	sars := &authztest.SARServer{Allow: map[string]bool{}}
	a := sarAuthorizer(t, sars, func(a *SubjectAccessReviewAuthorizer) { a.NamespaceRate = 0.001; a.NamespaceBurst = 3 })
	noisy := &authn.Identity{Username: "system:serviceaccount:noisy:bot", Namespace: "noisy", ServiceAccount: "bot"}
	calm := &authn.Identity{Username: "system:serviceaccount:calm:bot", Namespace: "calm", ServiceAccount: "bot"}
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
	if got := sars.Count(); got != 4 {
		t.Errorf("%d reviews, want 4 (three of the noisy namespace's, one of the calm one's)", got)
	}
}
