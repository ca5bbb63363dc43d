package personauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/approvals"
)

// ErrBadState is any state that is not one this gateway signed, or has
// expired: the callback answers it the same way whatever is wrong.
var ErrBadState = errors.New("the authorization link is not valid or has expired")

// DefaultStateTTL is how long a consent link can be used.
const DefaultStateTTL = 10 * time.Minute

// maxStateBytes bounds the state parameter the callback reads.
const maxStateBytes = 4096

// purpose separates the key of this package from the approval key it is
// derived from: the derived key signs nothing else, and the approval key
// itself never signs a state.
const purpose = "mcp-catalog per-person upstream authorization v1"

// The steps of a consent flow a state is for (state.Kind). Each state is
// accepted at its own step only.
const (
	// kindLink: the consent link handed to the agent; following it starts
	// the browser's sign-in as the person.
	kindLink = "link"
	// kindSignIn: the sign-in at the person's identity provider.
	kindSignIn = "signin"
	// kindUpstream: the consent at the server's authorization server,
	// after the browser signed in as the person.
	kindUpstream = "upstream"
)

// state is what a consent link binds: who consents, for which server, at
// which authorization server and client, until when; and, once the flow
// has a browser, which browser (Browser, the hash of its cookie).
type state struct {
	Kind      string `json:"k"`
	Namespace string `json:"ns"`
	Server    string `json:"srv"`
	ServerUID string `json:"suid"`
	User      string `json:"user"`
	Issuer    string `json:"iss"`
	ClientID  string `json:"cid"`
	Nonce     string `json:"n"`
	Expires   int64  `json:"exp"`
	// Flow is the link's nonce, kept through the steps: it names the
	// browser's cookie.
	Flow string `json:"f,omitempty"`
	// Browser is base64url(SHA-256) of the cookie the flow's browser was
	// given when it followed the link.
	Browser string `json:"b,omitempty"`
}

// signer signs and verifies states under keys derived from the approval
// keys.
type signer struct{ keys approvals.KeySource }

func derive(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, derive(key))
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// newNonce is 128 random bits.
func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sign returns the state parameter and the PKCE verifier of s.
func (g signer) sign(ctx context.Context, s state) (token, verifier string, err error) {
	ks, err := g.keys.Keys(ctx, false)
	if err != nil {
		return "", "", err
	}
	if len(ks.Current) == 0 {
		return "", "", errors.New("no signing key")
	}
	body, err := json.Marshal(s)
	if err != nil {
		return "", "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	sig := base64.RawURLEncoding.EncodeToString(mac(ks.Current, "state", payload))
	return payload + "." + sig, pkceVerifier(ks.Current, s.Nonce), nil
}

// pkceVerifier is the PKCE code verifier of the link with nonce: 43
// characters of the unreserved set (RFC 7636 §4.1), derived, never sent
// before the token request.
func pkceVerifier(key []byte, nonce string) string {
	return base64.RawURLEncoding.EncodeToString(mac(key, "pkce", nonce))
}

// verify checks token and returns its state and PKCE verifier. It tries
// the current and previous keys, and the keys read again once, so that a
// rotation refuses no link in flight.
func (g signer) verify(ctx context.Context, token string, now time.Time) (state, string, error) {
	if len(token) > maxStateBytes {
		return state{}, "", ErrBadState
	}
	payload, sig, ok := strings.Cut(token, ".")
	if !ok {
		return state{}, "", ErrBadState
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return state{}, "", ErrBadState
	}
	for _, fresh := range []bool{false, true} {
		ks, err := g.keys.Keys(ctx, fresh)
		if err != nil {
			return state{}, "", err
		}
		for _, k := range [][]byte{ks.Current, ks.Previous} {
			if len(k) == 0 || !hmac.Equal(got, mac(k, "state", payload)) {
				continue
			}
			body, err := base64.RawURLEncoding.DecodeString(payload)
			if err != nil {
				return state{}, "", ErrBadState
			}
			var s state
			if err := json.Unmarshal(body, &s); err != nil || s.Nonce == "" || s.Kind == "" || now.Unix() > s.Expires {
				return state{}, "", ErrBadState
			}
			return s, pkceVerifier(k, s.Nonce), nil
		}
	}
	return state{}, "", ErrBadState
}
