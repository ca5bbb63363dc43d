package egress

import (
	"net/netip"
	"testing"
)

func TestClassifyAddr(t *testing.T) {
	cases := map[string]addressClass{
		// Always refused.
		"169.254.169.254":        classForbidden,
		"169.254.0.1":            classForbidden,
		"169.254.170.2":          classForbidden,
		"fe80::1":                classForbidden,
		"fd00:ec2::254":          classForbidden,
		"100.100.100.200":        classForbidden,
		"168.63.129.16":          classForbidden,
		"192.0.0.192":            classForbidden,
		"::ffff:169.254.169.254": classForbidden,
		"64:ff9b::a9fe:a9fe":     classForbidden,
		"224.0.0.1":              classForbidden,
		"ff02::1":                classForbidden,
		"255.255.255.255":        classForbidden,
		"240.0.0.1":              classForbidden,
		"198.18.0.1":             classForbidden,
		"192.0.2.10":             classForbidden,
		"2001:db8::1":            classForbidden,
		// Refused unless opted in.
		"127.0.0.1":        classPrivate,
		"127.1.2.3":        classPrivate,
		"::1":              classPrivate,
		"10.1.2.3":         classPrivate,
		"172.16.0.1":       classPrivate,
		"172.31.255.254":   classPrivate,
		"192.168.1.1":      classPrivate,
		"100.64.0.1":       classPrivate,
		"100.127.255.254":  classPrivate,
		"0.0.0.0":          classPrivate,
		"::":               classPrivate,
		"fc00::1":          classPrivate,
		"fd12:3456::1":     classPrivate,
		"::ffff:10.0.0.1":  classPrivate,
		"64:ff9b::a00:1":   classPrivate,
		"::ffff:127.0.0.1": classPrivate,
		// Public.
		"93.184.216.34":        classPublic,
		"172.32.0.1":           classPublic,
		"100.128.0.1":          classPublic,
		"2606:4700::1111":      classPublic,
		"64:ff9b::5db8:d822":   classPublic,
		"::ffff:93.184.216.34": classPublic,
	}
	for s, want := range cases {
		if got := classifyAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: class %d, want %d", s, got, want)
		}
	}
	if classifyAddr(netip.Addr{}) != classForbidden {
		t.Error("the zero address is not forbidden")
	}
	all, none := grantAll, Grant{}
	if !addrAllowed(netip.MustParseAddr("10.0.0.1"), all) || addrAllowed(netip.MustParseAddr("10.0.0.1"), none) {
		t.Error("private opt-in not honoured")
	}
	if addrAllowed(netip.MustParseAddr("169.254.169.254"), all) {
		t.Error("metadata allowed with the private opt-in")
	}
}

// v6With builds an IPv6 address from a 16-byte template with the IPv4
// address v4 written at the given byte offsets.
func v6With(prefix [16]byte, v4 netip.Addr, at [4]int, invert bool) netip.Addr {
	b := prefix
	four := v4.As4()
	for i, o := range at {
		b[o] = four[i]
		if invert {
			b[o] = ^four[i]
		}
	}
	return netip.AddrFrom16(b)
}

// Every IPv6 form that carries an IPv4 address is classified as that IPv4
// address: loopback and private stay private, metadata stays forbidden, a
// public address stays public.
func TestEmbeddedIPv4FormsClassifyAsTheIPv4Address(t *testing.T) {
	targets := []struct {
		name string
		v4   netip.Addr
		want addressClass
	}{
		{"loopback", netip.MustParseAddr("127.0.0.1"), classPrivate},
		{"private", netip.MustParseAddr("10.1.2.3"), classPrivate},
		{"metadata", netip.MustParseAddr("169.254.169.254"), classForbidden},
		{"public", netip.MustParseAddr("93.184.216.34"), classPublic},
	}
	publicV4 := netip.MustParseAddr("8.8.4.4")
	tmpl := func(s string) [16]byte { return netip.MustParseAddr(s).As16() }
	forms := []struct {
		name string
		make func(v4 netip.Addr) netip.Addr
	}{
		{"IPv4 itself", func(v4 netip.Addr) netip.Addr { return v4 }},
		{"IPv4-mapped", func(v4 netip.Addr) netip.Addr { return netip.AddrFrom16(v4.As16()) }},
		{"IPv4-compatible ::a.b.c.d", func(v4 netip.Addr) netip.Addr { return v6With(tmpl("::"), v4, [4]int{12, 13, 14, 15}, false) }},
		{"NAT64 64:ff9b::/96", func(v4 netip.Addr) netip.Addr {
			return v6With(tmpl("64:ff9b::"), v4, [4]int{12, 13, 14, 15}, false)
		}},
		{"NAT64 local-use, /96 inside 64:ff9b:1::/48", func(v4 netip.Addr) netip.Addr {
			return v6With(tmpl("64:ff9b:1::"), v4, [4]int{12, 13, 14, 15}, false)
		}},
		{"NAT64 local-use, RFC 6052 /48 layout", func(v4 netip.Addr) netip.Addr {
			return v6With(tmpl("64:ff9b:1::"), v4, [4]int{6, 7, 9, 10}, false)
		}},
		{"6to4 2002::/16", func(v4 netip.Addr) netip.Addr {
			return v6With(tmpl("2002::1"), v4, [4]int{2, 3, 4, 5}, false)
		}},
		{"Teredo server", func(v4 netip.Addr) netip.Addr {
			// The client part carries a public address.
			a := v6With(tmpl("2001::"), v4, [4]int{4, 5, 6, 7}, false)
			return v6With(a.As16(), publicV4, [4]int{12, 13, 14, 15}, true)
		}},
		{"Teredo client", func(v4 netip.Addr) netip.Addr {
			a := v6With(tmpl("2001::"), publicV4, [4]int{4, 5, 6, 7}, false)
			return v6With(a.As16(), v4, [4]int{12, 13, 14, 15}, true)
		}},
	}
	none, all := grantNone, grantAll
	for _, f := range forms {
		for _, tg := range targets {
			ip := f.make(tg.v4)
			if got := classifyAddr(ip); got != tg.want {
				t.Errorf("%s of %s (%s): class %d, want %d", f.name, tg.name, ip, got, tg.want)
			}
			wantNone := tg.want == classPublic
			wantAll := tg.want != classForbidden
			if got := addrAllowed(ip, none); got != wantNone {
				t.Errorf("%s of %s (%s): allowed without a grant %v, want %v", f.name, tg.name, ip, got, wantNone)
			}
			if got := addrAllowed(ip, all); got != wantAll {
				t.Errorf("%s of %s (%s): allowed with every private range %v, want %v", f.name, tg.name, ip, got, wantAll)
			}
		}
	}
}
