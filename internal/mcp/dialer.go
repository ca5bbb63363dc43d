package mcp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
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
	// Prefixes of IPv6 forms that carry an IPv4 address. The embedded
	// address is where the packets end up (through a translator or a
	// tunnel), so it is classified exactly as the IPv4 address itself.
	compatPrefix    = netip.MustParsePrefix("::/96")          // IPv4-compatible (deprecated)
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")   // NAT64 well-known
	nat64Local      = netip.MustParsePrefix("64:ff9b:1::/48") // NAT64 local-use
	sixToFour       = netip.MustParsePrefix("2002::/16")      // 6to4
	teredoPrefix    = netip.MustParsePrefix("2001::/32")      // Teredo
	ipv6Loopback    = netip.IPv6Loopback()
	ipv6Unspecified = netip.IPv6Unspecified()
)

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries, if it is
// one of the forms that do. ip must already be unmapped (an IPv4-mapped
// address is IPv4 by then).
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	switch {
	case nat64Prefix.Contains(ip):
		return []netip.Addr{v4(12, 13, 14, 15)}
	case nat64Local.Contains(ip):
		// RFC 6052 places the IPv4 address after the prefix, skipping bits
		// 64-71. The local-use /48 may be used as is or with a longer
		// prefix carved out of it, and the address alone does not say
		// which. When bits 48-95 are zero only a /96 layout fits;
		// otherwise every position a prefix within the /48 can use is
		// classified, and all zeros at a position means nothing is there.
		if b[6]|b[7]|b[8]|b[9]|b[10]|b[11] == 0 {
			return []netip.Addr{v4(12, 13, 14, 15)}
		}
		var out []netip.Addr
		for _, a := range []netip.Addr{v4(6, 7, 9, 10), v4(7, 9, 10, 11), v4(9, 10, 11, 12), v4(12, 13, 14, 15)} {
			if !a.IsUnspecified() {
				out = append(out, a)
			}
		}
		return out
	case sixToFour.Contains(ip):
		return []netip.Addr{v4(2, 3, 4, 5)}
	case teredoPrefix.Contains(ip):
		// Bits 32-63 are the Teredo server; the client's address is the
		// last 32 bits, inverted.
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{v4(4, 5, 6, 7), client}
	case compatPrefix.Contains(ip) && ip != ipv6Loopback && ip != ipv6Unspecified:
		return []netip.Addr{v4(12, 13, 14, 15)}
	}
	return nil
}

// destinations are the addresses a connection to ip reaches: ip itself and
// any IPv4 address it carries.
func destinations(ip netip.Addr) []netip.Addr {
	ip = ip.Unmap().WithZone("")
	return append([]netip.Addr{ip}, embeddedIPv4(ip)...)
}

// classifyAddr decides the class of one resolved address: the most
// restrictive class of the address and of every IPv4 address it carries.
func classifyAddr(ip netip.Addr) addressClass {
	if !ip.IsValid() {
		return classForbidden
	}
	worst := classPublic
	for _, d := range destinations(ip) {
		worst = max(worst, classifyOne(d))
	}
	return worst
}

