package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// authnFunc is an authn.Authenticator made of a function.
type authnFunc func(ctx context.Context, token string) (*authn.Identity, error)

func (f authnFunc) Authenticate(ctx context.Context, token string) (*authn.Identity, error) {
	return f(ctx, token)
}

// A token that cannot be reviewed (the API server is down) is neither
// served nor called bad: the answer is 503 with Retry-After, the token is
// not charged as a failed authentication, and it is served once reviews
// work again. A token the review refuses is still a plain 401.
func TestATokenThatCannotBeReviewedIsUnavailableNotUnauthorized(t *testing.T) {
	down := true
	o := completeOptions()
	o.Authn = authnFunc(func(_ context.Context, token string) (*authn.Identity, error) {
		switch {
		case token != "good":
			return nil, authn.ErrUnauthenticated
		case down:
			return nil, errors.New("reviewing the token: the server is currently unable to handle the request")
		}
		return &authn.Identity{Username: "system:serviceaccount:team:bot", UID: "u1", Namespace: "team", ServiceAccount: "bot"}, nil
	})
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	post := func(token string) *httptest.ResponseRecorder {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		g.Handler().ServeHTTP(w, r)
		return w
	}
	// More than the failed-authentication limiter lets through.
	for i := range 2 * authn.DefaultUnauthenticatedBurst {
		w := post("good")
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "could not review the token") {
			t.Fatalf("request %d while reviews fail: %d, Retry-After %q, %q; want 503 with Retry-After saying the review failed",
				i, w.Code, w.Header().Get("Retry-After"), w.Body.String())
		}
	}
	if w := post("bad"); w.Code != http.StatusUnauthorized {
		t.Errorf("a refused token: %d, want 401", w.Code)
	}
	down = false
	if w := post("good"); w.Code != http.StatusOK {
		t.Errorf("once reviews work again: %d %q, want the token served", w.Code, w.Body.String())
	}
}
