package oauthresource

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// Defaults of Options.
const (
	// DefaultClockSkew is the leeway given to exp, nbf and iat against
	// this replica's clock, as the API server gives its own.
	DefaultClockSkew = time.Minute
	// DefaultTokenCacheSize bounds the validated tokens remembered.
	DefaultTokenCacheSize = 8192
	// DefaultKeyRefreshInterval is the shortest time between two fetches
	// of one issuer's keys, and between two attempts at its discovery.
	DefaultKeyRefreshInterval = 10 * time.Second
	// DefaultFetchTimeout bounds one request to an identity provider.
	DefaultFetchTimeout = 10 * time.Second
)

// maxTokenBytes bounds a token looked at; access tokens are a few
// kilobytes at most.
const maxTokenBytes = 16 << 10

// maxDocumentBytes bounds a discovery document or key set read.
const maxDocumentBytes = 1 << 20

// Options configure a Validator. Resource and Issuers are the
// administrator's (flags and the issuers file); Clock and Transport are
// for tests and embedding.
type Options struct {
	// Resource is the gateway's canonical resource URI (RFC 8707), e.g.
	// https://mcp.example.com/mcp: what tokens must be issued for, and the
	// resource of the metadata. Empty: OAuth access tokens are not
	// accepted.
	Resource string
	// Issuers are the identity providers whose tokens are accepted.
	Issuers []Issuer
	// Scopes are advertised as scopes_supported and in the 401 challenge.
	Scopes []string
	// ClockSkew is the leeway on exp, nbf and iat.
	ClockSkew time.Duration
	// TokenCacheSize bounds the validated tokens remembered.
	TokenCacheSize int
	// KeyRefreshInterval is the shortest time between two fetches of one
	// issuer's keys or discovery document.
	KeyRefreshInterval time.Duration
	// FetchTimeout bounds one request to an identity provider.
	FetchTimeout time.Duration

	// Clock is the time tokens are judged by; nil is the real clock.
	Clock clock.PassiveClock
	// Transport sends requests to identity providers; nil builds one per
	// issuer (its CA bundle or the system roots, no proxy from the
	// environment).
	Transport http.RoundTripper
	// Log receives failed and successful fetches of issuers' documents
	// (never a token); the zero Logger discards them.
	Log logr.Logger
}

// DefaultOptions are the Options with every default filled in and no
// issuer: accepting nothing.
func DefaultOptions() Options {
	return Options{
		ClockSkew:          DefaultClockSkew,
		TokenCacheSize:     DefaultTokenCacheSize,
		KeyRefreshInterval: DefaultKeyRefreshInterval,
		FetchTimeout:       DefaultFetchTimeout,
	}
}

// Enabled reports whether OAuth access tokens are accepted at all.
func (o Options) Enabled() bool { return o.Resource != "" }

// Issuer is one trusted identity provider: the subset of the API server's
// structured authentication configuration (a jwt entry) the gateway
// understands, with the same field names.
type Issuer struct {
	// URL is the issuer identifier: https, no query or fragment; it must
	// equal the iss claim and the issuer of the discovery document at
	// URL/.well-known/openid-configuration.
	URL string `json:"url"`
	// Audiences a token may be issued for; at least one must be in aud.
	// Empty: only the gateway's resource URI. Each must be the resource or
	// an audience the administrator knows stands for the gateway (an
	// identity provider that names the resource by its own id).
	Audiences []string `json:"audiences,omitempty"`
	// CertificateAuthority is a PEM bundle to verify the provider's TLS
	// certificate with, instead of the system roots.
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	// ClaimMappings make the Kubernetes identity from the claims.
	ClaimMappings ClaimMappings `json:"claimMappings,omitempty"`
}

// ClaimMappings are the API server's OIDC claim options, per issuer.
type ClaimMappings struct {
	// Username: the claim (default "sub") and its prefix. A nil prefix is
	// "<issuer url>#", as the API server's flags do for any claim but
	// email; "" adds none. With the claim "email", email_verified must not
	// be false.
	Username PrefixedClaim `json:"username,omitempty"`
	// Groups: the claim (a string or a list of them; empty maps no groups)
	// and its prefix, which must be given when the claim is.
	Groups PrefixedClaim `json:"groups,omitempty"`
	// UID: the claim (default "sub") the identity's uid is read from.
	UID Claim `json:"uid,omitempty"`
}

