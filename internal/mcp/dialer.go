package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// addressClass says why an address may or may not be dialled.
type addressClass int

const (
	// classPublic: routable public address, always allowed.
	classPublic addressClass = iota
	// classPrivate: loopback, RFC 1918, unique-local, CGNAT, unspecified;
	// allowed only with a per-server opt-in or the manager-wide flag.
	classPrivate
	// classForbidden: link-local, cloud metadata, multicast, broadcast and
	// reserved space; never allowed, whatever the opt-in says.
	classForbidden
)

// metadataAddrs are cloud instance-metadata and host-agent addresses. Some
// fall in ranges that are otherwise only "private" (fd00:ec2::254 is
// unique-local, 100.100.100.200 is CGNAT) or even public (168.63.129.16), so
// they are listed explicitly to keep them forbidden under every opt-in.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, Oracle
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud (legacy)
}

var (
	forbiddenPrefixes = []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"),  // IPv4 link-local
		netip.MustParsePrefix("fe80::/10"),       // IPv6 link-local
		netip.MustParsePrefix("224.0.0.0/4"),     // IPv4 multicast
		netip.MustParsePrefix("ff00::/8"),        // IPv6 multicast
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, incl. broadcast
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("100::/64"),        // IPv6 discard-only
		netip.MustParsePrefix("2001:db8::/32"),   // IPv6 documentation
		netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
		netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
		netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	}
	privatePrefixes = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),      // "this network", incl. unspecified
		netip.MustParsePrefix("127.0.0.0/8"),    // loopback
		netip.MustParsePrefix("10.0.0.0/8"),     // RFC 1918
		netip.MustParsePrefix("172.16.0.0/12"),  // RFC 1918
		netip.MustParsePrefix("192.168.0.0/16"), // RFC 1918
		netip.MustParsePrefix("100.64.0.0/10"),  // CGNAT (RFC 6598)
		netip.MustParsePrefix("::1/128"),        // loopback
		netip.MustParsePrefix("::/128"),         // unspecified
		netip.MustParsePrefix("fc00::/7"),       // unique-local
	}
	// nat64Prefix embeds an IPv4 address in its last 32 bits; the embedded
	// address is classified too so 64:ff9b::a9fe:a9fe is metadata.
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
)

// classifyAddr decides the class of one resolved address.
func classifyAddr(ip netip.Addr) addressClass {
	if !ip.IsValid() {
		return classForbidden
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() && nat64Prefix.Contains(ip) {
		b := ip.As16()
		embedded := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if c := classifyAddr(embedded); c != classPublic {
			return c
		}
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return classForbidden
		}
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(ip) {
			return classForbidden
		}
	}
	for _, p := range privatePrefixes {
		if p.Contains(ip) {
			return classPrivate
		}
	}
	return classPublic
}

// addrAllowed reports whether ip may be dialled under the given opt-in.
func addrAllowed(ip netip.Addr, allowPrivate bool) bool {
	switch classifyAddr(ip) {
	case classPublic:
		return true
	case classPrivate:
		return allowPrivate
	default:
		return false
	}
}

// BlockedAddressError is returned by the dialer when the resolved address of
// a server is refused. It names the address class, never the host name.
type BlockedAddressError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Private is true when the address would be allowed with the private
	// network opt-in (loopback, RFC 1918, ...); false for addresses that are
	// never allowed (link-local, metadata, ...).
	Private bool
}

func (e *BlockedAddressError) Error() string {
	if e.Private {
		return "dial refused: private or loopback address without opt-in"
	}
	return "dial refused: link-local, metadata or reserved address"
}

// policyKey carries the per-request address policy from the operation to the
// dialer through the request context.
type policyKey struct{}

// withAllowPrivate records on ctx whether private addresses may be dialled.
func withAllowPrivate(ctx context.Context, allow bool) context.Context {
	return context.WithValue(ctx, policyKey{}, allow)
}

// allowPrivateFrom reads the policy; absent means "not allowed".
func allowPrivateFrom(ctx context.Context) bool {
	v, _ := ctx.Value(policyKey{}).(bool)
	return v
}

// safeDialer resolves a host, checks every resolved address, and dials only
// addresses the policy allows, by IP, so a second resolution (DNS rebinding)
// cannot swap the address after the check. The socket-level Control hook
// checks again right before connect(2) as a second line.
type safeDialer struct {
	// lookup resolves a host to addresses; tests replace it.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// dial connects to an already checked ip:port; tests replace it.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func newSafeDialer() *safeDialer {
	nd := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		ControlContext: func(ctx context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial refused: unparsable address: %w", err)
			}
			if !addrAllowed(ap.Addr(), allowPrivateFrom(ctx)) {
				return &BlockedAddressError{Addr: ap.Addr(), Private: classifyAddr(ap.Addr()) == classPrivate}
			}
			return nil
		},
	}
	return &safeDialer{
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		dial: nd.DialContext,
	}
}

// DialContext implements the http.Transport dial hook.
func (d *safeDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	allowPrivate := allowPrivateFrom(ctx)
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
		if !addrAllowed(ip, allowPrivate) {
			return nil, &BlockedAddressError{Addr: ip.Unmap(), Private: classifyAddr(ip) == classPrivate}
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

// policyTransport keeps two connection pools, one per address policy, so that
// a connection dialled for a server with the private-network opt-in is never
// reused by a request for a server without it.
type policyTransport struct {
	strict, permissive *http.Transport
}

func newPolicyTransport(d *safeDialer) *policyTransport {
	mk := func() *http.Transport {
		return &http.Transport{
			// No proxy: a proxy would make the dialer check the proxy's
			// address instead of the server's.
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          64,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			ResponseHeaderTimeout: 0, // the leg deadline bounds the wait
			// Bodies are capped after decoding either way; not asking for
			// gzip keeps decompression bombs off the table entirely.
			DisableCompression: true,
		}
	}
	return &policyTransport{strict: mk(), permissive: mk()}
}

func (p *policyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if allowPrivateFrom(req.Context()) {
		return p.permissive.RoundTrip(req)
	}
	return p.strict.RoundTrip(req)
}
