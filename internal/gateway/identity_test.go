package gateway

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const aud = "mcp-catalog-gateway"

func review(authenticated bool, username string, audiences ...string) *authenticationv1.TokenReview {
	return &authenticationv1.TokenReview{Status: authenticationv1.TokenReviewStatus{
		Authenticated: authenticated,
		Audiences:     audiences,
		User: authenticationv1.UserInfo{
			Username: username, UID: "uid-1", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team"},
			Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"agent-0"}},
		},
	}}
}

func TestIdentityFromAcceptsAServiceAccountBoundToTheAudience(t *testing.T) {
	id := identityFrom(review(true, "system:serviceaccount:team:bot", "other", aud), aud)
	if id == nil {
		t.Fatal("rejected")
	}
	if id.Namespace != "team" || id.ServiceAccount != "bot" || id.Username != "system:serviceaccount:team:bot" || id.UID != "uid-1" {
		t.Errorf("identity = %+v", id)
	}
	if len(id.Groups) != 2 || id.Extra["authentication.kubernetes.io/pod-name"][0] != "agent-0" {
		t.Errorf("groups and extra not carried: %+v", id)
	}
}

func TestIdentityFromRejectsAnythingButAnAuthenticatedServiceAccountOfTheAudience(t *testing.T) {
	withError := review(true, "system:serviceaccount:team:bot", aud)
	withError.Status.Error = "token expired"
	for name, tr := range map[string]*authenticationv1.TokenReview{
		"unauthenticated":              review(false, "system:serviceaccount:team:bot", aud),
		"an error in the review":       withError,
		"no audience reported":         review(true, "system:serviceaccount:team:bot"),
		"another audience":             review(true, "system:serviceaccount:team:bot", "https://kubernetes.default.svc"),
		"an audience that only starts": review(true, "system:serviceaccount:team:bot", aud+"-other"),
		"a user":                       review(true, "alice", aud),
		"a node":                       review(true, "system:node:worker-1", aud),
		"an SA name without namespace": review(true, "system:serviceaccount::bot", aud),
		"an SA namespace without name": review(true, "system:serviceaccount:team:", aud),
		"an SA prefix alone":           review(true, "system:serviceaccount:team", aud),
	} {
		if id := identityFrom(tr, aud); id != nil {
			t.Errorf("%s: accepted as %+v", name, id)
		}
	}
}

// fakeReviews is an API server that answers TokenReviews and
// SubjectAccessReviews from functions, and counts them.
type fakeReviews struct {
	tokenReviews, accessReviews int
	lastTokenReview             authenticationv1.TokenReviewSpec
	lastAccessReview            authorizationv1.SubjectAccessReviewSpec
	tokenFn                     func(token string) (*authenticationv1.TokenReview, error)
	allowed                     bool
	accessErr                   error
}

func (f *fakeReviews) client() client.Client {
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			switch o := obj.(type) {
			case *authenticationv1.TokenReview:
				f.tokenReviews++
				f.lastTokenReview = o.Spec
				tr, err := f.tokenFn(o.Spec.Token)
				if err != nil {
					return err
				}
				o.Status = tr.Status
			case *authorizationv1.SubjectAccessReview:
				f.accessReviews++
				f.lastAccessReview = o.Spec
				if f.accessErr != nil {
					return f.accessErr
				}
				o.Status.Allowed = f.allowed
			default:
				return errors.New("unexpected create")
			}
			return nil
		},
	})
}

func TestTokenReviewAuthenticatorAsksForTheAudienceAndCachesOutcomes(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &fakeReviews{tokenFn: func(token string) (*authenticationv1.TokenReview, error) {
		if token == "good" {
			return review(true, "system:serviceaccount:team:bot", aud), nil
		}
		return review(false, ""), nil
	}}
	a := &TokenReviewAuthenticator{Client: f.client(), Audience: aud, TTL: 30 * time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()

	if _, err := a.Authenticate(ctx, ""); !errors.Is(err, ErrUnauthenticated) || f.tokenReviews != 0 {
		t.Fatalf("empty token: err %v after %d reviews; want ErrUnauthenticated after none", err, f.tokenReviews)
	}
	id, err := a.Authenticate(ctx, "good")
	if err != nil || id.ServiceAccount != "bot" {
		t.Fatalf("good token: %v, %v", id, err)
	}
	if got := f.lastTokenReview; got.Token != "good" || len(got.Audiences) != 1 || got.Audiences[0] != aud {
		t.Errorf("review spec = %+v, want the token and exactly the gateway's audience", got)
	}
	if _, err := a.Authenticate(ctx, "good"); err != nil || f.tokenReviews != 1 {
		t.Errorf("second use within the TTL: %v after %d reviews, want one review", err, f.tokenReviews)
	}
	if _, err := a.Authenticate(ctx, "bad"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("bad token: %v", err)
	}
	if _, err := a.Authenticate(ctx, "bad"); !errors.Is(err, ErrUnauthenticated) || f.tokenReviews != 2 {
		t.Errorf("bad token again: %v after %d reviews, want the refusal cached", err, f.tokenReviews)
	}
	now = now.Add(30 * time.Second)
	if _, err := a.Authenticate(ctx, "good"); err != nil || f.tokenReviews != 3 {
		t.Errorf("after the TTL: %v after %d reviews, want a new review", err, f.tokenReviews)
	}
}

func TestTokenReviewAuthenticatorDoesNotCacheAFailedReview(t *testing.T) {
	down := true
	f := &fakeReviews{tokenFn: func(string) (*authenticationv1.TokenReview, error) {
		if down {
			return nil, errors.New("the API server is unavailable")
		}
		return review(true, "system:serviceaccount:team:bot", aud), nil
	}}
	a := &TokenReviewAuthenticator{Client: f.client(), Audience: aud}
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, "good"); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("review failed: err %v, want an error that is not ErrUnauthenticated", err)
	}
	down = false
	if _, err := a.Authenticate(ctx, "good"); err != nil || f.tokenReviews != 2 {
		t.Fatalf("after the API came back: %v after %d reviews", err, f.tokenReviews)
	}
}

