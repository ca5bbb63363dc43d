package gateway

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Budgets bound what one ServiceAccount, and one namespace with all its
// ServiceAccounts, may take of the gateway: requests a second (a token
// bucket of Rate and Burst) and requests in flight at once. They are
// checked right after authentication, before any work for the request
// (a tool list, a decision, an upstream call). Zero fields take the
// defaults.
type Budgets struct {
	ServiceAccountRate        rate.Limit
	ServiceAccountBurst       int
	ServiceAccountConcurrency int
	NamespaceRate             rate.Limit
	NamespaceBurst            int
	NamespaceConcurrency      int
	// The bytes a ServiceAccount and a namespace are answered (tool lists
	// and call results), a second and in a burst: a request costs what it
	// is answered, so that a list of megabytes is not priced like a ping.
	// Charged after the answer; a caller in debt is refused until it is
	// repaid.
	ServiceAccountBytesRate  rate.Limit
	ServiceAccountBytesBurst int
	NamespaceBytesRate       rate.Limit
	NamespaceBytesBurst      int
}

// Default budgets, generous for agents and sized so that one namespace
// cannot take the whole of a replica: a ServiceAccount may make 100
// requests a second (bursts of 200) with 64 in flight; a namespace, four
// times that. A replica serves a few thousand calls a second
// (docs/benchmarks.md).
const (
	DefaultServiceAccountRate        = rate.Limit(100)
	DefaultServiceAccountBurst       = 200
	DefaultServiceAccountConcurrency = 64
	DefaultNamespaceRate             = rate.Limit(400)
	DefaultNamespaceBurst            = 800
	DefaultNamespaceConcurrency      = 256
	// A ServiceAccount may be answered 32 MiB a second (bursts of 128
	// MiB), a namespace 64 MiB (256 MiB): a few lists a second of the
	// largest catalogs, far more than any agent needs, and on one replica
	// a bound on the CPU one namespace's lists can take from the others.
	DefaultServiceAccountBytesRate  = rate.Limit(32 << 20)
	DefaultServiceAccountBytesBurst = 128 << 20
	DefaultNamespaceBytesRate       = rate.Limit(64 << 20)
	DefaultNamespaceBytesBurst      = 256 << 20
)

// The scope of a budget a request met: the Detail of its audit record and
// the scope label of mcp_catalog_gateway_budget_refusals_total.
const (
	BudgetServiceAccount = "ServiceAccount"
	BudgetNamespace      = "Namespace"
)

// maxBudgetKeys bounds each table of token buckets. An identity is known
// only once its token passed a review, so the tables grow with the
// cluster's ServiceAccounts, not with what callers send; past the bound,
// buckets idle long enough to be full again are dropped, then arbitrary
// ones.
const maxBudgetKeys = 10000

func (b Budgets) withDefaults() Budgets {
	if b.ServiceAccountRate <= 0 {
		b.ServiceAccountRate = DefaultServiceAccountRate
	}
	if b.ServiceAccountBurst <= 0 {
		b.ServiceAccountBurst = DefaultServiceAccountBurst
	}
	if b.ServiceAccountConcurrency <= 0 {
		b.ServiceAccountConcurrency = DefaultServiceAccountConcurrency
	}
	if b.NamespaceRate <= 0 {
		b.NamespaceRate = DefaultNamespaceRate
	}
	if b.NamespaceBurst <= 0 {
		b.NamespaceBurst = DefaultNamespaceBurst
	}
	if b.NamespaceConcurrency <= 0 {
		b.NamespaceConcurrency = DefaultNamespaceConcurrency
	}
	if b.ServiceAccountBytesRate <= 0 {
		b.ServiceAccountBytesRate = DefaultServiceAccountBytesRate
	}
	if b.ServiceAccountBytesBurst <= 0 {
		b.ServiceAccountBytesBurst = DefaultServiceAccountBytesBurst
	}
	if b.NamespaceBytesRate <= 0 {
		b.NamespaceBytesRate = DefaultNamespaceBytesRate
	}
	if b.NamespaceBytesBurst <= 0 {
		b.NamespaceBytesBurst = DefaultNamespaceBytesBurst
	}
	return b
}

