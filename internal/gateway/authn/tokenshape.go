package authn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Before a token is sent to TokenReview, the gateway looks at it: a token
// that cannot be a ServiceAccount token for the gateway's audience is
// refused without a review, and reviews of tokens never seen to
// authenticate are limited apart from the re-reviews of tokens that did
// (whose cached answer expired). An unauthenticated client that sends a
// stream of new tokens then spends its own share of reviews, not the
// share that the agents' good tokens need.
//
// Looking is not verifying: the claims are read without checking the
// signature, only to refuse what the API server would refuse anyway. A
// token that passes is reviewed as before, and only the review decides.

// maxTokenBytes bounds a token looked at; ServiceAccount tokens are about
// a kilobyte.
const maxTokenBytes = 16 << 10

// tokenSkew is the leeway given to a token's expiry and not-before times
// against this replica's clock, as the API server gives its own.
const tokenSkew = time.Minute

// tokenWindow is when a token is valid by its own claims: from notBefore
// (zero: no such claim) to expiry.
type tokenWindow struct{ notBefore, expiry int64 }

// holds reports whether now is within the window, give or take tokenSkew.
func (w tokenWindow) holds(now time.Time) bool {
	if now.Add(-tokenSkew).After(time.Unix(w.expiry, 0)) {
		return false
	}
	return w.notBefore == 0 || !now.Add(tokenSkew).Before(time.Unix(w.notBefore, 0))
}

