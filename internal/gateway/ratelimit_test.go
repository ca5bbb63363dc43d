package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// tokenTable authenticates the tokens it maps.
type tokenTable map[string]*authn.Identity

func (t tokenTable) Authenticate(_ context.Context, token string) (*authn.Identity, error) {
	if id, ok := t[token]; ok {
		return id, nil
	}
	return nil, authn.ErrUnauthenticated
}

// countingAuthn counts the reviews it is asked for.
type countingAuthn struct {
	tokenTable
	mu      sync.Mutex
	reviews map[string]int
}

func (c *countingAuthn) Authenticate(ctx context.Context, token string) (*authn.Identity, error) {
	c.mu.Lock()
	if c.reviews == nil {
		c.reviews = map[string]int{}
	}
	c.reviews[token]++
	c.mu.Unlock()
	return c.tokenTable.Authenticate(ctx, token)
}

func (c *countingAuthn) count(token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reviews[token]
}

// meshAddr is where every request comes from behind a service mesh's
// sidecar.
const meshAddr = "127.0.0.6:15001"

// manualClock is a clock a test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Now and Since make it a clock.PassiveClock.
func (c *manualClock) Now() time.Time                  { return c.now() }
func (c *manualClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }

func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func poster(g *Gateway) func(addr, token string) *httptest.ResponseRecorder {
	return func(addr, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.RemoteAddr = addr
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		g.Handler().ServeHTTP(w, r)
		return w
	}
}

var botIdentity = &authn.Identity{Username: "system:serviceaccount:team:bot", Namespace: "team", ServiceAccount: "bot"}

// The attack behind a service mesh: every agent comes from 127.0.0.6, and
// one of them presents a stream of bad tokens, fresh ones and one
// repeated. A limiter keyed on the address, or consulted before the
// review, would answer the good token 429.
func TestBadTokensFromOneAddressNeverLockOutAGoodToken(t *testing.T) {
	o := completeOptions()
	o.Authn = tokenTable{"good": botIdentity}
	o.UnauthenticatedRate, o.UnauthenticatedBurst = 0.001, 3
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	post := poster(g)
	for i := range 200 {
		tok := fmt.Sprintf("bad-%d", i)
		if i%2 == 0 {
			tok = "bad-repeated"
		}
		post(meshAddr, tok)
		post(meshAddr, "")
	}
	if w := post(meshAddr, "bad-repeated"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("the repeated bad token past its burst: %d, want 429", w.Code)
	}
	if w := post(meshAddr, "bad-fresh"); w.Code != http.StatusUnauthorized {
		t.Errorf("a fresh bad token from the same address: %d, want 401 (reviewed, not limited)", w.Code)
	}
	for i := range 5 {
		if w := post(meshAddr, "good"); w.Code == http.StatusTooManyRequests || w.Code == http.StatusUnauthorized {
			t.Fatalf("the good token, request %d, after 400 failures from its address: %d", i, w.Code)
		}
	}
}

func TestARepeatedBadTokenIsLimitedAndNotReviewedAgain(t *testing.T) {
	clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
	counting := &countingAuthn{tokenTable: tokenTable{"good": botIdentity}}
	o := completeOptions()
	o.Authn = counting
	o.Clock = clk
	o.UnauthenticatedRate, o.UnauthenticatedBurst = 0.5, 3
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	post := poster(g)
	for i := range 3 {
		if w := post(meshAddr, "bad"); w.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d, want 401", i, w.Code)
		}
	}
	w := post(meshAddr, "bad")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("attempt past the burst: %d, want 429", w.Code)
	}
	if secs, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || secs != 2 {
		t.Errorf("Retry-After %q, want 2 (one attempt at half a second)", w.Header().Get("Retry-After"))
	}
	if n := counting.count("bad"); n != 1 {
		t.Errorf("the bad token was reviewed %d times within the negative TTL, want 1", n)
	}
	// Past the negative TTL, with its attempt back, it is reviewed again:
	// a token that has since become valid is not refused for long.
	clk.add(authn.DefaultDenyTTL)
	counting.tokenTable["bad"] = botIdentity
	if w := post(meshAddr, "bad"); w.Code == http.StatusUnauthorized || w.Code == http.StatusTooManyRequests {
		t.Fatalf("the token, valid now, after the TTL: %d", w.Code)
	}
	if n := counting.count("bad"); n != 2 {
		t.Errorf("reviews after the TTL: %d, want 2", n)
	}
	if n := g.identifier.RememberedBadTokens(); n != 0 {
		t.Errorf("a token that authenticated is still remembered as bad (%d entries)", n)
	}
}

func TestAuthenticatedRequestsDoNotSpendTheLimit(t *testing.T) {
	o := completeOptions()
	o.Authn = tokenTable{"good": botIdentity}
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
