package cabundle

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

func TestParseKeyIgnoresFormatting(t *testing.T) {
	a, b := testCA(t, "a"), testCA(t, "b")
	one, err := Parse(append(append([]byte{}, a...), b...))
	if err != nil {
		t.Fatal(err)
	}
	// Comments and a non-certificate block around the same certificates.
	framed := append([]byte("# team CA\n"), a...)
	framed = append(framed, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})...)
	framed = append(framed, b...)
	two, err := Parse(framed)
	if err != nil {
		t.Fatal(err)
	}
	if one.Key() != two.Key() {
		t.Fatal("the same certificates gave different keys")
	}
	other, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if other.Key() == one.Key() {
		t.Fatal("different certificates gave the same key")
	}
}

func TestParseRefusesUnusableBundles(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":        nil,
		"text":         []byte("not a certificate"),
		"only a key":   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2}}),
		"bad DER":      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}),
		"too large":    make([]byte, MaxBytes+1),
		"one bad of 2": append(testCA(t, "a"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{9}})...),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(data)
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("want *InvalidError, got %v", err)
			}
		})
	}
	if _, err := Parse([]byte("x")); !errors.Is(err, ErrNoCertificate) {
		t.Fatalf("want ErrNoCertificate, got %v", err)
	}
}

type closer struct{ closed *int }

func (c closer) CloseIdleConnections() { *c.closed++ }

func TestCacheIsBoundedAndClosesEvicted(t *testing.T) {
	c := NewCache[closer](2)
	closed := 0
	built := 0
	build := func(*Bundle) closer { built++; return closer{closed: &closed} }
	var bs []*Bundle
	for _, cn := range []string{"a", "b", "c"} {
		b, err := Parse(testCA(t, cn))
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	c.Get(bs[0], build)
	c.Get(bs[1], build)
	c.Get(bs[0], build) // a is now the most recent
	if built != 2 {
		t.Fatalf("built %d values for 2 keys", built)
	}
	c.Get(bs[2], build) // evicts b
	if c.Len() != 2 || closed != 1 {
		t.Fatalf("len %d, closed %d; want 2 and 1", c.Len(), closed)
	}
	c.Get(bs[0], build)
	if built != 3 {
		t.Fatal("the most recently used value was evicted")
	}
	c.Get(bs[1], build)
	if built != 4 {
		t.Fatal("an evicted value was still served")
	}
}