// budgeter holds the buckets and in-flight counts of every identity and
// namespace that made a request.
type budgeter struct {
	b   Budgets
	clk clock.PassiveClock

	mu       sync.Mutex
	accounts buckets
	spaces   buckets
	// accountBytes and spaceBytes are the byte budgets: charged with what
	// was answered, their tokens go below zero while in debt.
	accountBytes buckets
	spaceBytes   buckets
	// inFlight counts requests in flight by ServiceAccount and by
	// namespace; a key is deleted when its count returns to zero, so the
	// maps hold no more than the requests in flight.
	inFlight map[budgetKey]int
}

type budgetKey struct{ scope, name string }

func newBudgeter(b Budgets, clk clock.PassiveClock) *budgeter {
	b = b.withDefaults()
	return &budgeter{
		b: b, clk: realOr(clk),
		accounts: buckets{limit: b.ServiceAccountRate, burst: b.ServiceAccountBurst, m: map[string]*bucketEntry{}},
		spaces:   buckets{limit: b.NamespaceRate, burst: b.NamespaceBurst, m: map[string]*bucketEntry{}},

		accountBytes: buckets{limit: b.ServiceAccountBytesRate, burst: b.ServiceAccountBytesBurst, m: map[string]*bucketEntry{}},
		spaceBytes:   buckets{limit: b.NamespaceBytesRate, burst: b.NamespaceBytesBurst, m: map[string]*bucketEntry{}},
		inFlight:     map[budgetKey]int{},
	}
}

// buckets is a bounded table of token buckets; the budgeter's mutex
// guards it.
type buckets struct {
	limit rate.Limit
	burst int
	m     map[string]*bucketEntry
}

type bucketEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

func (t *buckets) get(key string, now time.Time) *rate.Limiter {
	if e, ok := t.m[key]; ok {
		e.seen = now
		return e.lim
	}
	if len(t.m) >= maxBudgetKeys {
		// A bucket idle for a full refill is full again: forgetting it
		// changes nothing.
		idle := time.Duration(float64(t.burst)/float64(t.limit)*float64(time.Second)) + time.Second
		for k, e := range t.m {
			if now.Sub(e.seen) > idle {
				delete(t.m, k)
			}
		}
		for k := range t.m {
			if len(t.m) < maxBudgetKeys {
				break
			}
			delete(t.m, k)
		}
	}
	e := &bucketEntry{lim: rate.NewLimiter(t.limit, t.burst), seen: now}
	t.m[key] = e
	return e.lim
}

// overBudget is a refusal: which limit of which scope, and when to retry.
type overBudget struct {
	reason, scope string
	wait          time.Duration
}

// admit takes one request of id from its ServiceAccount's and its
// namespace's rate budgets and, when inFlight, a place in their
// concurrency budgets; release gives the places back. A request refused
// by one budget takes nothing from the other.
func (b *budgeter) admit(id *authn.Identity, inFlight bool) (release func(), refused *overBudget) {
	now := b.clk.Now()
	sa, ns := budgetKey{BudgetServiceAccount, id.Namespace + "/" + id.ServiceAccount}, budgetKey{BudgetNamespace, id.Namespace}
	b.mu.Lock()
	defer b.mu.Unlock()
	if inFlight {
		if b.inFlight[sa] >= b.b.ServiceAccountConcurrency {
			return nil, &overBudget{audit.RefusedConcurrencyLimited, BudgetServiceAccount, time.Second}
		}
		if b.inFlight[ns] >= b.b.NamespaceConcurrency {
			return nil, &overBudget{audit.RefusedConcurrencyLimited, BudgetNamespace, time.Second}
		}
	}
	// In debt for bytes answered: refused, charging nothing.
	for _, d := range []struct {
		t     *buckets
		key   string
		scope string
	}{{&b.accountBytes, sa.name, BudgetServiceAccount}, {&b.spaceBytes, ns.name, BudgetNamespace}} {
		lim := d.t.get(d.key, now)
		if tokens := lim.TokensAt(now); tokens < 0 {
			return nil, &overBudget{audit.RefusedBytesLimited, d.scope, time.Duration(-tokens / float64(lim.Limit()) * float64(time.Second))}
		}
	}
	rsa := b.accounts.get(sa.name, now).ReserveN(now, 1)
	if d := rsa.DelayFrom(now); !rsa.OK() || d > 0 {
		rsa.CancelAt(now)
		return nil, &overBudget{audit.RefusedRateLimited, BudgetServiceAccount, d}
	}
	rns := b.spaces.get(ns.name, now).ReserveN(now, 1)
	if d := rns.DelayFrom(now); !rns.OK() || d > 0 {
		rns.CancelAt(now)
		rsa.CancelAt(now)
		return nil, &overBudget{audit.RefusedRateLimited, BudgetNamespace, d}
	}
	if !inFlight {
		return func() {}, nil
	}
	b.inFlight[sa]++
	b.inFlight[ns]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, k := range []budgetKey{sa, ns} {
				if b.inFlight[k]--; b.inFlight[k] <= 0 {
					delete(b.inFlight, k)
				}
			}
		})
	}, nil
}