// PrefixedClaim names a claim and what is put before its values.
type PrefixedClaim struct {
	Claim  string  `json:"claim,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
}

// Claim names a claim.
type Claim struct {
	Claim string `json:"claim,omitempty"`
}

// issuersFile is the shape of the issuers file.
type issuersFile struct {
	Issuers []Issuer `json:"issuers"`
}

// ParseIssuers reads an issuers file (YAML or JSON, "issuers:" and a
// list). Unknown fields are errors, so that a CEL expression or a
// misspelt field copied from an API server configuration is refused, not
// ignored.
func ParseIssuers(data []byte) ([]Issuer, error) {
	var f issuersFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("reading the issuers: %w", err)
	}
	return f.Issuers, nil
}

// reservedPrefix is the namespace of Kubernetes' own users and groups
// (system:serviceaccount:..., system:masters): no OIDC identity may land
// in it.
const reservedPrefix = "system:"

// Validate checks the Options as New would use them; an error names the
// field (and the issuer) at fault.
func (o Options) Validate() error {
	if !o.Enabled() {
		if len(o.Issuers) > 0 {
			return errors.New("issuers are configured but no resource URI: tokens would have no audience to be bound to")
		}
		return nil
	}
	if err := checkResource(o.Resource); err != nil {
		return fmt.Errorf("resource %q: %w", o.Resource, err)
	}
	if len(o.Issuers) == 0 {
		return errors.New("a resource URI is configured but no issuer")
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return fmt.Errorf("scope %q: a scope is a non-empty token without spaces, quotes or backslashes", s)
		}
	}
	if o.ClockSkew < 0 || o.ClockSkew > 5*time.Minute {
		return fmt.Errorf("clock skew %s: between 0 and 5m", o.ClockSkew)
	}
	seen := map[string]bool{}
	for i, is := range o.Issuers {
		if seen[is.URL] {
			return fmt.Errorf("issuer %q is configured twice", is.URL)
		}
		seen[is.URL] = true
		if err := is.validate(); err != nil {
			return fmt.Errorf("issuers[%d] (%s): %w", i, is.URL, err)
		}
	}
	return nil
}

// checkResource: an absolute https URI without fragment, query or
// userinfo, as the MCP specification's canonical server URI is.
func checkResource(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())):
		return errors.New("must be https (http only on loopback, for development)")
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "#"):
		return errors.New("must be an absolute URI with a host and no userinfo, query or fragment")
	}
	return nil
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

func (is Issuer) validate() error {
	u, err := url.Parse(is.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(is.URL, "#") {
		return errors.New("url must be an https URL with a host and no userinfo, query or fragment")
	}
	if slices.Contains(is.Audiences, "") {
		return errors.New("an audience is empty")
	}
	if is.CertificateAuthority != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(is.CertificateAuthority)) {
		return errors.New("certificateAuthority holds no PEM certificate")
	}
	m := is.ClaimMappings
	if p := m.Username.Prefix; p != nil && strings.HasPrefix(*p, reservedPrefix) {
		return fmt.Errorf("claimMappings.username.prefix may not begin with %q", reservedPrefix)
	}
	if m.Groups.Claim != "" && m.Groups.Prefix == nil {
		return errors.New("claimMappings.groups.prefix must be given (it may be empty) when groups.claim is")
	}
	if m.Groups.Claim == "" && m.Groups.Prefix != nil {
		return errors.New("claimMappings.groups.prefix is given without groups.claim")
	}
	if p := m.Groups.Prefix; p != nil && strings.HasPrefix(*p, reservedPrefix) {
		return fmt.Errorf("claimMappings.groups.prefix may not begin with %q", reservedPrefix)
	}
	return nil
}

// audiences are the audiences a token of the issuer may carry.
func (is Issuer) audiences(resource string) []string {
	if len(is.Audiences) == 0 {
		return []string{resource}
	}
	return is.Audiences
}
