package tenancy

import (
	"math"
	"sync"
)

// Budget is the process's budget of catalog bytes in flight: an import
// takes its catalog byte ceiling from it before it reads a catalog and
// gives it back once the catalog is applied, so however many imports run
// at once, the catalogs they hold add up to at most the total. One
// namespace holds at most half of it, so that another namespace's import
// can always start once imports it is not waiting behind end.
//
// It never blocks: an import that cannot have its bytes now is told so and
// tries again later, without holding a worker meanwhile.
type Budget struct {
	total, perTenant int64

	mu       sync.Mutex
	held     int64
	byTenant map[string]int64
	peak     int64
}

// minInFlight is the smallest total a Budget is given, so that one
// namespace may always hold an import at the API's smallest catalog
// ceiling (64 KiB) many times over.
const minInFlight = 2 << 20

// NewBudget returns a budget of total bytes (at least 2 MiB).
func NewBudget(total int64) *Budget {
	total = max(total, minInFlight)
	return &Budget{total: total, perTenant: total / 2, byTenant: map[string]int64{}}
}

// DefaultInFlight is the budget a process gets unless told otherwise: a
// quarter of its memory limit (GOMEMLIMIT, which the chart sets from the
// container's limit; an import holds a small multiple of its catalog's
// bytes while it reads), or, without a limit, what workers imports at the
// default catalog ceiling hold.
func DefaultInFlight(memoryLimit int64, workers int, defaultCatalogBytes int64) int64 {
	if memoryLimit > 0 && memoryLimit < math.MaxInt64 {
		return memoryLimit / 4
	}
	return int64(max(1, workers)) * defaultCatalogBytes
}

// Total is the whole budget; PerTenant is what one namespace may hold, and
// so the largest catalog ceiling an import can be given.
func (b *Budget) Total() int64     { return b.total }
func (b *Budget) PerTenant() int64 { return b.perTenant }

// TryAcquire takes n bytes for tenant if both the budget and the tenant's
// half of it have room, and reports whether it did. n above PerTenant is
// never granted.
func (b *Budget) TryAcquire(tenant string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= 0 {
		return true
	}
	if b.held+n > b.total || b.byTenant[tenant]+n > b.perTenant {
		return false
	}
	b.held += n
	b.byTenant[tenant] += n
	b.peak = max(b.peak, b.held)
	return true
}

// Release gives back n bytes tenant acquired.
func (b *Budget) Release(tenant string, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if b.byTenant[tenant] -= n; b.byTenant[tenant] <= 0 {
		delete(b.byTenant, tenant)
	}
}

// Held is how many bytes are taken now, in all and by tenant.
func (b *Budget) Held(tenant string) (all, byTenant int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.byTenant[tenant]
}

// Peak is the most bytes ever taken at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
