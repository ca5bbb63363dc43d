package authz

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz/authztest"
)

// An answer is reviewed once while it is remembered, allowed and denied
// apart, each for its own TTL; a review that failed is not remembered,
// and a caller who differs in any attribute the review sends is reviewed
// on its own.
func TestAccessAnswersAreRememberedPerReviewForTheirTTL(t *testing.T) {
	sars := &authztest.SARServer{Allow: map[string]bool{"allowed": true}}
	hs := httptest.NewServer(sars)
	defer hs.Close()
	c, err := authorizationv1client.NewForConfig(&rest.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	const allowTTL, denyTTL = time.Minute, 10 * time.Second
	a := &SubjectAccessReviewAuthorizer{Client: c, AllowTTL: allowTTL, DenyTTL: denyTTL}
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now())
	rememberBy(a, "team", clk)
	bot := &authn.Identity{Username: "system:serviceaccount:team:bot", UID: "u1", Groups: []string{"system:serviceaccounts"},
		Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"bot-0"}}, Namespace: "team", ServiceAccount: "bot"}
	can := func(id *authn.Identity, tool string, want bool) {
		t.Helper()
		ok, err := a.CanCall(ctx, id, "team", tool)
		if err != nil || ok != want {
			t.Fatalf("%s calling %s: %v, %v; want %v", id.Username, tool, ok, err, want)
		}
	}
	reviewed := func(want int, why string) {
		t.Helper()
		if got := sars.Count(); got != want {
			t.Fatalf("%s: %d reviews, want %d", why, got, want)
		}
	}

	can(bot, "allowed", true)
	can(bot, "allowed", true)
	can(bot, "denied", false)
	can(bot, "denied", false)
	reviewed(2, "one review per answer")

	// Every attribute of the review is in its key.
	other := *bot
	other.Extra = map[string][]string{"authentication.kubernetes.io/pod-name": {"bot-1"}}
	can(&other, "allowed", true)
	other = *bot
	other.Groups = []string{"system:serviceaccounts", "extra"}
	can(&other, "allowed", true)
	other = *bot
	other.UID = "u2"
	can(&other, "allowed", true)
	ok, err := a.CanCall(ctx, bot, "elsewhere", "allowed")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	reviewed(6, "callers differing in one attribute each, and another namespace")

	// A denial is remembered for its TTL and forgotten after it; an
	// allowance outlives it, for its own TTL.
	clk.Step(denyTTL - time.Millisecond)
	can(bot, "denied", false)
	reviewed(6, "a denial within its TTL")
	clk.Step(2 * time.Millisecond)
	can(bot, "denied", false)
	can(bot, "allowed", true)
	reviewed(7, "a denial past its TTL, an allowance within its own")
	clk.Step(allowTTL - denyTTL)
	can(bot, "allowed", true)
	reviewed(8, "an allowance past its TTL")

	// A failed review is an error, and is not remembered.
	sars.SetFailing(true)
	if _, err := a.CanCall(ctx, bot, "team", "new"); err == nil {
		t.Fatal("a review that failed answered")
	}
	sars.SetFailing(false)
	can(bot, "new", false)
	reviewed(9, "a review after a failed one")
}

// rememberBy makes a remember the answers for the callers of namespace
// by clk's time rather than the wall clock's.
func rememberBy(a *SubjectAccessReviewAuthorizer, namespace string, clk cache.Clock) {
	a.space(namespace).answers = cache.NewLRUExpireCacheWithClock(maxAccessAnswers, clk)
}

// No two reviews share a key: fields are length-prefixed.
func TestAccessKeysDoNotCollide(t *testing.T) {
	ids := []struct {
		id        authn.Identity
		ns, tool  string
		different string
	}{
		{authn.Identity{Username: "a", Groups: []string{"bc"}}, "n", "t", "base"},
		{authn.Identity{Username: "a", Groups: []string{"b", "c"}}, "n", "t", "groups split"},
		{authn.Identity{Username: "ab", Groups: []string{"c"}}, "n", "t", "name and group"},
		{authn.Identity{Username: "a", Groups: []string{"bc"}}, "nt", "", "namespace and tool"},
		{authn.Identity{Username: "a", Groups: []string{"bc"}, Extra: map[string][]string{"k": {"v"}}}, "n", "t", "extra"},
		{authn.Identity{Username: "a", Groups: []string{"bc"}, Extra: map[string][]string{"k": {"v", ""}}}, "n", "t", "extra value"},
		{authn.Identity{Username: "a", Groups: []string{"bc"}, Extra: map[string][]string{"k": {}}}, "n", "t", "extra empty"},
		{authn.Identity{Username: "a", UID: "x", Groups: []string{"bc"}}, "n", "t", "uid"},
	}
	seen := map[string]string{}
	for _, c := range ids {
		k := accessKey(&c.id, c.ns, c.tool)
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s share the key %q", prev, c.different, k)
		}
		seen[k] = c.different
	}
}
