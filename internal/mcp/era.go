package mcp

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Protocol revisions this client speaks, best first within each era.
var (
	modernVersions = []string{"2026-07-28"}
	legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}
)

// ProtocolVersions returns every protocol revision the client speaks, modern
// first.
func ProtocolVersions() []string {
	return append(append([]string(nil), modernVersions...), legacyVersions...)
}

// era is the family of protocol revisions a server speaks.
type era int

const (
	eraUnknown era = iota
	// eraLegacy: initialize handshake, optional session (2025-03-26 .. 2025-11-25).
	eraLegacy
	// eraModern: stateless, per-request _meta (2026-07-28 and later).
	eraModern
)

func eraOfVersion(v string) era {
	for _, m := range modernVersions {
		if v == m {
			return eraModern
		}
	}
	for _, l := range legacyVersions {
		if v == l {
			return eraLegacy
		}
	}
	return eraUnknown
}

// pickVersion selects the best version from a server's supported list that
// this client speaks and has not tried yet in this operation. Modern versions
// are preferred; a legacy version means the initialize handshake.
func pickVersion(supported []string, tried map[string]bool) (string, bool) {
	for _, pref := range [][]string{modernVersions, legacyVersions} {
		for _, v := range pref {
			if tried[v] {
				continue
			}
			for _, s := range supported {
				if s == v {
					return v, true
				}
			}
		}
	}
	return "", false
}

// DefaultEraCacheTTL is how long the era of an origin is remembered when
// Options.EraCacheTTL is 0.
const DefaultEraCacheTTL = 30 * time.Minute

// maxEraEntries bounds the cache; one entry per configured origin is the
// expected size, so the bound only matters against misuse.
const maxEraEntries = 4096

// eraEntry is what is remembered about an origin.
type eraEntry struct {
	era     era
	version string
	expires time.Time
}

// eraCache remembers, per origin (scheme, host, port), which era and version
// a server answered with. The specification calls the era a property of the
// server, not of a request; caching it saves the detection leg on every
// operation. An entry that turns out wrong is forgotten and re-probed.
type eraCache struct {
	mu  sync.Mutex
	ttl time.Duration
	m   map[string]eraEntry
	// urls are the origins of the URLs asked about (originOfURL).
	urls map[string]string
}

func newEraCache(ttl time.Duration) *eraCache {
	return &eraCache{ttl: ttl, m: make(map[string]eraEntry)}
}

func (c *eraCache) get(origin string, now time.Time) (eraEntry, bool) {
	if c.ttl < 0 {
		return eraEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[origin]
	if !ok {
		return eraEntry{}, false
	}
	if !now.Before(e.expires) {
		delete(c.m, origin)
		return eraEntry{}, false
	}
	return e, true
}

func (c *eraCache) put(origin string, e era, version string, now time.Time) {
	if c.ttl < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxEraEntries {
		// Drop expired entries first, then (still full) everything: the
		// cache is an optimisation and re-probing is always correct.
		for k, v := range c.m {
			if !now.Before(v.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxEraEntries {
			clear(c.m)
		}
	}
	c.m[origin] = eraEntry{era: e, version: version, expires: now.Add(c.ttl)}
}

func (c *eraCache) forget(origin string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, origin)
}

// originOf is scheme://host:port in lower case with the default port made
// explicit, so https://Example.com and https://example.com:443 share an entry.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// RemembersModern reports whether the client remembers the server at ep
// as one of 2026-07-28, which asks for input only in its results: a
// server it does not remember, or remembers as of the initialize era,
// may send requests of its own during a call.
func (c *Client) RemembersModern(ep Endpoint) bool {
	origin, ok := c.eras.originOfURL(ep.URL)
	if !ok {
		return false
	}
	e, ok := c.eras.get(origin, c.now())
	return ok && e.era == eraModern
}

// originOfURL is the origin of a URL, remembered so that asking again
// parses nothing; false for a URL that does not parse.
func (c *eraCache) originOfURL(raw string) (string, bool) {
	c.mu.Lock()
	origin, ok := c.urls[raw]
	c.mu.Unlock()
	if ok {
		return origin, true
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	origin = originOf(u)
	c.mu.Lock()
	if c.urls == nil || len(c.urls) >= maxEraEntries {
		c.urls = make(map[string]string)
	}
	c.urls[raw] = origin
	c.mu.Unlock()
	return origin, true
}
