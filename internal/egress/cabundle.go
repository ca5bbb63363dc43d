package egress

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// MaxCABundleBytes bounds a CA bundle. A few hundred certificates fit
// comfortably; a larger value is a mistake (a wrong key, a binary blob), not
// a trust store.
const MaxCABundleBytes = 1 << 20

// ErrNoCertificate says the bundle holds no PEM CERTIFICATE block.
var ErrNoCertificate = errors.New("the CA bundle holds no PEM CERTIFICATE block")

// InvalidCABundleError says a bundle cannot be used: it is empty of
// certificates, too large, or a certificate in it does not parse. Only a
// change to the bundle cures it.
type InvalidCABundleError struct {
	Err error
}

func (e *InvalidCABundleError) Error() string { return "invalid CA bundle: " + e.Err.Error() }
func (e *InvalidCABundleError) Unwrap() error { return e.Err }

// CABundle is a parsed set of trusted CA certificates with a stable key. The
// MCP client and the token exchange take one per server or token endpoint,
// so a peer with a certificate from a private CA is verified against exactly
// the bundle its object names, without either knowing where it was read.
type CABundle struct {
	pool *x509.CertPool
	key  string
}

// ParseCABundle reads every PEM CERTIFICATE block in data; other blocks (a
// stray private key, say) are skipped, text around the blocks is ignored.
// It fails with *InvalidCABundleError when no certificate is found or one
// fails to parse: trusting the rest of a damaged bundle would hide the
// damage.
func ParseCABundle(data []byte) (*CABundle, error) {
	if len(data) > MaxCABundleBytes {
		return nil, &InvalidCABundleError{Err: fmt.Errorf("the CA bundle is larger than %d bytes", MaxCABundleBytes)}
	}
	pool := x509.NewCertPool()
	h := sha256.New()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, &InvalidCABundleError{Err: fmt.Errorf("certificate %d: %w", n+1, err)}
		}
		pool.AddCert(cert)
		// The key covers the certificates only, so reformatting or
		// commenting the PEM keeps the same transport.
		_, _ = h.Write(block.Bytes)
		n++
	}
	if n == 0 {
		return nil, &InvalidCABundleError{Err: ErrNoCertificate}
	}
	return &CABundle{pool: pool, key: hex.EncodeToString(h.Sum(nil))}, nil
}

// Pool returns the certificates as a pool for tls.Config.RootCAs.
func (b *CABundle) Pool() *x509.CertPool { return b.pool }

// Key is the hex SHA-256 over the bundle's certificates in order: equal
// bundles have equal keys.
func (b *CABundle) Key() string { return b.key }
