package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// tokenTable authenticates the tokens it maps.
type tokenTable map[string]*Identity

func (t tokenTable) Authenticate(_ context.Context, token string) (*Identity, error) {
	if id, ok := t[token]; ok {
		return id, nil
	}
	return nil, ErrUnauthenticated
}

func TestFailedAuthenticationIsRateLimitedPerClientAddress(t *testing.T) {
	o := completeOptions()
	o.Authn = tokenTable{}
	o.UnauthenticatedRate, o.UnauthenticatedBurst = 0.001, 3
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	post := func(addr, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.RemoteAddr = addr
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		g.Handler().ServeHTTP(w, r)
		return w
	}
	const attacker, neighbour = "192.0.2.1:5000", "192.0.2.2:5000"
	// Three failures (a bad token, no token, a bad token) use up the burst.
	for i, tok := range []string{"bad", "", "bad"} {
		if w := post(attacker, tok); w.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d, want 401", i, w.Code)
		}
	}
	w := post(attacker, "bad")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("attempt past the burst: %d, want 429", w.Code)
	}
	if secs, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || secs < 1 {
		t.Errorf("Retry-After %q, want a positive number of seconds", w.Header().Get("Retry-After"))
	}
	// Another address is not affected.
	if w := post(neighbour, "bad"); w.Code != http.StatusUnauthorized {
		t.Errorf("another address: %d, want 401", w.Code)
	}
}

func TestAuthenticatedRequestsDoNotSpendTheLimit(t *testing.T) {
	o := completeOptions()
	o.Authn = tokenTable{"good": {Username: "system:serviceaccount:team:bot", Namespace: "team", ServiceAccount: "bot"}}
	o.UnauthenticatedRate, o.UnauthenticatedBurst = 0.001, 1
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r := httptest.NewRequest(http.MethodGet, Path, nil)
		r.RemoteAddr = "192.0.2.3:1"
		r.Header.Set("Authorization", "Bearer good")
		w := httptest.NewRecorder()
		g.Handler().ServeHTTP(w, r)
		if w.Code == http.StatusTooManyRequests || w.Code == http.StatusUnauthorized {
			t.Fatalf("authenticated request %d: %d", i, w.Code)
		}
	}
}
