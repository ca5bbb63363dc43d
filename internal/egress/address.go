package egress

import "net/netip"

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
func addrAllowed(ip netip.Addr, g Grant) bool {
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
