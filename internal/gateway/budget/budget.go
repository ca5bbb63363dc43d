// Package budget bounds what one ServiceAccount and one namespace may
// take of the gateway: requests a second, requests in flight, bytes
// answered, and the request bytes a replica holds at once.
package budget

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
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

// Budgeter holds the buckets and in-flight counts of every identity and
// namespace that made a request.
type Budgeter struct {
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

func NewBudgeter(b Budgets, clk clock.PassiveClock) *Budgeter {
	b = b.withDefaults()
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Budgeter{
		b: b, clk: clk,
		accounts: buckets{limit: b.ServiceAccountRate, burst: b.ServiceAccountBurst, m: map[string]*bucketEntry{}},
		spaces:   buckets{limit: b.NamespaceRate, burst: b.NamespaceBurst, m: map[string]*bucketEntry{}},

		accountBytes: buckets{limit: b.ServiceAccountBytesRate, burst: b.ServiceAccountBytesBurst, m: map[string]*bucketEntry{}},
		spaceBytes:   buckets{limit: b.NamespaceBytesRate, burst: b.NamespaceBytesBurst, m: map[string]*bucketEntry{}},
		inFlight:     map[budgetKey]int{},
	}
}

// buckets is a bounded table of token buckets; the Budgeter's mutex
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

// OverBudget is a refusal: which limit of which scope, and when to retry.
type OverBudget struct {
	// Reason is RefusedRateLimited, RefusedConcurrencyLimited or
	// RefusedBytesLimited; Scope is BudgetServiceAccount or
	// BudgetNamespace.
	Reason, Scope string
	// Wait is how long until the budget has room again.
	Wait time.Duration
}

// admit takes one request of id from its ServiceAccount's and its
// namespace's rate budgets and, when inFlight, a place in their
// concurrency budgets; release gives the places back. A request refused
// by one budget takes nothing from the other.
func (b *Budgeter) Admit(id *authn.Identity, inFlight bool) (release func(), refused *OverBudget) {
	now := b.clk.Now()
	sa, ns := budgetKey{BudgetServiceAccount, id.Key()}, budgetKey{BudgetNamespace, id.Namespace}
	b.mu.Lock()
	defer b.mu.Unlock()
	if inFlight {
		if b.inFlight[sa] >= b.b.ServiceAccountConcurrency {
			return nil, &OverBudget{audit.RefusedConcurrencyLimited, BudgetServiceAccount, time.Second}
		}
		if b.inFlight[ns] >= b.b.NamespaceConcurrency {
			return nil, &OverBudget{audit.RefusedConcurrencyLimited, BudgetNamespace, time.Second}
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
			return nil, &OverBudget{audit.RefusedBytesLimited, d.scope, time.Duration(-tokens / float64(lim.Limit()) * float64(time.Second))}
		}
	}
	rsa := b.accounts.get(sa.name, now).ReserveN(now, 1)
	if d := rsa.DelayFrom(now); !rsa.OK() || d > 0 {
		rsa.CancelAt(now)
		return nil, &OverBudget{audit.RefusedRateLimited, BudgetServiceAccount, d}
	}
	rns := b.spaces.get(ns.name, now).ReserveN(now, 1)
	if d := rns.DelayFrom(now); !rns.OK() || d > 0 {
		rns.CancelAt(now)
		rsa.CancelAt(now)
		return nil, &OverBudget{audit.RefusedRateLimited, BudgetNamespace, d}
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
func (b *Budgeter) Charge(id *authn.Identity, n int) {
	now := b.clk.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range []struct {
		t   *buckets
		key string
	}{{&b.accountBytes, id.Key()}, {&b.spaceBytes, id.Namespace}} {
		lim := d.t.get(d.key, now)
		// A reservation larger than the burst is refused whole: taken in
		// pieces, it leaves the bucket that far below zero.
		for left := n; left > 0; left -= d.t.burst {
			lim.ReserveN(now, min(left, d.t.burst))
		}
	}
}

// ErrorCode is the JSON-RPC error code of a request refused over
// budget, in the range JSON-RPC leaves to servers.
const ErrorCode = -32029

// Holding is how many ServiceAccounts and namespaces have requests in
// flight now.
func (b *Budgeter) Holding() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.inFlight)
}
