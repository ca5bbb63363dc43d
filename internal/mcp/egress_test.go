package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

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
	none, all := grant{key: "none"}, grant{all: true, key: "all"}
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

// The tenant's opt-in uses only what the administrator allowed: ranges for
// everyone, ranges for one namespace, and nothing else. Loopback is not
// reachable unless listed; link-local and metadata never are.
func TestEgressPolicyIsTheAdministratorsDecision(t *testing.T) {
	policy := EgressPolicy{
		PrivateCIDRs:   []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		NamespaceCIDRs: map[string][]netip.Prefix{"team-a": {netip.MustParsePrefix("192.168.0.0/16")}},
	}
	withLoopback := EgressPolicy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16")}}
	cases := []struct {
		name      string
		policy    EgressPolicy
		namespace string
		optIn     bool
		addr      string
		want      bool
	}{
		{"allowed range, opted in", policy, "team-b", true, "10.1.2.3", true},
		{"allowed range, not opted in", policy, "team-b", false, "10.1.2.3", false},
		{"allowed range through NAT64", policy, "team-b", true, "64:ff9b::a01:203", true},
		{"range of another namespace", policy, "team-b", true, "192.168.1.1", false},
		{"range of this namespace", policy, "team-a", true, "192.168.1.1", true},
		{"range of this namespace, not opted in", policy, "team-a", false, "192.168.1.1", false},
		{"loopback not listed", policy, "team-a", true, "127.0.0.1", false},
		{"IPv6 loopback not listed", policy, "team-a", true, "::1", false},
		{"loopback listed", withLoopback, "team-a", true, "127.0.0.1", true},
		{"metadata even when its range is listed", withLoopback, "team-a", true, "169.254.169.254", false},
		{"link-local even when its range is listed", withLoopback, "team-a", true, "169.254.1.1", false},
		{"no policy, opted in", EgressPolicy{}, "team-a", true, "10.1.2.3", false},
		{"development: everything private", EgressPolicy{AllowAllPrivate: true}, "team-a", false, "127.0.0.1", true},
		{"development: metadata still refused", EgressPolicy{AllowAllPrivate: true}, "team-a", true, "169.254.169.254", false},
		{"public, no opt-in", policy, "team-b", false, "93.184.216.34", true},
	}
	for _, c := range cases {
		if got := c.policy.Permits(c.namespace, c.optIn, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("%s: %s permitted %v, want %v", c.name, c.addr, got, c.want)
		}
	}
}

func TestParseEgressFlags(t *testing.T) {
	ps, err := ParseCIDRs(" 10.0.0.0/8, fd00::/8 ,")
	if err != nil || len(ps) != 2 || ps[1] != netip.MustParsePrefix("fd00::/8") {
		t.Fatalf("ParseCIDRs: %v %v", ps, err)
	}
	if _, err := ParseCIDRs("10.0.0.1"); err == nil {
		t.Error("an address without a length was accepted")
	}
	ns, err := ParseNamespaceCIDRs("team-a=10.1.0.0/16,10.2.0.0/16; team-b=192.168.0.0/24")
	if err != nil || len(ns["team-a"]) != 2 || len(ns["team-b"]) != 1 {
		t.Fatalf("ParseNamespaceCIDRs: %v %v", ns, err)
	}
	for _, bad := range []string{"team-a", "=10.0.0.0/8", "team-a=nonsense"} {
		if _, err := ParseNamespaceCIDRs(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// Through a real client and a real server on loopback: a server's opt-in
// alone does not reach the operator's loopback; the administrator's range
// does.
func TestOptInAloneDoesNotReachLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ep := Endpoint{Name: "team-a/loop", Namespace: "team-a", URL: srv.URL, AllowPrivateNetwork: true}

	_, err := New(Options{}).Probe(t.Context(), ep)
	if KindOf(err) != KindBlockedAddress {
		t.Fatalf("opt-in without an administrator's range: %v, want %s", err, KindBlockedAddress)
	}
	admin := EgressPolicy{NamespaceCIDRs: map[string][]netip.Prefix{"team-a": {netip.MustParsePrefix("127.0.0.0/8")}}}
	_, err = New(Options{Egress: admin}).Probe(t.Context(), ep)
	if KindOf(err) != KindServerError {
		t.Fatalf("opt-in within the administrator's range: %v, want the server's own 503", err)
	}
	other := ep
	other.Namespace = "team-b"
	_, err = New(Options{Egress: admin}).Probe(t.Context(), other)
	if KindOf(err) != KindBlockedAddress {
		t.Fatalf("another namespace reached a range allowed for team-a: %v", err)
	}
}

// A transport for other clients applies the grant on the request's context
// and ignores proxy settings in the environment.
func TestGuardedTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	// A proxy that must never be used: it refuses every connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := ln.Addr().String()
	_ = ln.Close()
	t.Setenv("HTTP_PROXY", "http://"+proxyAddr)
	t.Setenv("HTTPS_PROXY", "http://"+proxyAddr)
	t.Setenv("NO_PROXY", "")

	rt := NewGuardedTransport(nil)
	get := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	var blocked *BlockedAddressError
	if err := get(t.Context()); !errors.As(err, &blocked) {
		t.Fatalf("loopback without a grant: %v", err)
	}
	allowed := EgressPolicy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if err := get(WithEgress(t.Context(), allowed, "any", true)); err != nil {
		t.Fatalf("loopback with the administrator's range (the proxy in the environment must be ignored): %v", err)
	}
}
