package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// BlockedAddressError is returned by the dialer when the resolved address of
// a peer is refused. It names the address class, never the host name.
type BlockedAddressError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Private is true when the address is private (loopback, RFC 1918,
	// ...): the peer's opt-in within the administrator's ranges would
	// allow it. False for addresses that are never allowed (link-local,
	// metadata, ...).
	Private bool
}

func (e *BlockedAddressError) Error() string {
	if e.Private {
		return "dial refused: private or loopback address outside what the server may reach"
	}
	return "dial refused: link-local, metadata or reserved address"
}

func blocked(ip netip.Addr) *BlockedAddressError {
	return &BlockedAddressError{Addr: ip.Unmap(), Private: classifyAddr(ip) == classPrivate}
}

// dialer resolves a host, checks every resolved address, and dials only
// addresses the grant allows, by IP, so a second resolution (DNS rebinding)
// cannot swap the address after the check. The socket-level Control hook
// checks again right before connect(2) as a second line.
type dialer struct {
	// lookup resolves a host to addresses; tests replace it.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// dial connects to an already checked ip:port; tests replace it.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func newDialer() *dialer {
	nd := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		ControlContext: func(ctx context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial refused: unparsable address: %w", err)
			}
			if !addrAllowed(ap.Addr(), grantFrom(ctx)) {
				return blocked(ap.Addr())
			}
			return nil
		},
	}
	return &dialer{
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		dial: nd.DialContext,
	}
}

// DialContext implements the http.Transport dial hook.
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	g := grantFrom(ctx)
	var addrs []netip.Addr
	if ip, perr := netip.ParseAddr(host); perr == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = d.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	// One refused address refuses the host: a name that resolves to both a
	// public and a metadata address is an attack, not a fallback.
	for _, ip := range addrs {
		if !addrAllowed(ip, g) {
			return nil, blocked(ip)
		}
	}
	var errs []error
	for _, ip := range addrs {
		conn, derr := d.dial(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if derr == nil {
			return conn, nil
		}
		errs = append(errs, derr)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// Transport is an http.RoundTripper that dials through the address guard
// and never through a proxy. What a request may reach is the Grant on its
// context (WithGrant); a request without one reaches public addresses
// only. It keeps one connection pool per grant, so that a connection
// dialled for a peer allowed a private network is never reused by a
// request for a peer that is not. The number of grants is bounded by the
// namespaces the administrator configured, plus two.
type Transport struct {
	mu    sync.Mutex
	mk    func() *http.Transport
	pools map[string]*http.Transport
}

// NewTransport returns a Transport whose connections use tlsConfig (nil:
// the defaults).
func NewTransport(tlsConfig *tls.Config) *Transport {
	d := newDialer()
	return newTransport(func() *http.Transport {
		t := guardedTransport(d)
		if tlsConfig != nil {
			t.TLSClientConfig = tlsConfig.Clone()
		}
		return t
	})
}

func newTransport(mk func() *http.Transport) *Transport {
	return &Transport{mk: mk, pools: map[string]*http.Transport{}}
}

// guardedTransport is an http.Transport that dials through d and never
// through a proxy.
func guardedTransport(d *dialer) *http.Transport {
	return &http.Transport{
		// No proxy: a proxy would make the dialer check the proxy's
		// address instead of the peer's.
		Proxy:             nil,
		DialContext:       d.DialContext,
		ForceAttemptHTTP2: true,
		// The gateway sends many agents' concurrent calls to one server:
		// with fewer idle connections per host than calls in flight, every
		// call beyond them would dial a connection and close it after.
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 0, // the caller's deadline bounds the wait
		// Bodies are capped after decoding either way; not asking for
		// gzip keeps decompression bombs off the table entirely.
		DisableCompression: true,
	}
}

func (p *Transport) pool(key string) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.pools[key]
	if !ok {
		t = p.mk()
		p.pools[key] = t
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (p *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := grantFrom(req.Context()).key
	if key == "" {
		key = grantNone.key
	}
	return p.pool(key).RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of every pool, so that a
// cache dropping this transport drops its connections too.
func (p *Transport) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.pools {
		t.CloseIdleConnections()
	}
}
