package budget

import (
	"math"
	"runtime/debug"
	"sync"
)

// DefaultMaxRequestBytesInFlight bounds the request bytes a replica holds
// at once when the process has no memory limit to take a quarter of.
const DefaultMaxRequestBytesInFlight = 64 << 20

// InFlight bounds the request bytes a replica holds at once, all callers
// together and each namespace's callers together: a namespace sending
// large bodies at once waits for its own share and cannot take the
// replica's memory from the others.
type InFlight struct {
	total, perNamespace int64

	mu   sync.Mutex
	held int64
	byNS map[string]int64
}

// NewInFlight bounds the replica's request bytes in flight at total (0:
// a quarter of the process's memory limit when one is set, else 64 MiB),
// and each namespace's at half of that, but never below one request of
// maxRequest bytes.
func NewInFlight(total, maxRequest int64) *InFlight {
	if total <= 0 {
		total = DefaultMaxRequestBytesInFlight
		if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
			total = limit / 4
		}
	}
	total = max(total, maxRequest)
	return &InFlight{total: total, perNamespace: max(total/2, maxRequest), byNS: map[string]int64{}}
}

// Take holds n bytes for a request of namespace, reporting false, holding
// nothing, when that would pass the namespace's share or the replica's.
func (f *InFlight) Take(namespace string, n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held+n > f.total || f.byNS[namespace]+n > f.perNamespace {
		return false
	}
	f.held += n
	f.byNS[namespace] += n
	return true
}

// Give releases what Take held.
func (f *InFlight) Give(namespace string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held -= n
	if f.byNS[namespace] -= n; f.byNS[namespace] <= 0 {
		delete(f.byNS, namespace)
	}
}

// Held is how many request bytes are held now.
func (f *InFlight) Held() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// NamespaceShare is the most one namespace's requests may hold at once.
func (f *InFlight) NamespaceShare() int64 { return f.perNamespace }
