package egress

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

func TestDialerChecksResolvedAddresses(t *testing.T) {
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
		d := &dialer{lookup: lookup, dial: rec.dial}
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
	_, err := (&dialer{lookup: lookup, dial: rec.dial}).DialContext(t.Context(), "tcp", "unknown.test:443")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || len(rec.dials) != 0 {
		t.Errorf("unknown host: %v, dials %v", err, rec.dials)
	}
}

// The socket-level hook is the second line: a dial that reaches it with a
// refused address fails before connect. Loopback is the only target used.
func TestDialerControlHook(t *testing.T) {
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
	d := newDialer()
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

func TestTransportSeparatesPoolsPerGrant(t *testing.T) {
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
	pt := &Transport{pools: map[string]*http.Transport{"none": mk("strict"), "all": mk("permissive")}}
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

// The transport applies the grant on the request's context and ignores
// proxy settings in the environment.
func TestTransportAppliesTheGrantAndNoProxy(t *testing.T) {
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

	rt := NewTransport(nil)
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
	allowed := Policy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if err := get(WithGrant(t.Context(), allowed.Grant("any", true))); err != nil {
		t.Fatalf("loopback with the administrator's range (the proxy in the environment must be ignored): %v", err)
	}
}

// withAllowPrivate puts on ctx a grant of every private destination, or of
// none.
func withAllowPrivate(ctx context.Context, allow bool) context.Context {
	if allow {
		return WithGrant(ctx, grantAll)
	}
	return WithGrant(ctx, grantNone)
}
