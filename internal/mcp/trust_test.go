package mcp_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// tlsPeer serves a real go-sdk server over TLS with a certificate from
// httptest's own CA, which no system trusts.
func tlsPeer(t *testing.T) (*httptest.Server, *egress.CABundle) {
	t.Helper()
	s, err := mcpserver.New(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	b, err := egress.ParseCABundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	if err != nil {
		t.Fatal(err)
	}
	return srv, b
}

// TestPrivateCATrust: a server whose certificate a private CA issued is
// refused with a typed TLS failure unless the endpoint carries that CA's
// bundle, and the bundle changes nothing else about the connection.
func TestPrivateCATrust(t *testing.T) {
	srv, bundle := tlsPeer(t)
	// The administrator allows loopback for servers that opt in, so the
	// server's own opt-in still decides.
	cl := mcp.New(mcp.Options{Egress: egress.Policy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	ep := mcp.Endpoint{Name: "pki/private", URL: srv.URL + mcpserver.Path, AllowPrivateNetwork: true}

	_, err := cl.Probe(t.Context(), ep)
	var e *mcp.Error
	if !errors.As(err, &e) || e.Kind != mcp.KindUntrustedCertificate {
		t.Fatalf("without the bundle: %v, want %s", err, mcp.KindUntrustedCertificate)
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("cause of %v is not an unknown authority", err)
	}

	ep.CABundle = bundle
	cat, err := cl.ListTools(t.Context(), ep)
	if err != nil {
		t.Fatalf("with the bundle: %v", err)
	}
	if len(cat.Tools) != len(mcpserver.BuiltinTools()) {
		t.Fatalf("imported %d tools, want %d", len(cat.Tools), len(mcpserver.BuiltinTools()))
	}

	// A bundle of another CA is no better than none.
	ep.CABundle = foreignBundle(t)
	if _, err := cl.Probe(t.Context(), ep); mcp.KindOf(err) != mcp.KindUntrustedCertificate {
		t.Fatalf("with another CA's bundle: %v", err)
	}

	// The bundle does not lift the address policy: the dialer still refuses
	// loopback without the opt-in.
	ep.CABundle, ep.AllowPrivateNetwork = bundle, false
	if _, err := cl.Probe(t.Context(), ep); mcp.KindOf(err) != mcp.KindBlockedAddress {
		t.Fatalf("loopback with a bundle but without opt-in: %v", err)
	}
}

// foreignBundle is a bundle of a freshly made CA that signed nothing.
// (httptest gives every TLS server the same certificate, so a second
// server would not be a second CA.)
func foreignBundle(t *testing.T) *egress.CABundle {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "foreign CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := egress.ParseCABundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
