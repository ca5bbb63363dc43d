package personauth

import (
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// What a replica keeps, so that a busy person's calls do not each read
// their Secret from the API server, nor each call that needs consent
// fetch two metadata documents: a usable token for TokenTTL (a revocation
// with kubectl reaches a replica within it), and a server's discovered
// authorization server for MetadataTTL, keyed by the server's UID and
// generation (a changed spec is discovered afresh). Nothing is kept of a
// person who has no usable token, so a consent is seen at once. Each map
// is bounded: past maxCached entries it starts again.
const (
	TokenTTL    = 10 * time.Second
	MetadataTTL = 5 * time.Minute
	maxCached   = 4096
)

type cached[T any] struct {
	v     T
	until time.Time
}

type ttlMap[T any] struct {
	mu      sync.Mutex
	entries map[string]cached[T]
}

func (m *ttlMap[T]) get(key string, now time.Time) (T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok || !now.Before(e.until) {
		var zero T
		return zero, false
	}
	return e.v, true
}

func (m *ttlMap[T]) put(key string, v T, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil || len(m.entries) >= maxCached {
		m.entries = map[string]cached[T]{}
	}
	m.entries[key] = cached[T]{v: v, until: until}
}

func (m *ttlMap[T]) drop(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
}

// discovered is a server's authorization server as discovery found it.
type discovered struct {
	issuer string
	meta   *oauthex.AuthServerMeta
}
