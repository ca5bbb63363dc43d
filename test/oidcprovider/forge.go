package oidcprovider

import (
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// Forge builds tokens the provider never issued, from a real one: its
// claims under another header, key or signature.
type Forge struct {
	t TB
	// Header and Claims are the real token's, to change before signing.
	Header map[string]any
	Claims map[string]any
}

// ForgeFrom reads token's header and claims.
func ForgeFrom(t TB, token string) Forge {
	t.Helper()
	parts := strings.Split(token, ".")
	var f Forge
	f.t = t
	for i, dst := range []*map[string]any{&f.Header, &f.Claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(raw, dst) != nil {
			t.Fatalf("not a JWT: %v", err)
		}
	}
	return f
}

// KeyID is the real token's kid.
func (f Forge) KeyID() string {
	k, _ := f.Header["kid"].(string)
	return k
}

// Unsigned is the token with alg "none" and no signature.
func (f Forge) Unsigned() string {
	return segment(map[string]any{"alg": "none", "typ": "JWT", "kid": f.KeyID()}) + "." + segment(f.Claims) + "."
}

// HMACWith signs the claims with HS256 under secret: the algorithm
// confusion that uses the provider's public key as an HMAC key.
func (f Forge) HMACWith(secret []byte) string {
	signing := segment(map[string]any{"alg": "HS256", "typ": "JWT", "kid": f.KeyID()}) + "." + segment(f.Claims)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SignedBy signs the claims with a key of the forger's, naming kid.
func (f Forge) SignedBy(key *rsa.PrivateKey, kid string) string {
	f.t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		f.t.Fatal(err)
	}
	payload, _ := json.Marshal(f.Claims)
	jws, err := s.Sign(payload)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func segment(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}
