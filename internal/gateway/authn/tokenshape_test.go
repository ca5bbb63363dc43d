package authn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// saToken is a token of the ServiceAccount token's shape for sub and
// audience, expiring in expires; its signature is not one (the API
// server's review decides that).
func saToken(sub, audience string, expires time.Duration) string {
	return jwtOf(map[string]any{"sub": sub, "aud": []string{audience}, "exp": time.Now().Add(expires).Unix(), "iss": "https://kubernetes.default.svc"})
}

func jwtOf(claims map[string]any) string {
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"k1"}`))
	payload, _ := json.Marshal(claims)
	return header + "." + base64.RawURLEncoding.EncodeToString(payload) + ".c2lnbmF0dXJl"
}

// A token that cannot be a ServiceAccount token for the gateway's
// audience is refused without a TokenReview: not a JWT, another audience,
// expired, not yet valid, not a ServiceAccount's, or too large. A token
// at the edge of its validity (within the skew the API server allows) is
// reviewed.
func TestImplausibleTokensAreNotReviewed(t *testing.T) {
	f := &fakeReviews{tokenFn: func(string) (*authenticationv1.TokenReview, error) {
		return review(true, "system:serviceaccount:team:bot", aud), nil
	}}
	a := &TokenReviewAuthenticator{Client: f.client(), Audience: aud}
	now := time.Now().Unix()
	sa := "system:serviceaccount:team:bot"
	for name, token := range map[string]string{
		"not a JWT":              "opaque-token-value",
		"two parts":              "abc.def",
		"four parts":             "a.b.c.d",
		"a payload not base64":   "eyJ9.!!!.sig",
		"a payload not JSON":     "eyJ9." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".sig",
		"another audience":       saToken(sa, "kubernetes", time.Hour),
		"no audience":            jwtOf(map[string]any{"sub": sa, "exp": now + 3600}),
		"expired":                saToken(sa, aud, -2*time.Hour),
		"no expiry":              jwtOf(map[string]any{"sub": sa, "aud": aud}),
		"not yet valid":          jwtOf(map[string]any{"sub": sa, "aud": aud, "exp": now + 7200, "nbf": now + 3600}),
		"a person's":             saToken("jane@example.com", aud, time.Hour),
		"no subject":             jwtOf(map[string]any{"aud": aud, "exp": now + 3600}),
		"an audience not a text": jwtOf(map[string]any{"sub": sa, "aud": 7, "exp": now + 3600}),
		"too large":              saToken(sa+strings.Repeat("x", maxTokenBytes), aud, time.Hour),
	} {
		if _, err := a.Authenticate(context.Background(), token); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v, want ErrUnauthenticated", name, err)
		}
	}
	if f.tokenReviews != 0 {
		t.Errorf("%d TokenReviews for tokens that cannot be ServiceAccount tokens for the audience, want none", f.tokenReviews)
	}
	for name, token := range map[string]string{
		"expired within the skew": saToken(sa, aud, -30*time.Second),
		"an audience as one text": jwtOf(map[string]any{"sub": sa, "aud": aud, "exp": now + 3600}),
		"valid from just now":     jwtOf(map[string]any{"sub": sa, "aud": []string{"other", aud}, "exp": now + 3600, "nbf": now + 30}),
	} {
		before := f.tokenReviews
		if _, err := a.Authenticate(context.Background(), token); err != nil || f.tokenReviews != before+1 {
			t.Errorf("%s: %v after %d reviews, want it reviewed and accepted", name, err, f.tokenReviews-before)
		}
	}
}

// Reviews of tokens never seen to authenticate are limited on their own:
// a client sending a stream of new (well-shaped, forged) tokens gets at
// most the burst of reviews, and is told to try again; a token that
// authenticated before is re-reviewed whenever its cached answer expires,
// whatever the flood.
func TestNewTokenReviewsAreLimitedApartFromKnownGoodOnes(t *testing.T) {
	sa := "system:serviceaccount:team:bot"
	good := saToken(sa, aud, time.Hour)
	f := &fakeReviews{tokenFn: func(token string) (*authenticationv1.TokenReview, error) {
		if token == good {
			return review(true, sa, aud), nil
		}
		return review(false, ""), nil
	}}
	// Answers expire at once: every use of the good token is a re-review.
	a := &TokenReviewAuthenticator{Client: f.client(), Audience: aud, AllowTTL: time.Nanosecond, DenyTTL: time.Nanosecond, NewTokenRate: 0.001, NewTokenBurst: 5}
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, good); err != nil {
		t.Fatalf("the good token: %v", err)
	}
	throttled, refused := 0, 0
	for i := range 200 {
		forged := saToken(fmt.Sprintf("%s-%d", sa, i), aud, time.Hour)
		_, err := a.Authenticate(ctx, forged)
		switch {
		case errors.Is(err, ErrNewTokenReviewsThrottled):
			throttled++
		case errors.Is(err, ErrUnauthenticated):
			refused++
		default:
			t.Fatalf("forged token %d: %v", i, err)
		}
		if i%20 == 0 {
			if _, err := a.Authenticate(ctx, good); err != nil {
				t.Fatalf("the good token during the flood: %v", err)
			}
		}
	}
	// The good token's first review took one of the burst.
	if refused != 4 || throttled != 196 {
		t.Errorf("of 200 new tokens, %d were reviewed and %d throttled; want 4 and 196", refused, throttled)
	}
	if want := 1 + 4 + 10; f.tokenReviews != want {
		t.Errorf("%d TokenReviews, want %d (the good token's 11, the 4 new ones the burst left)", f.tokenReviews, want)
	}
}

// A token's shape is read once and remembered by fingerprint, but its
// window is judged at every use: a remembered token that has expired is
// refused as a new one would be, and garbage is never remembered.
func TestARememberedShapeIsJudgedAtEveryUse(t *testing.T) {
	s := newShapes(aud)
	now := time.Now()
	good := saToken("system:serviceaccount:team:bot", aud, time.Hour)
	for range 2 { // read, then remembered
		if ok, _ := s.plausible(good, now); !ok {
			t.Fatal("a good token was refused")
		}
	}
	if len(s.m) != 1 {
		t.Fatalf("%d shapes remembered, want 1", len(s.m))
	}
	if ok, _ := s.plausible(good, now.Add(time.Hour+2*tokenSkew)); ok {
		t.Error("a remembered token was accepted after it expired")
	}
	for i := range 100 {
		if ok, _ := s.plausible(fmt.Sprintf("garbage-%d", i), now); ok {
			t.Fatal("garbage was plausible")
		}
	}
	if len(s.m) != 1 {
		t.Errorf("%d shapes remembered after garbage, want 1", len(s.m))
	}
}
