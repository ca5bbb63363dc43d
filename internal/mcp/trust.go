package mcp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"

	"github.com/mcp-catalog/operator/internal/cabundle"
)

// httpClientFor returns the HTTP client whose TLS verification trusts b, or
// the client's own for nil. Each bundle gets a copy of the base transport
// (same dialer and address policy, timeouts and redirect policy) differing
// only in RootCAs, built once and kept in a bounded cache.
func (c *Client) httpClientFor(b *cabundle.Bundle) (*http.Client, error) {
	if b == nil {
		return c.hc, nil
	}
	switch c.hc.Transport.(type) {
	case *policyTransport, *http.Transport, nil:
	default:
		return nil, errTransportTrust
	}
	return c.trusted.Get(b, func(b *cabundle.Bundle) *http.Client {
		hc := *c.hc
		hc.Transport = withRoots(c.hc.Transport, b.Pool())
		return &hc
	}), nil
}

// errTransportTrust says the client's HTTP transport is not one whose TLS
// configuration can be copied, so an endpoint's CA bundle cannot be honoured.
var errTransportTrust = errors.New("the HTTP transport cannot take a CA bundle")

// withRoots returns a copy of rt that verifies servers against pool.
// The caller has checked that rt is one of the handled types.
func withRoots(rt http.RoundTripper, pool *x509.CertPool) http.RoundTripper {
	switch t := rt.(type) {
	case *policyTransport:
		mk := t.mk
		return &policyTransport{mk: func() *http.Transport { return transportWithRoots(mk(), pool) }, pools: map[string]*http.Transport{}}
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

// CloseIdleConnections lets a cache drop a bundle's pools.
func (p *policyTransport) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.pools {
		t.CloseIdleConnections()
	}
}
