package egress

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A bundle's client verifies the peer against the bundle and keeps the
// base's address guard: the bundle lifts nothing else.
func TestTrustAddsRootsAndKeepsTheGuard(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	bundle, err := ParseCABundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	if err != nil {
		t.Fatal(err)
	}
	trust := NewTrust(&http.Client{Transport: NewTransport(nil)})
	get := func(ctx context.Context, hc *http.Client) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	loopback := withAllowPrivate(t.Context(), true)

	base, err := trust.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	var unknown x509.UnknownAuthorityError
	if err := get(loopback, base); !errors.As(err, &unknown) {
		t.Fatalf("base client against a private CA: %v, want an unknown authority", err)
	}
	hc, err := trust.Client(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(loopback, hc); err != nil {
		t.Fatalf("client of the server's bundle: %v", err)
	}
	var blocked *BlockedAddressError
	if err := get(t.Context(), hc); !errors.As(err, &blocked) {
		t.Fatalf("client of the bundle without a grant reached loopback: %v", err)
	}
	if again, _ := trust.Client(bundle); again != hc {
		t.Error("the same bundle built a second client")
	}
}

// A transport whose TLS configuration cannot be copied is refused, not
// silently used without the bundle.
func TestTrustRefusesAnOpaqueTransport(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	bundle, err := ParseCABundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	if err != nil {
		t.Fatal(err)
	}
	opaque := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	if _, err := NewTrust(&http.Client{Transport: opaque}).Client(bundle); !errors.Is(err, ErrTransportTrust) {
		t.Fatalf("opaque transport: %v, want ErrTransportTrust", err)
	}
	// A plain *http.Transport (a test server's client) takes the roots.
	hc, err := NewTrust(&http.Client{Transport: &http.Transport{}}).Client(bundle)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatalf("plain transport with the bundle: %v", err)
	}
	_ = resp.Body.Close()
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closer struct{ closed *int }

func (c closer) CloseIdleConnections() { *c.closed++ }

func TestBundleCacheIsBoundedAndClosesEvicted(t *testing.T) {
	c := newBundleCache[closer](2)
	closed := 0
	built := 0
	build := func(*CABundle) closer { built++; return closer{closed: &closed} }
	var bs []*CABundle
	for _, cn := range []string{"a", "b", "c"} {
		b, err := ParseCABundle(testCA(t, cn))
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	c.get(bs[0], build)
	c.get(bs[1], build)
	c.get(bs[0], build) // a is now the most recent
	if built != 2 {
		t.Fatalf("built %d values for 2 keys", built)
	}
	c.get(bs[2], build) // evicts b
	if c.count() != 2 || closed != 1 {
		t.Fatalf("len %d, closed %d; want 2 and 1", c.count(), closed)
	}
	c.get(bs[0], build)
	if built != 3 {
		t.Fatal("the most recently used value was evicted")
	}
	c.get(bs[1], build)
	if built != 4 {
		t.Fatal("an evicted value was still served")
	}
}
