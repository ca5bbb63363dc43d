package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"

	"github.com/mcp-catalog/operator/internal/cabundle"
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
	cache *cabundle.Cache[*http.Client]
}

// NewTrust returns a Trust built on base, which must not change afterwards.
func NewTrust(base *http.Client) *Trust {
	return &Trust{base: base, cache: cabundle.NewCache[*http.Client](0)}
}

// Client returns the client that trusts b, or the base client for nil. It
// fails with ErrTransportTrust when the base's transport cannot take roots.
func (t *Trust) Client(b *cabundle.Bundle) (*http.Client, error) {
	if b == nil {
		return t.base, nil
	}
	switch t.base.Transport.(type) {
	case *Transport, *http.Transport, nil:
	default:
		return nil, ErrTransportTrust
	}
	return t.cache.Get(b, func(b *cabundle.Bundle) *http.Client {
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
