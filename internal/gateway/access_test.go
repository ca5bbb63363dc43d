package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
)

// sarServer answers SubjectAccessReviews over HTTP, allowing the tools
// named in allow, and counts the reviews it answered.
type sarServer struct {
	mu      sync.Mutex
	allow   map[string]bool
	reviews []authorizationv1.SubjectAccessReviewSpec
	fail    bool
}

func (s *sarServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var sar authorizationv1.SubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		// Not retried by the authorizer: a 403 on the review itself.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
		return
	}
	s.reviews = append(s.reviews, sar.Spec)
	sar.Status.Allowed = s.allow[sar.Spec.ResourceAttributes.Name]
	sar.Status.Denied = !sar.Status.Allowed
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&sar)
}

func (s *sarServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reviews)
}

// An answer is reviewed once while it is remembered, allowed and denied
// apart, each for its own TTL; a review that failed is not remembered,
// and a caller who differs in any attribute the review sends is reviewed
// on its own.
func TestAccessAnswersAreRememberedPerReviewForTheirTTL(t *testing.T) {
	sars := &sarServer{allow: map[string]bool{"allowed": true}}
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
	bot := &Identity{Username: "system:serviceaccount:team:bot", UID: "u1", Groups: []string{"system:serviceaccounts"},
		Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"bot-0"}}, Namespace: "team", ServiceAccount: "bot"}
	can := func(id *Identity, tool string, want bool) {
		t.Helper()
		ok, err := a.CanCall(ctx, id, "team", tool)
		if err != nil || ok != want {
			t.Fatalf("%s calling %s: %v, %v; want %v", id.Username, tool, ok, err, want)
		}
	}
	reviewed := func(want int, why string) {
		t.Helper()
		if got := sars.count(); got != want {
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
	sars.mu.Lock()
	sars.fail = true
	sars.mu.Unlock()
	if _, err := a.CanCall(ctx, bot, "team", "new"); err == nil {
		t.Fatal("a review that failed answered")
	}
	sars.mu.Lock()
	sars.fail = false
	sars.mu.Unlock()
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
		id        Identity
		ns, tool  string
		different string
	}{
		{Identity{Username: "a", Groups: []string{"bc"}}, "n", "t", "base"},
		{Identity{Username: "a", Groups: []string{"b", "c"}}, "n", "t", "groups split"},
		{Identity{Username: "ab", Groups: []string{"c"}}, "n", "t", "name and group"},
		{Identity{Username: "a", Groups: []string{"bc"}}, "nt", "", "namespace and tool"},
		{Identity{Username: "a", Groups: []string{"bc"}, Extra: map[string][]string{"k": {"v"}}}, "n", "t", "extra"},
		{Identity{Username: "a", Groups: []string{"bc"}, Extra: map[string][]string{"k": {"v", ""}}}, "n", "t", "extra value"},
		{Identity{Username: "a", Groups: []string{"bc"}, Extra: map[string][]string{"k": {}}}, "n", "t", "extra empty"},
		{Identity{Username: "a", UID: "x", Groups: []string{"bc"}}, "n", "t", "uid"},
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
