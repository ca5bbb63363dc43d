package authn

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"hash"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Defaults for failed authentication per presented token: a burst of 20,
// refilled at 2 a second. A token is charged only once its own review has
// failed, so a token that authenticates is never limited, whoever else
// presents bad tokens from the same address (behind a service mesh every
// agent shares one). A token whose review failed is not reviewed again for
// DefaultDenyTTL, and past its burst it is answered 429 without a review.
const (
	DefaultUnauthenticatedRate  = rate.Limit(2)
	DefaultUnauthenticatedBurst = 20
)

// maxBadTokens bounds the table of tokens whose review failed. Past it,
// entries that changed nothing any more (idle for a full refill and past
// their negative TTL) are dropped first, then arbitrary ones: forgetting a
// bad token costs at most one more review of it, never another token's
// service.
const maxBadTokens = 10000

// fingerprint identifies a token in the table without holding it: an
// HMAC under a key made by this process, so that neither the table nor a
// memory dump yields the token or anything comparable across replicas.
type fingerprint [16]byte

// badTokens remembers, per token fingerprint, tokens whose review failed:
// when (so that a repeat within the negative TTL costs no review) and a
// token bucket spent by each failure (so that a client repeating one bad
// token is told to back off with 429 and Retry-After).
type badTokens struct {
	limit rate.Limit
	burst int
	ttl   time.Duration
	max   int
	key   *fingerprinter

	mu      sync.Mutex
	entries map[fingerprint]*badToken
	// count is len(entries), kept under mu and read without it: while no
	// token is remembered, a request's token needs no fingerprint.
	count atomic.Int64
}

type badToken struct {
	lim *rate.Limiter
	// reviewed is when the token's last review failed.
	reviewed time.Time
	seen     time.Time
}

func newBadTokens(limit rate.Limit, burst int, ttl time.Duration) *badTokens {
	if limit <= 0 {
		limit = DefaultUnauthenticatedRate
	}
	if burst <= 0 {
		burst = DefaultUnauthenticatedBurst
	}
	return &badTokens{limit: limit, burst: burst, ttl: ttlOr(ttl, DefaultDenyTTL), max: maxBadTokens, key: newFingerprinter(), entries: map[fingerprint]*badToken{}}
}

func (b *badTokens) fingerprint(token string) fingerprint { return b.key.of(token) }

// fingerprinter computes tokens' fingerprints: HMAC-SHA256 under a key of
// its own, drawn at random, so a fingerprint names a token only within this
// process. Its hashers are reused, keyed once, since every request of every
// agent fingerprints its token.
type fingerprinter struct {
	key  []byte
	pool sync.Pool
}

// keyedHash is one reusable hasher, with a buffer the token is copied
// through (a token's bytes are not allocated per request).
type keyedHash struct {
	h   hash.Hash
	buf [512]byte
	sum [sha256.Size]byte
}

func newFingerprinter() *fingerprinter {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	f := &fingerprinter{key: key}
	f.pool.New = func() any { return &keyedHash{h: hmac.New(sha256.New, key)} }
	return f
}

// of is token's fingerprint.
func (f *fingerprinter) of(token string) fingerprint {
	k := f.pool.Get().(*keyedHash)
	defer f.pool.Put(k)
	k.h.Reset()
	for len(token) > 0 {
		n := copy(k.buf[:], token)
		k.h.Write(k.buf[:n])
		token = token[n:]
	}
	var fp fingerprint
	copy(fp[:], k.h.Sum(k.sum[:0]))
	return fp
}

// knownBad reports whether the token's review failed within the negative
// TTL, charging the repeat to the token's bucket if so: the caller answers
// 401 without reviewing it again.
func (b *badTokens) knownBad(fp fingerprint, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[fp]
	if !ok || now.Sub(e.reviewed) >= b.ttl {
		return false
	}
	e.seen = now
	e.lim.AllowN(now, 1)
	return true
}

// exhausted reports whether a token whose review failed has no attempt
// left now, and if so how long until it has one. A token never reviewed as
// bad is never exhausted.
func (b *badTokens) exhausted(fp fingerprint, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[fp]
	if !ok || e.lim.TokensAt(now) >= 1 {
		return false, 0
	}
	res := e.lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	res.CancelAt(now)
	return true, wait
}

// failed records that the token's review failed now.
func (b *badTokens) failed(fp fingerprint, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[fp]
	if !ok {
		b.makeRoom(now)
		e = &badToken{lim: rate.NewLimiter(b.limit, b.burst)}
		b.entries[fp] = e
		b.count.Store(int64(len(b.entries)))
	}
	e.reviewed, e.seen = now, now
	e.lim.AllowN(now, 1)
}

// forget drops a token that has now authenticated.
func (b *badTokens) forget(fp fingerprint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, fp)
	b.count.Store(int64(len(b.entries)))
}

// none reports whether no token is remembered: a fingerprint would find
// nothing. A token that fails its review meanwhile is found by the
// requests after it.
func (b *badTokens) none() bool { return b.count.Load() == 0 }

// makeRoom keeps the table under its bound; b.mu is held.
func (b *badTokens) makeRoom(now time.Time) {
	if len(b.entries) < b.max {
		return
	}
	// An entry idle for a full refill and past its TTL changes no answer.
	idle := max(time.Duration(float64(b.burst)/float64(b.limit)*float64(time.Second)), b.ttl) + time.Second
	for k, e := range b.entries {
		if now.Sub(e.seen) > idle {
			delete(b.entries, k)
		}
	}
	for k := range b.entries {
		if len(b.entries) < b.max {
			break
		}
		delete(b.entries, k)
	}
}

// len is the number of tokens remembered.
func (b *badTokens) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// bearer is the request's bearer token; empty without one.
func bearer(r *http.Request) string {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return ""
	}
	return f[1]
}

// middleware answers 429, with Retry-After, to a token that failed its
// review more often than its bucket allows, before it is looked at again.
// It consults only the presented token's own record: no other client's
// failures, and no address, can refuse it.
func (b *badTokens) middleware(clk clock.PassiveClock, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := bearer(r)
		if token == "" {
			// No token: refused below without a review.
			metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
			next.ServeHTTP(w, r)
			return
		}
		if b.none() {
			next.ServeHTTP(w, r)
			return
		}
		if over, wait := b.exhausted(b.fingerprint(token), clk.Now()); over {
			metrics.GatewayRefusals.WithLabelValues(audit.RefusedRateLimited).Inc()
			tooMany(w, wait, "too many requests with a token that failed authentication")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tooMany answers 429 with Retry-After in whole seconds, at least one.
func tooMany(w http.ResponseWriter, wait time.Duration, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
	http.Error(w, msg, http.StatusTooManyRequests)
}

func retryAfterSeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
