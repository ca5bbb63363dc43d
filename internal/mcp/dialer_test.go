package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
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
	all, none := grant{all: true}, grant{}
	if !addrAllowed(netip.MustParseAddr("10.0.0.1"), all) || addrAllowed(netip.MustParseAddr("10.0.0.1"), none) {
		t.Error("private opt-in not honoured")
	}
	if addrAllowed(netip.MustParseAddr("169.254.169.254"), all) {
		t.Error("metadata allowed with the private opt-in")
	}
}

// recordingDialer never touches the network: it records what the safe
// dialer asked for and fails the dial.
type recordingDialer struct {
	mu    sync.Mutex
	dials []string
}

var errNoDialInTests = errors.New("test dialer: not connecting")

func (r *recordingDialer) dial(_ context.Context, _, address string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dials = append(r.dials, address)
	return nil, errNoDialInTests
}

func TestSafeDialerChecksResolvedAddresses(t *testing.T) {
	zone := map[string][]string{
		"metadata.test": {"169.254.169.254"},
		"private.test":  {"10.0.0.5"},
		"mixed.test":    {"93.184.216.34", "fd00:ec2::254"},
		"public.test":   {"93.184.216.34", "2606:4700::1111"},
		"rebind.test":   {"93.184.216.34", "127.0.0.1"},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, s := range zone[host] {
			out = append(out, netip.MustParseAddr(s))
		}
		if out == nil {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return out, nil
	}
	cases := []struct {
		addr         string
		allowPrivate bool
		blocked      bool
		private      bool
		dials        []string
	}{
		{"metadata.test:80", true, true, false, nil},
		{"private.test:443", false, true, true, nil},
		{"private.test:443", true, false, false, []string{"10.0.0.5:443"}},
		{"mixed.test:443", true, true, false, nil},
		{"rebind.test:443", false, true, true, nil},
		{"public.test:443", false, false, false, []string{"93.184.216.34:443", "[2606:4700::1111]:443"}},
		{"169.254.169.254:80", true, true, false, nil},
		{"[::ffff:169.254.169.254]:80", true, true, false, nil},
		{"[fe80::1%eth0]:80", true, true, false, nil},
	}
	for _, c := range cases {
		rec := &recordingDialer{}
		d := &safeDialer{lookup: lookup, dial: rec.dial}
		_, err := d.DialContext(withAllowPrivate(t.Context(), c.allowPrivate), "tcp", c.addr)
		var blocked *BlockedAddressError
		if got := errors.As(err, &blocked); got != c.blocked {
			t.Errorf("%s (private %v): blocked %v, want %v (err %v)", c.addr, c.allowPrivate, got, c.blocked, err)
			continue
		}
		if c.blocked && blocked.Private != c.private {
			t.Errorf("%s: Private %v, want %v", c.addr, blocked.Private, c.private)
		}
		if !slices.Equal(rec.dials, c.dials) {
			t.Errorf("%s: dialled %v, want %v", c.addr, rec.dials, c.dials)
		}
	}
	rec := &recordingDialer{}
	_, err := (&safeDialer{lookup: lookup, dial: rec.dial}).DialContext(t.Context(), "tcp", "unknown.test:443")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || len(rec.dials) != 0 {
		t.Errorf("unknown host: %v, dials %v", err, rec.dials)
	}
}

// The socket-level hook is the second line: a dial that reaches it with a
// refused address fails before connect. Loopback is the only target used.
func TestSafeDialerControlHook(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	d := newSafeDialer()
	_, err = d.dial(t.Context(), "tcp", ln.Addr().String())
	var blocked *BlockedAddressError
	if !errors.As(err, &blocked) || !blocked.Private {
		t.Fatalf("control hook let loopback through without opt-in: %v", err)
	}
	conn, err := d.dial(withAllowPrivate(t.Context(), true), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("control hook refused loopback with opt-in: %v", err)
	}
	_ = conn.Close()
}

func TestPolicyTransportSeparatesPools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	var mu sync.Mutex
	used := map[string]int{}
	mk := func(name string) *http.Transport {
		return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			used[name]++
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
	}
	pt := &policyTransport{pools: map[string]*http.Transport{"none": mk("strict"), "all": mk("permissive")}}
	for _, allow := range []bool{false, true, false, true} {
		req, _ := http.NewRequestWithContext(withAllowPrivate(t.Context(), allow), http.MethodGet, srv.URL, nil)
		resp, err := pt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	// One connection per pool, each reused by its own policy only.
	if used["strict"] != 1 || used["permissive"] != 1 {
		t.Fatalf("dials per pool %v, want one each", used)
	}
}
