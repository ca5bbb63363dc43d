package gateway

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcp-catalog/operator/internal/metrics"
)

// Defaults for failed authentication per client address: a burst of 20,
// refilled at 2 a second. An agent that authenticates is never limited; a
// client that keeps presenting bad tokens is answered 429 before its next
// token is reviewed, so it cannot turn the gateway into a TokenReview
// amplifier.
const (
	DefaultUnauthenticatedRate  = rate.Limit(2)
	DefaultUnauthenticatedBurst = 20
)

// maxLimitedClients bounds the per-address table; past it, the addresses
// not seen for a while are dropped, and if none are, every new address
// shares one bucket.
const maxLimitedClients = 10000

// unauthLimiter keeps one token bucket per client address, spent only by
// requests that fail authentication.
type unauthLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	clients map[string]*clientBucket
	shared  *rate.Limiter
}

type clientBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newUnauthLimiter(limit rate.Limit, burst int) *unauthLimiter {
	if limit <= 0 {
		limit = DefaultUnauthenticatedRate
	}
	if burst <= 0 {
		burst = DefaultUnauthenticatedBurst
	}
	return &unauthLimiter{limit: limit, burst: burst, clients: map[string]*clientBucket{}, shared: rate.NewLimiter(limit, burst)}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (l *unauthLimiter) bucket(addr string, now time.Time) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.clients[addr]; ok {
		b.seen = now
		return b.lim
	}
	if len(l.clients) >= maxLimitedClients {
		// A bucket not touched for as long as a full refill takes is full
		// again, so forgetting it changes nothing.
		idle := time.Duration(float64(l.burst)/float64(l.limit)*float64(time.Second)) + time.Second
		for k, b := range l.clients {
			if now.Sub(b.seen) > idle {
				delete(l.clients, k)
			}
		}
		if len(l.clients) >= maxLimitedClients {
			return l.shared
		}
	}
	b := &clientBucket{lim: rate.NewLimiter(l.limit, l.burst), seen: now}
	l.clients[addr] = b
	return b.lim
}

// exhausted reports whether the address has no failed attempt left now,
// and if so how long until it has one.
func (l *unauthLimiter) exhausted(r *http.Request, now time.Time) (bool, time.Duration) {
	lim := l.bucket(clientAddr(r), now)
	if lim.TokensAt(now) >= 1 {
		return false, 0
	}
	res := lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	res.CancelAt(now)
	return true, wait
}

// failed spends one attempt of the address.
func (l *unauthLimiter) failed(r *http.Request, now time.Time) {
	l.bucket(clientAddr(r), now).AllowN(now, 1)
}

// middleware answers 429, with Retry-After, to an address that has used up
// its failed attempts, before the request's token is looked at.
func (l *unauthLimiter) middleware(now func() time.Time, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if over, wait := l.exhausted(r, now()); over {
			secs := int(math.Ceil(wait.Seconds()))
			if secs < 1 {
				secs = 1
			}
			metrics.GatewayRefusals.WithLabelValues(RefusedRateLimited).Inc()
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			http.Error(w, "too many unauthenticated requests", http.StatusTooManyRequests)
			return
		}
		if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
			// No token at all: refused below without a review, and spent
			// here, since the verifier never sees it.
			l.failed(r, now())
			metrics.GatewayRefusals.WithLabelValues(RefusedUnauthenticated).Inc()
		}
		next.ServeHTTP(w, r)
	})
}