// classifyOne classifies an address by its own value only.
func classifyOne(ip netip.Addr) addressClass {
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

// addrAllowed reports whether ip may be dialled under a grant: public
// destinations always, forbidden ones never, private ones only within what
// the grant allows. An address that carries an IPv4 address is allowed only
// if both it and the carried address are.
func addrAllowed(ip netip.Addr, g grant) bool {
	if !ip.IsValid() {
		return false
	}
	for _, d := range destinations(ip) {
		switch classifyOne(d) {
		case classForbidden:
			return false
		case classPrivate:
			if !g.permits(d) {
				return false
			}
		}
	}
	return true
}

// BlockedAddressError is returned by the dialer when the resolved address of
// a server is refused. It names the address class, never the host name.
type BlockedAddressError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Private is true when the address is private (loopback, RFC 1918,
	// ...): the server's opt-in within the administrator's ranges would
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

// EgressPolicy is the cluster administrator's decision about which private
// networks the client may reach. A server's own opt-in (an Endpoint's
// AllowPrivateNetwork, set by whoever wrote the McpServer) can only use what
// this policy allows; without the opt-in no private address is dialled.
// Link-local and metadata addresses are refused under every policy.
type EgressPolicy struct {
	// AllowAllPrivate lets every server reach every private range, loopback
	// included, with or without its own opt-in. Development and tests only.
	AllowAllPrivate bool
	// PrivateCIDRs are the private ranges a server that opts in may reach.
	PrivateCIDRs []netip.Prefix
	// NamespaceCIDRs are further private ranges a server that opts in may
	// reach when it is in the namespace named by the key.
	NamespaceCIDRs map[string][]netip.Prefix
}

// grantFor is what one operation may reach.
func (p EgressPolicy) grantFor(namespace string, optIn bool) grant {
	switch {
	case p.AllowAllPrivate:
		return grant{all: true, key: "all"}
	case !optIn:
		return grant{key: "none"}
	}
	prefixes := append(append([]netip.Prefix(nil), p.PrivateCIDRs...), p.NamespaceCIDRs[namespace]...)
	if len(prefixes) == 0 {
		return grant{key: "none"}
	}
	parts := make([]string, len(prefixes))
	for i, pr := range prefixes {
		parts[i] = pr.Masked().String()
	}
	slices.Sort(parts)
	return grant{prefixes: prefixes, key: "cidrs:" + strings.Join(slices.Compact(parts), ",")}
}

// Permits reports whether the policy lets a server in namespace, with or
// without its own opt-in, dial ip.
func (p EgressPolicy) Permits(namespace string, optIn bool, ip netip.Addr) bool {
	return addrAllowed(ip, p.grantFor(namespace, optIn))
}

// ParseCIDRs reads a comma-separated list of CIDRs ("10.0.0.0/8,fd00::/8").
// Link-local and metadata addresses stay refused whatever the list holds.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// ParseNamespaceCIDRs reads "ns=cidr,cidr;ns2=cidr" into per-namespace lists.
func ParseNamespaceCIDRs(s string) (map[string][]netip.Prefix, error) {
	out := map[string][]netip.Prefix{}
	for _, entry := range strings.Split(s, ";") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		ns, cidrs, ok := strings.Cut(entry, "=")
		ns = strings.TrimSpace(ns)
		if !ok || ns == "" {
			return nil, fmt.Errorf("invalid entry %q: want namespace=cidr[,cidr...]", entry)
		}
		ps, err := ParseCIDRs(cidrs)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		out[ns] = append(out[ns], ps...)
	}
	return out, nil
}

// grant is the set of private destinations one operation may dial.
type grant struct {
	all      bool
	prefixes []netip.Prefix
	// key names the grant, so that connections are pooled per grant.
	key string
}

func (g grant) permits(ip netip.Addr) bool {
	if g.all {
		return true
	}
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// policyKey carries the per-request grant from the operation to the dialer
// through the request context.
type policyKey struct{}

// withGrant records on ctx which private destinations may be dialled.
func withGrant(ctx context.Context, g grant) context.Context {
	return context.WithValue(ctx, policyKey{}, g)
}

// grantFrom reads the grant; absent means no private destination.
func grantFrom(ctx context.Context) grant {
	g, _ := ctx.Value(policyKey{}).(grant)
	return g
}

// withAllowPrivate is withGrant for all or no private destinations.
func withAllowPrivate(ctx context.Context, allow bool) context.Context {
	if allow {
		return withGrant(ctx, grant{all: true, key: "all"})
	}
	return withGrant(ctx, grant{key: "none"})
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
			if !addrAllowed(ap.Addr(), grantFrom(ctx)) {
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

// policyTransport keeps one connection pool per grant, so that a connection
// dialled for a server allowed a private network is never reused by a
// request for a server that is not. The number of grants is bounded by the
// namespaces the administrator configured, plus two.
type policyTransport struct {
	mu    sync.Mutex
	mk    func() *http.Transport
	pools map[string]*http.Transport
}

func newPolicyTransport(d *safeDialer) *policyTransport {
	return &policyTransport{mk: func() *http.Transport { return guardedTransport(d) }, pools: map[string]*http.Transport{}}
}

// guardedTransport is an http.Transport that dials through d and never
// through a proxy.
func guardedTransport(d *safeDialer) *http.Transport {
	return &http.Transport{
		// No proxy: a proxy would make the dialer check the proxy's
		// address instead of the server's.
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
		ResponseHeaderTimeout: 0, // the leg deadline bounds the wait
		// Bodies are capped after decoding either way; not asking for
		// gzip keeps decompression bombs off the table entirely.
		DisableCompression: true,
	}
}

func (p *policyTransport) pool(key string) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.pools[key]
	if !ok {
		t = p.mk()
		p.pools[key] = t
	}
	return t
}

func (p *policyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	g := grantFrom(req.Context())
	key := g.key
	if key == "" {
		key = "none"
	}
	return p.pool(key).RoundTrip(req)
}

// NewGuardedTransport returns a transport for clients outside this package
// (the token exchange) that dials through the same guard as the MCP client,
// never through a proxy, with tlsConfig (nil: the defaults). What a request
// may reach is the grant WithEgress put on its context; a request without
// one reaches public addresses only.
func NewGuardedTransport(tlsConfig *tls.Config) http.RoundTripper {
	d := newSafeDialer()
	return &policyTransport{mk: func() *http.Transport {
		t := guardedTransport(d)
		if tlsConfig != nil {
			t.TLSClientConfig = tlsConfig.Clone()
		}
		return t
	}, pools: map[string]*http.Transport{}}
}

// WithEgress records on ctx what policy lets a peer of namespace reach,
// given that peer's own opt-in, for a transport from NewGuardedTransport.
func WithEgress(ctx context.Context, policy EgressPolicy, namespace string, optIn bool) context.Context {
	return withGrant(ctx, policy.grantFor(namespace, optIn))
}