// charge takes n bytes answered to id from its ServiceAccount's and its
// namespace's byte budgets, into debt if need be.
func (b *budgeter) charge(id *authn.Identity, n int) {
	now := b.clk.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range []struct {
		t   *buckets
		key string
	}{{&b.accountBytes, id.Namespace + "/" + id.ServiceAccount}, {&b.spaceBytes, id.Namespace}} {
		lim := d.t.get(d.key, now)
		// A reservation larger than the burst is refused whole: taken in
		// pieces, it leaves the bucket that far below zero.
		for left := n; left > 0; left -= d.t.burst {
			lim.ReserveN(now, min(left, d.t.burst))
		}
	}
}

// budgeted serves a request only within its caller's budgets. It runs
// right after authentication: a refused request has cost a token review
// (cached) and nothing else. Every method spends the rate budgets; only a
// POST, which carries the work (a list, a call), holds a place in the
// concurrency budgets while it is served, so that an open event stream
// (GET, or a 2026-07-28 subscriptions/listen, bounded on its own in
// changes.go) does not hold one for as long as it is open.
func (g *Gateway) budgeted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context()))
		if id == nil {
			next.ServeHTTP(w, r)
			return
		}
		release, over := g.budgets.admit(id, r.Method == http.MethodPost && !listenRequest(r))
		if over != nil {
			g.refuseOverBudget(r.Context(), w, id, over)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// refuseOverBudget answers 429 with Retry-After and, as the transport
// allows for a request the server cannot accept, a JSON-RPC error
// response without an id; it counts the refusal and audits it.
func (g *Gateway) refuseOverBudget(ctx context.Context, w http.ResponseWriter, id *authn.Identity, over *overBudget) {
	metrics.GatewayRefusals.WithLabelValues(over.reason).Inc()
	metrics.GatewayBudgetRefusals.WithLabelValues(id.Namespace, over.scope, over.reason).Inc()
	rec := audit.Record{
		Time: g.now(), CallID: audit.NewCallID(), Phase: audit.PhaseDenied, Decision: "Denied",
		Caller: id.Username, Namespace: id.Namespace, Reason: over.reason, Detail: over.scope,
	}
	g.writeDenial(ctx, rec)
	secs := max(1, int(math.Ceil(over.wait.Seconds())))
	what := "request"
	if over.reason == audit.RefusedBytesLimited {
		what = "answered-bytes"
	}
	msg := "the caller's ServiceAccount is over its " + what + " budget at the gateway; retry later"
	if over.scope == BudgetNamespace {
		msg = "the caller's namespace is over its " + what + " budget at the gateway; retry later"
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"error": map[string]any{
			"code":    budgetErrorCode,
			"message": msg,
			"data":    map[string]any{"reason": over.reason, "scope": over.scope, "retryAfterSeconds": secs},
		},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}

// budgetErrorCode is the JSON-RPC error code of a request refused over
// budget, in the range JSON-RPC leaves to servers.
const budgetErrorCode = -32029
