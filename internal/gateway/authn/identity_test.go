package authn

import (
	"context"
	"errors"
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
	good, bad := saToken("system:serviceaccount:team:bot", aud, time.Hour), saToken("system:serviceaccount:team:other", aud, time.Hour)
	f := &fakeReviews{tokenFn: func(token string) (*authenticationv1.TokenReview, error) {
		if token == good {
			return review(true, "system:serviceaccount:team:bot", aud), nil
		}
		return review(false, ""), nil
	}}
	a := &TokenReviewAuthenticator{Client: f.client(), Audience: aud}
	ctx := context.Background()

	if _, err := a.Authenticate(ctx, ""); !errors.Is(err, ErrUnauthenticated) || f.tokenReviews != 0 {
		t.Fatalf("empty token: err %v after %d reviews; want ErrUnauthenticated after none", err, f.tokenReviews)
	}
	id, err := a.Authenticate(ctx, good)
	if err != nil || id.ServiceAccount != "bot" {
		t.Fatalf("good token: %v, %v", id, err)
	}
	if got := f.lastTokenReview; got.Token != good || len(got.Audiences) != 1 || got.Audiences[0] != aud {
		t.Errorf("review spec = %+v, want the token and exactly the gateway's audience", got)
	}
	if _, err := a.Authenticate(ctx, good); err != nil || f.tokenReviews != 1 {
		t.Errorf("second use within the TTL: %v after %d reviews, want one review", err, f.tokenReviews)
	}
	if _, err := a.Authenticate(ctx, bad); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("bad token: %v", err)
	}
	if _, err := a.Authenticate(ctx, bad); !errors.Is(err, ErrUnauthenticated) || f.tokenReviews != 2 {
		t.Errorf("bad token again: %v after %d reviews, want the refusal cached", err, f.tokenReviews)
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
	good := saToken("system:serviceaccount:team:bot", aud, time.Hour)
	if _, err := a.Authenticate(ctx, good); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("review failed: err %v, want an error that is not ErrUnauthenticated", err)
	}
	down = false
	if _, err := a.Authenticate(ctx, good); err != nil || f.tokenReviews != 2 {
		t.Fatalf("after the API came back: %v after %d reviews", err, f.tokenReviews)
	}
}