func TestSubjectAccessReviewAuthorizerAsksForVerbCallOnTheToolByName(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &fakeReviews{allowed: true}
	a := &SubjectAccessReviewAuthorizer{Client: f.client(), TTL: 30 * time.Second, Now: func() time.Time { return now }}
	id := identityFrom(review(true, "system:serviceaccount:team:bot", aud), aud)
	ctx := context.Background()
	ok, err := a.CanCall(ctx, id, "team", "docs.echo")
	if err != nil || !ok {
		t.Fatalf("CanCall = %v, %v", ok, err)
	}
	s := f.lastAccessReview
	ra := s.ResourceAttributes
	if s.User != id.Username || s.UID != "uid-1" || len(s.Groups) != 2 || s.Extra["authentication.kubernetes.io/pod-name"][0] != "agent-0" {
		t.Errorf("review names %q %q %v %v, want the caller's identity", s.User, s.UID, s.Groups, s.Extra)
	}
	if ra == nil || ra.Verb != "call" || ra.Group != "mcp.catalog.dev" || ra.Resource != "mcptools" || ra.Name != "docs.echo" || ra.Namespace != "team" || ra.Subresource != "" {
		t.Errorf("resource attributes = %+v", ra)
	}
	f.allowed = false
	if ok, _ := a.CanCall(ctx, id, "team", "docs.echo"); !ok || f.accessReviews != 1 {
		t.Errorf("within the TTL: %v after %d reviews, want the cached answer", ok, f.accessReviews)
	}
	if ok, _ := a.CanCall(ctx, id, "team", "docs.fail"); ok || f.accessReviews != 2 {
		t.Errorf("another tool: %v after %d reviews, want its own review", ok, f.accessReviews)
	}
	now = now.Add(30 * time.Second)
	if ok, _ := a.CanCall(ctx, id, "team", "docs.echo"); ok || f.accessReviews != 3 {
		t.Errorf("after the TTL: %v after %d reviews, want a new review's answer", ok, f.accessReviews)
	}
	f.accessErr = errors.New("unavailable")
	if _, err := a.CanCall(ctx, id, "team", "docs.other"); err == nil {
		t.Error("a failed review was not an error")
	}
	f.accessErr = nil
	f.allowed = true
	if ok, _ := a.CanCall(ctx, id, "team", "docs.other"); !ok {
		t.Error("a failed review was cached")
	}
}

func TestTTLCacheExpiresAndStaysBounded(t *testing.T) {
	var c ttlCache[string, int]
	t0 := time.Unix(1000, 0)
	if _, ok := c.get("a", t0); ok {
		t.Fatal("hit in an empty cache")
	}
	c.put("a", 1, t0.Add(time.Second), t0)
	if v, ok := c.get("a", t0.Add(999*time.Millisecond)); !ok || v != 1 {
		t.Errorf("before expiry: %v %v", v, ok)
	}
	if _, ok := c.get("a", t0.Add(time.Second)); ok {
		t.Error("hit at the expiry instant")
	}

	// Full, with expired entries: only those go.
	var d ttlCache[string, int]
	for i := range ttlCacheMax {
		exp := t0.Add(time.Hour)
		if i%2 == 0 {
			exp = t0.Add(time.Second)
		}
		d.put(strconv.Itoa(i), i, exp, t0)
	}
	later := t0.Add(time.Minute)
	d.put("new", -1, later.Add(time.Hour), later)
	if len(d.entries) != ttlCacheMax/2+1 {
		t.Errorf("after evicting expired entries: %d entries, want %d", len(d.entries), ttlCacheMax/2+1)
	}
	if v, ok := d.get("1", later); !ok || v != 1 {
		t.Error("a live entry was evicted")
	}

	// Full of live entries: the map starts over rather than growing.
	var e ttlCache[string, int]
	for i := range ttlCacheMax {
		e.put(strconv.Itoa(i), i, t0.Add(time.Hour), t0)
	}
	e.put("new", -1, t0.Add(time.Hour), t0)
	if len(e.entries) != 1 {
		t.Errorf("full of live entries: %d entries after a put, want 1", len(e.entries))
	}
	if v, ok := e.get("new", t0); !ok || v != -1 {
		t.Error("the new entry is missing")
	}
}
