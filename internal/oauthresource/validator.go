package oauthresource

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

// Algorithms are the signature algorithms a token may be signed with:
// asymmetric ones only. "none" is never accepted, and neither is an HMAC:
// its key would be a secret the gateway shares with the provider, and a
// public key must never be usable as one.
var Algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// Validator checks OIDC JWT access tokens for the gateway's resource and
// maps them onto Kubernetes identities. It is safe for concurrent use.
type Validator struct {
	opts    Options
	clock   clock.PassiveClock
	issuers map[string]*issuer
	tokens  *cache.LRUExpireCache
}

// New builds a Validator. It makes no request: each issuer is discovered
// when its first token arrives. Zero durations and sizes in o are the
// defaults. With no resource configured it returns nil and no error:
// there is nothing to validate for.
func New(o Options) (*Validator, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.Enabled() {
		return nil, nil
	}
	d := DefaultOptions()
	if o.ClockSkew == 0 {
		o.ClockSkew = d.ClockSkew
	}
	if o.TokenCacheSize <= 0 {
		o.TokenCacheSize = d.TokenCacheSize
	}
	if o.KeyRefreshInterval <= 0 {
		o.KeyRefreshInterval = d.KeyRefreshInterval
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = d.FetchTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	v := &Validator{
		opts:    o,
		clock:   o.Clock,
		issuers: make(map[string]*issuer, len(o.Issuers)),
		tokens:  cache.NewLRUExpireCacheWithClock(o.TokenCacheSize, passive{o.Clock}),
	}
	for _, is := range o.Issuers {
		v.issuers[is.URL] = newIssuer(is, o)
	}
	return v, nil
}

// tokenKey is what a validated token is remembered by: the resource it
// was validated for and its SHA-256, never the token.
type tokenKey struct {
	resource string
	sum      [sha256.Size]byte
}

// ForResource is v for another resource URI the gateway serves (one per
// namespace, ADR 053): tokens must be issued for that resource (or for
// an audience configured for their issuer), and the metadata, its paths
// and the challenges name it. The issuers, their keys and the cache of
// validated tokens are v's, shared. resource must satisfy what
// Options.Resource must; an invalid one is an error.
func (v *Validator) ForResource(resource string) (*Validator, error) {
	if err := checkResource(resource); err != nil {
		return nil, fmt.Errorf("resource %q: %w", resource, err)
	}
	c := *v
	c.opts.Resource = resource
	return &c, nil
}

// passive adapts a clock.PassiveClock to the cache's Clock.
type passive struct{ clock.PassiveClock }

// Validate checks token and returns the identity it stands for. A token
// refused is a *TokenError (401); a token that could not be checked
// because its issuer is unreachable is an *UnavailableError (503 with its
// RetryAfter). A token validated before and not yet expired is answered
// from memory, without a request to its issuer.
func (v *Validator) Validate(ctx context.Context, token string) (*Identity, error) {
	if token == "" || len(token) > maxTokenBytes {
		return nil, refused(ReasonMalformed, "", "empty or over %d bytes", maxTokenBytes)
	}
	// The resource is part of the key: a token validated for one resource
	// is checked again, audience included, for another (ForResource).
	key := tokenKey{resource: v.opts.Resource, sum: sha256.Sum256([]byte(token))}
	if id, ok := v.tokens.Get(key); ok {
		return id.(*Identity), nil
	}
	id, err := v.validate(ctx, token)
	if err != nil {
		return nil, err
	}
	// Kept until it expires; the skew's grace is not cached, it is
	// granted by validating again.
	if ttl := id.Expiry.Sub(v.clock.Now()); ttl > 0 {
		v.tokens.Add(key, id, ttl)
	}
	return id, nil
}

// validate is Validate without the cache: parse, pick the issuer, verify
// the signature with its keys, then the claims, then map the identity.
func (v *Validator) validate(ctx context.Context, token string) (*Identity, error) {
	jws, err := jose.ParseSignedCompact(token, Algorithms)
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return nil, refused(ReasonAlgorithm, "", "the algorithm %s is not allowed", quote(string(alg.Got)))
		}
		return nil, refused(ReasonMalformed, "", "not a compact JWS")
	}
	if len(jws.Signatures) != 1 {
		return nil, refused(ReasonMalformed, "", "not exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	// The issuer is read before the signature is checked, only to choose
	// whose keys check it.
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified) != nil {
		return nil, refused(ReasonMalformed, "", "the claims are not a JSON object")
	}
	is := v.issuers[unverified.Issuer]
	if is == nil {
		return nil, refused(ReasonUnknownIssuer, "", "the issuer %s is not one the gateway trusts", quote(unverified.Issuer))
	}
	keys, err := is.keySet(ctx)
	if err != nil {
		return nil, err
	}
	payload, err := keys.VerifySignature(ctx, token)
	if err != nil {
		return nil, is.signatureFailure(err, kid)
	}
	var claims jwt.Claims
	var all claimSet
	if json.Unmarshal(payload, &claims) != nil || json.Unmarshal(payload, &all) != nil {
		return nil, refused(ReasonClaims, is.cfg.URL, "a registered claim has the wrong type")
	}
	if claims.Expiry == nil {
		return nil, refused(ReasonClaims, is.cfg.URL, "the token has no exp")
	}
	if claims.Subject == "" {
		return nil, refused(ReasonClaims, is.cfg.URL, "the token has no sub")
	}
	now := v.clock.Now()
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: is.cfg.URL, AnyAudience: is.cfg.audiences(v.opts.Resource), Time: now}, v.opts.ClockSkew)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, refused(ReasonExpired, is.cfg.URL, "expired at %s", claims.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, refused(ReasonNotYetValid, is.cfg.URL, "nbf or iat is in the future")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, refused(ReasonAudience, is.cfg.URL, "issued for %s, not for this resource", quoteAudience(claims.Audience))
	default:
		return nil, refused(ReasonClaims, is.cfg.URL, "the claims do not validate")
	}
	return is.identity(all, claims.Subject, claims.Expiry.Time())
}

// signatureFailure turns go-oidc's refusal into a typed answer: the keys
// could not be fetched (unavailable), the key id is not published
// (unknown key), or a published key does not verify (bad signature).
func (is *issuer) signatureFailure(err error, kid string) error {
	var soon *tooSoon
	var fetch *fetchError
	switch {
	case errors.As(err, &soon) && soon.failed != nil:
		return &UnavailableError{Issuer: is.cfg.URL, RetryAfter: soon.wait, stage: "keys failed lately", cause: soon.failed}
	case errors.As(err, &fetch):
		return &UnavailableError{Issuer: is.cfg.URL, RetryAfter: is.interval, stage: "keys", cause: fetch}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &UnavailableError{Issuer: is.cfg.URL, RetryAfter: time.Second, stage: "keys", cause: err}
	case kid != "" && !is.fetcher.knows(kid):
		return refused(ReasonUnknownKey, is.cfg.URL, "the key id %s is not published by the issuer", quote(kid))
	}
	return refused(ReasonSignature, is.cfg.URL, "no key of the issuer verifies the signature")
}

func quoteAudience(aud jwt.Audience) string {
	if len(aud) == 0 {
		return "no audience"
	}
	s := quote(aud[0])
	if len(aud) > 1 {
		s += fmt.Sprintf(" and %d more", len(aud)-1)
	}
	return s
}
