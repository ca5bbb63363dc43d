package egress

import (
	"container/list"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"sync"
)

// ErrTransportTrust says an HTTP client's transport is not one whose TLS
// configuration can be copied (a Transport of this package, an
// *http.Transport, or nil for the default), so a CA bundle cannot be
// honoured.
var ErrTransportTrust = errors.New("the HTTP transport cannot take a CA bundle")

// Trust hands out, per CA bundle, a copy of a base HTTP client whose
// transport verifies servers against that bundle's certificates only.
// Everything else is the base's: the dialer and its address guard, the
// pools per grant, the timeouts, the redirect policy. Each bundle's client
// is built once and kept in a bounded cache by the bundle's key, so its
// connections are pooled and never shared with another bundle's.
type Trust struct {
	base  *http.Client
	cache *bundleCache[*http.Client]
}

// NewTrust returns a Trust built on base, which must not change afterwards.
func NewTrust(base *http.Client) *Trust {
	return &Trust{base: base, cache: newBundleCache[*http.Client](0)}
}

// Client returns the client that trusts b, or the base client for nil. It
// fails with ErrTransportTrust when the base's transport cannot take roots.
func (t *Trust) Client(b *CABundle) (*http.Client, error) {
	if b == nil {
		return t.base, nil
	}
	switch t.base.Transport.(type) {
	case *Transport, *http.Transport, nil:
	default:
		return nil, ErrTransportTrust
	}
	return t.cache.get(b, func(b *CABundle) *http.Client {
		hc := *t.base
		hc.Transport = withRoots(t.base.Transport, b.Pool())
		return &hc
	}), nil
}

// withRoots returns a copy of rt that verifies servers against pool.
// The caller has checked that rt is one of the handled types.
func withRoots(rt http.RoundTripper, pool *x509.CertPool) http.RoundTripper {
	switch t := rt.(type) {
	case *Transport:
		mk := t.mk
		return newTransport(func() *http.Transport { return transportWithRoots(mk(), pool) })
	case *http.Transport:
		return transportWithRoots(t, pool)
	}
	return transportWithRoots(http.DefaultTransport.(*http.Transport), pool)
}

func transportWithRoots(t *http.Transport, pool *x509.CertPool) *http.Transport {
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.RootCAs = pool
	return t
}

// IsVerificationFailure reports whether err is a failed verification of a
// peer's certificate (unknown authority, wrong host name, invalid
// certificate), as opposed to a handshake or connection that broke. Only
// the former is cured by a CA bundle.
func IsVerificationFailure(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	return errors.As(err, &certErr) || errors.As(err, &unknownAuthority) ||
		errors.As(err, &hostnameErr) || errors.As(err, &invalidErr)
}

// defaultBundleCacheSize is how many bundles' clients a Trust keeps.
const defaultBundleCacheSize = 32

// bundleCache keeps at most size values (HTTP transports or clients) by
// bundle key, dropping the least recently used. A dropped value that has
// CloseIdleConnections has it called, so its pooled connections go too.
type bundleCache[T any] struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *bundleEntry[T], most recent first
	byKey map[string]*list.Element
}

type bundleEntry[T any] struct {
	key string
	val T
}

// newBundleCache returns a cache of at most size values; size <= 0 means
// defaultBundleCacheSize.
func newBundleCache[T any](size int) *bundleCache[T] {
	if size <= 0 {
		size = defaultBundleCacheSize
	}
	return &bundleCache[T]{size: size, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the value for b's key, building it with build on a miss.
func (c *bundleCache[T]) get(b *CABundle, build func(*CABundle) T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[b.key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*bundleEntry[T]).val
	}
	v := build(b)
	c.byKey[b.key] = c.order.PushFront(&bundleEntry[T]{key: b.key, val: v})
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		e := old.Value.(*bundleEntry[T])
		delete(c.byKey, e.key)
		if ci, ok := any(e.val).(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
	return v
}

// count is the number of cached values.
func (c *bundleCache[T]) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
