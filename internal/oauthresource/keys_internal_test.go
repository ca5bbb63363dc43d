package oauthresource

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	testingclock "k8s.io/utils/clock/testing"
)

// keyServer serves a JWK set of one RSA key and counts the fetches.
type keyServer struct {
	srv     *httptest.Server
	key     *rsa.PrivateKey
	fetches atomic.Int64
	down    atomic.Bool
}

func startKeyServer(t *testing.T) *keyServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ks := &keyServer{key: key}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	ks.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ks.fetches.Add(1)
		if ks.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(ks.srv.Close)
	return ks
}

func (ks *keyServer) token(t *testing.T) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: ks.key, KeyID: "k1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign([]byte(`{"iss":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := jws.CompactSerialize()
	return out
}

// A caller that found go-oidc's cache empty, and asks for the set just
// after another caller's fetch filled it, gets that fetch's keys from the
// transport, without a request; before, it was refused. A second view
// of the same set with an empty cache is that caller, made to happen.
func TestACallerThatMissedAFetchGetsItsKeys(t *testing.T) {
	ks := startKeyServer(t)
	clock := testingclock.NewFakeClock(time.Now())
	f := &keyFetcher{base: guarded{ks.srv.Client().Transport}, clock: clock, interval: time.Minute}
	ctx := oidc.ClientContext(context.Background(), &http.Client{Transport: f})
	token := ks.token(t)

	if _, err := oidc.NewRemoteKeySet(ctx, ks.srv.URL).VerifySignature(ctx, token); err != nil {
		t.Fatal(err)
	}
	late := oidc.NewRemoteKeySet(ctx, ks.srv.URL)
	if _, err := late.VerifySignature(ctx, token); err != nil {
		t.Fatalf("the caller that missed the fetch: %v", err)
	}
	if n := ks.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}

	// After a failed fetch there is nothing to answer with until the
	// interval passes: the caller is told so, and the provider is not
	// asked.
	ks.down.Store(true)
	clock.Step(time.Minute)
	if _, err := oidc.NewRemoteKeySet(ctx, ks.srv.URL).VerifySignature(ctx, token); !errors.As(err, new(*fetchError)) {
		t.Fatalf("provider down: %v", err)
	}
	var soon *tooSoon
	if _, err := oidc.NewRemoteKeySet(ctx, ks.srv.URL).VerifySignature(ctx, token); !errors.As(err, &soon) || soon.failed == nil {
		t.Fatalf("within the interval after a failure: %v", err)
	}
	if n := ks.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}