// tokenWindowOf reads, without the clock, whether token has the shape of a
// ServiceAccount token for audience: a JWT (three base64url parts) whose
// claims name a ServiceAccount as subject, include audience and expire;
// and its window, which holds judges against the clock.
func tokenWindowOf(token, audience string) (tokenWindow, bool) {
	if len(token) > maxTokenBytes {
		return tokenWindow{}, false
	}
	header, rest, ok := strings.Cut(token, ".")
	if !ok || header == "" {
		return tokenWindow{}, false
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || payload == "" || sig == "" || strings.Contains(sig, ".") {
		return tokenWindow{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return tokenWindow{}, false
	}
	var claims struct {
		Subject   string          `json:"sub"`
		Audience  json.RawMessage `json:"aud"`
		Expiry    *json.Number    `json:"exp"`
		NotBefore *json.Number    `json:"nbf"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&claims) != nil || !strings.HasPrefix(claims.Subject, "system:serviceaccount:") {
		return tokenWindow{}, false
	}
	if !audienceIncludes(claims.Audience, audience) {
		return tokenWindow{}, false
	}
	if claims.Expiry == nil {
		// Every token TokenRequest issues expires.
		return tokenWindow{}, false
	}
	exp, err := claims.Expiry.Float64()
	if err != nil {
		return tokenWindow{}, false
	}
	w := tokenWindow{expiry: int64(exp)}
	if claims.NotBefore != nil {
		nbf, err := claims.NotBefore.Float64()
		if err != nil {
			return tokenWindow{}, false
		}
		// A not-before at the epoch itself bounds nothing.
		w.notBefore = int64(nbf)
	}
	return w, true
}

// maxShapes bounds the tokens whose shape is remembered.
const maxShapes = 65536

// shapes remembers, by fingerprint, the window of each token whose shape
// was read and passed, so that an agent's token is read once, not on every
// request (reading it is about ten times the cost of its fingerprint).
// Only tokens that passed are kept: a stream of garbage tokens fills
// nothing.
//
// It also remembers the identity a review of the token answered, until
// the review's answer expires (the review's time plus the allow TTL): the
// answer the review cache would give, from the fingerprint the shape
// already took rather than a second one.
type shapes struct {
	key      *fingerprinter
	audience string

	mu sync.Mutex
	m  map[fingerprint]shape
}

// shape is what is remembered of one token.
type shape struct {
	window tokenWindow
	// reviewed is the identity its last successful review answered, while
	// that answer holds (until); nil when none does.
	reviewed *Identity
	until    time.Time
}

func newShapes(audience string) *shapes {
	return &shapes{key: newFingerprinter(), audience: audience, m: map[fingerprint]shape{}}
}

// plausible reports whether token has the shape of a ServiceAccount token
// for the audience and is within its window at now; and, when a review of
// it answered within the allow TTL, the identity it answered.
func (s *shapes) plausible(token string, now time.Time) (bool, *Identity) {
	if len(token) > maxTokenBytes {
		return false, nil
	}
	fp := s.key.of(token)
	s.mu.Lock()
	sh, ok := s.m[fp]
	s.mu.Unlock()
	if ok {
		if !sh.window.holds(now) {
			return false, nil
		}
		if sh.reviewed != nil && now.Before(sh.until) {
			return true, sh.reviewed
		}
		return true, nil
	}
	w, ok := tokenWindowOf(token, s.audience)
	if !ok {
		return false, nil
	}
	s.mu.Lock()
	s.evict()
	s.m[fp] = shape{window: w}
	s.mu.Unlock()
	return w.holds(now), nil
}

// reviewed remembers the identity a review of token answered, until the
// answer expires. A token whose shape was never remembered (evicted
// since) is remembered now: it passed to be reviewed.
func (s *shapes) reviewed(token string, id *Identity, until time.Time) {
	w, ok := tokenWindowOf(token, s.audience)
	if !ok {
		return
	}
	fp := s.key.of(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.m[fp]; !seen {
		s.evict()
	}
	s.m[fp] = shape{window: w, reviewed: id, until: until}
}

// evict makes room for one more shape. s.mu is held.
func (s *shapes) evict() {
	for f := range s.m {
		if len(s.m) < maxShapes {
			break
		}
		delete(s.m, f)
	}
}

// audienceIncludes reports whether a JWT's aud claim (a string or a list
// of them) includes audience.
func audienceIncludes(raw json.RawMessage, audience string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == audience
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return false
	}
	for _, a := range many {
		if a == audience {
			return true
		}
	}
	return false
}

// Defaults for the reviews of tokens never seen to authenticate, shared
// by every caller of a replica: 20 a second, bursts of 50. A new agent's
// first token is one such review; a re-review of a token that has
// authenticated is not limited.
const (
	DefaultNewTokenReviewRate  = rate.Limit(20)
	DefaultNewTokenReviewBurst = 50
)

// ErrNewTokenReviewsThrottled is returned when a token never seen to
// authenticate would be reviewed while the reviews of such tokens are over
// their rate: the caller is told to try again (503 with Retry-After), and
// the token is not charged as bad.
var ErrNewTokenReviewsThrottled = errors.New("the gateway is reviewing too many new tokens now; try again")

// maxKnownTokens bounds the tokens remembered as having authenticated.
const maxKnownTokens = 65536

// knownTokens remembers, by fingerprint (an HMAC under a key of this
// process, never the token), the tokens that have authenticated, until
// their review's answer could no longer be reused; and limits the reviews
// of all other tokens.
type knownTokens struct {
	key *fingerprinter
	lim *rate.Limiter

	mu      sync.Mutex
	entries map[fingerprint]time.Time
}

func newKnownTokens(limit rate.Limit, burst int) *knownTokens {
	if limit <= 0 {
		limit = DefaultNewTokenReviewRate
	}
	if burst <= 0 {
		burst = DefaultNewTokenReviewBurst
	}
	return &knownTokens{key: newFingerprinter(), lim: rate.NewLimiter(limit, burst), entries: map[fingerprint]time.Time{}}
}

func (k *knownTokens) fingerprint(token string) fingerprint { return k.key.of(token) }

// mayReview reports whether token may be reviewed now: always when it
// has authenticated before, otherwise within the new-token rate.
func (k *knownTokens) mayReview(fp fingerprint, now time.Time) bool {
	k.mu.Lock()
	until, ok := k.entries[fp]
	k.mu.Unlock()
	if ok && now.Before(until) {
		return true
	}
	return k.lim.AllowN(now, 1)
}

// authenticated remembers that the token authenticated now, until until.
func (k *knownTokens) authenticated(fp fingerprint, now, until time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.entries) >= maxKnownTokens {
		for f, u := range k.entries {
			if !now.Before(u) {
				delete(k.entries, f)
			}
		}
		for f := range k.entries {
			if len(k.entries) < maxKnownTokens {
				break
			}
			delete(k.entries, f)
		}
	}
	k.entries[fp] = until
}
