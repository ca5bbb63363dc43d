package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"
)

func testCA(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestCABundleKeyIgnoresFormatting(t *testing.T) {
	a, b := testCA(t, "a"), testCA(t, "b")
	one, err := ParseCABundle(append(append([]byte{}, a...), b...))
	if err != nil {
		t.Fatal(err)
	}
	// Comments and a non-certificate block around the same certificates.
	framed := append([]byte("# team CA\n"), a...)
	framed = append(framed, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})...)
	framed = append(framed, b...)
	two, err := ParseCABundle(framed)
	if err != nil {
		t.Fatal(err)
	}
	if one.Key() != two.Key() {
		t.Fatal("the same certificates gave different keys")
	}
	other, err := ParseCABundle(a)
	if err != nil {
		t.Fatal(err)
	}
	if other.Key() == one.Key() {
		t.Fatal("different certificates gave the same key")
	}
}

func TestParseCABundleRefusesUnusableBundles(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":        nil,
		"text":         []byte("not a certificate"),
		"only a key":   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2}}),
		"bad DER":      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}),
		"too large":    make([]byte, MaxCABundleBytes+1),
		"one bad of 2": append(testCA(t, "a"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{9}})...),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCABundle(data)
			var inv *InvalidCABundleError
			if !errors.As(err, &inv) {
				t.Fatalf("want *InvalidCABundleError, got %v", err)
			}
		})
	}
	if _, err := ParseCABundle([]byte("x")); !errors.Is(err, ErrNoCertificate) {
		t.Fatalf("want ErrNoCertificate, got %v", err)
	}
}
