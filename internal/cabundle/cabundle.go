// Package cabundle turns PEM-encoded CA certificates into a trust anchor
// set with a stable key, and keeps a small bounded cache of HTTP transports
// per key. The MCP client and the token exchange share it, so that a
// server or token endpoint with a certificate from a private CA is verified
// against exactly the bundle its object names, without either package
// knowing where the bundle was read from.
package cabundle

import (
	"container/list"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
)

// MaxBytes bounds a bundle. A few hundred certificates fit comfortably; a
// larger value is a mistake (a wrong key, a binary blob), not a trust store.
const MaxBytes = 1 << 20

// ErrNoCertificate says the bundle holds no PEM CERTIFICATE block.
var ErrNoCertificate = errors.New("the CA bundle holds no PEM CERTIFICATE block")

// InvalidError says a bundle cannot be used: it is empty of certificates,
// too large, or a certificate in it does not parse. Only a change to the
// bundle cures it.
type InvalidError struct {
	Err error
}

func (e *InvalidError) Error() string { return "invalid CA bundle: " + e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Bundle is a parsed set of trusted CA certificates.
type Bundle struct {
	pool *x509.CertPool
	key  string
}

// Parse reads every PEM CERTIFICATE block in data; other blocks (a stray
// private key, say) are skipped, text around the blocks is ignored. It
// fails with *InvalidError when no certificate is found or one fails to
// parse: trusting the rest of a damaged bundle would hide the damage.
func Parse(data []byte) (*Bundle, error) {
	if len(data) > MaxBytes {
		return nil, &InvalidError{Err: fmt.Errorf("the CA bundle is larger than %d bytes", MaxBytes)}
	}
	pool := x509.NewCertPool()
	h := sha256.New()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, &InvalidError{Err: fmt.Errorf("certificate %d: %w", n+1, err)}
		}
		pool.AddCert(cert)
		// The key covers the certificates only, so reformatting or
		// commenting the PEM keeps the same transport.
		_, _ = h.Write(block.Bytes)
		n++
	}
	if n == 0 {
		return nil, &InvalidError{Err: ErrNoCertificate}
	}
	return &Bundle{pool: pool, key: hex.EncodeToString(h.Sum(nil))}, nil
}

// Pool returns the certificates as a pool for tls.Config.RootCAs.
func (b *Bundle) Pool() *x509.CertPool { return b.pool }

// Key is the hex SHA-256 over the bundle's certificates in order: equal
// bundles have equal keys.
func (b *Bundle) Key() string { return b.key }

// DefaultCacheSize is how many bundles' transports a Cache keeps.
const DefaultCacheSize = 32

// Cache keeps at most size values (HTTP transports or clients) by bundle
// key, dropping the least recently used. A dropped value that has
// CloseIdleConnections has it called, so its pooled connections go too.
type Cache[T any] struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *entry[T], most recent first
	byKey map[string]*list.Element
}

type entry[T any] struct {
	key string
	val T
}

// NewCache returns a cache of at most size values; size <= 0 means
// DefaultCacheSize.
func NewCache[T any](size int) *Cache[T] {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache[T]{size: size, order: list.New(), byKey: map[string]*list.Element{}}
}

// Get returns the value for b's key, building it with build on a miss.
func (c *Cache[T]) Get(b *Bundle, build func(*Bundle) T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[b.key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*entry[T]).val
	}
	v := build(b)
	c.byKey[b.key] = c.order.PushFront(&entry[T]{key: b.key, val: v})
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		e := old.Value.(*entry[T])
		delete(c.byKey, e.key)
		if ci, ok := any(e.val).(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
	return v
}

// Len is the number of cached values.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
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
