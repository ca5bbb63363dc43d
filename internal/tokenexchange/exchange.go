package tokenexchange

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/secret"
)

// URNs of RFC 8693 §3 (token types) and §2.1 (grant type).
const (
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeRefreshToken  = "urn:ietf:params:oauth:token-type:refresh_token"
	TokenTypeIDToken       = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeSAML1         = "urn:ietf:params:oauth:token-type:saml1"
	TokenTypeSAML2         = "urn:ietf:params:oauth:token-type:saml2"
	TokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

// Defaults for Options.
const (
	// DefaultMaxResponseBytes caps a token endpoint response. A token
	// response is a few KiB at most (a large JWT included); anything bigger
	// is a misconfigured endpoint or an attempt to exhaust memory.
	DefaultMaxResponseBytes = 64 << 10
	// DefaultLifetime is assumed when a success response has no expires_in.
	// It is short on purpose: the token is exchanged for one MCP operation
	// (default budget 20s), and an unknown lifetime must not let a cached
	// token outlive what the issuer may have meant.
	DefaultLifetime = 60 * time.Second
	// DefaultTimeout is the ceiling of one exchange when the caller's context
	// allows longer (or has no deadline at all).
	DefaultTimeout = 10 * time.Second
)

// userAgent identifies the operator to token endpoints.
const userAgent = "mcp-catalog-operator-tokenexchange"

// Request is one token exchange. The controller fills it from the
// McpDelegationProfile (endpoint, client), the actor's mapping (subject
// token) and the McpServer (audience, scopes, resource).
type Request struct {
	// TokenEndpoint is the OAuth 2.0 token endpoint; https unless
	// Options.AllowHTTP. A query component is kept (RFC 6749 §3.2).
	TokenEndpoint string
	// ClientID and ClientSecret authenticate the operator (HTTP Basic).
	ClientID     string
	ClientSecret secret.Secret
	// SubjectToken is the actor's token; SubjectTokenType one of the RFC 8693
	// token type URNs.
	SubjectToken     secret.Secret
	SubjectTokenType string
	// Audience is the logical name of the MCP server the token is for. It is
	// required: without it the issuer would pick a default audience the
	// policy never saw.
	Audience string
	// Scopes are requested scopes; each must be an RFC 6749 scope token.
	Scopes []string
	// Resource is the MCP server URL (RFC 8707); optional, absolute, no
	// fragment.
	Resource string
	// Namespace is where the delegation profile lives; it selects the
	// per-namespace private ranges of Options.Egress.
	Namespace string
	// CABundle, when set, is trusted instead of Options.RootCAs (or the
	// system roots) for this request's token endpoint: each profile may
	// name its own private CA.
	CABundle *egress.CABundle
}

// Allowed is a policy input: the audiences and scopes one party (the
// delegation profile, or one actor) may request. Empty sets allow nothing:
// the "unset means all of the profile's" rule of the API is resolved by the
// caller, so a forgotten mapping fails closed.
type Allowed struct {
	Audiences []string
	Scopes    []string
}

// Options configure a Client.
type Options struct {
	// HTTPClient is used for the request (tests, or a client with the
	// operator's dialer). A copy is taken whose redirect policy is replaced:
	// redirects are never followed. Mutually exclusive with RootCAs.
	HTTPClient *http.Client
	// RootCAs replaces the system roots for TLS verification of the token
	// endpoint, for requests without a CABundle of their own. nil uses the
	// system roots.
	RootCAs *x509.CertPool
	// Egress is the administrator's private-network policy. Token endpoints
	// are dialled through the same address guard as MCP servers: a private
	// one is reached only within the ranges it allows for
	// Request.Namespace, and link-local and metadata addresses never.
	// Ignored with HTTPClient or Proxy.
	Egress egress.Policy
	// Proxy, if set, is the HTTP proxy every exchange goes through; the
	// proxy then decides what is reachable. HTTP_PROXY and HTTPS_PROXY in
	// the environment are never used: a proxy is an explicit decision.
	Proxy *url.URL
	// AllowHTTP permits a plain http token endpoint (development and tests).
	// The client secret and subject token then travel in clear text.
	AllowHTTP bool
	// MaxResponseBytes caps the response body; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// DefaultLifetime is the token lifetime assumed without expires_in; 0
	// means DefaultLifetime.
	DefaultLifetime time.Duration
	// Timeout is the ceiling of one exchange; the context's deadline wins
	// when it is earlier. 0 means DefaultTimeout.
	Timeout time.Duration
	// Clock is the clock ExpiresAt is computed by; nil means the real one.
	Clock Clock
}

// Clock tells the time: the Now of k8s.io/utils/clock.PassiveClock, whose
// clocks and fakes satisfy it. It is declared here because the client
// depends on nothing from Kubernetes.
type Clock interface {
	Now() time.Time
}

// Client performs token exchanges. It is safe for concurrent use.
type Client struct {
	hc     *http.Client
	egress egress.Policy
	// trust holds one HTTP client per CA bundle, built from hc.
	trust           *egress.Trust
	allowHTTP       bool
	maxBytes        int64
	defaultLifetime time.Duration
	timeout         time.Duration
	now             func() time.Time
}

// New builds a Client.
func New(opts Options) (*Client, error) {
	if opts.HTTPClient != nil && opts.RootCAs != nil {
		// Silently ignoring one of them would leave a test or a deployment
		// trusting something other than what it configured.
		return nil, &Error{Kind: KindInvalidInput, Detail: detailHTTPClientAndRootCA}
	}
	c := &Client{
		allowHTTP:       opts.AllowHTTP,
		egress:          opts.Egress,
		maxBytes:        opts.MaxResponseBytes,
		defaultLifetime: opts.DefaultLifetime,
		timeout:         opts.Timeout,
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxResponseBytes
	}
	if c.defaultLifetime <= 0 {
		c.defaultLifetime = DefaultLifetime
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	c.now = time.Now
	if opts.Clock != nil {
		c.now = opts.Clock.Now
	}
	var hc http.Client
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	} else {
		tlsConfig := &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12}
		if opts.Proxy != nil {
			hc.Transport = &http.Transport{
				Proxy:               http.ProxyURL(opts.Proxy),
				TLSClientConfig:     tlsConfig,
				ForceAttemptHTTP2:   true,
				TLSHandshakeTimeout: 10 * time.Second,
				IdleConnTimeout:     90 * time.Second,
				MaxIdleConns:        16,
			}
		} else {
			hc.Transport = egress.NewTransport(tlsConfig)
		}
	}
	// A redirect would resend the form (subject token included) and, for
	// some codes, the Authorization header to a place the profile never
	// named. The 3xx response itself is returned and refused.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	c.trust = egress.NewTrust(c.hc)
	return c, nil
}

// CheckAllowed applies the policy without sending anything: the audience and
// every scope must be in the profile's and the actor's allowed sets, and
// every scope must be a valid RFC 6749 scope token (a scope holding a space
// would be split by the issuer into scopes the policy never checked).
func CheckAllowed(req Request, profile, actor Allowed) error {
	if req.Audience == "" {
		return &Error{Kind: KindAudienceNotAllowed, Detail: detailNoAudience}
	}
	if !slices.Contains(profile.Audiences, req.Audience) || !slices.Contains(actor.Audiences, req.Audience) {
		return &Error{Kind: KindAudienceNotAllowed}
	}
	for _, s := range req.Scopes {
		if !validScopeToken(s) {
			return &Error{Kind: KindInvalidInput, Detail: detailBadScope}
		}
		if !slices.Contains(profile.Scopes, s) || !slices.Contains(actor.Scopes, s) {
			return &Error{Kind: KindScopeNotAllowed}
		}
	}
	return nil
}

// Exchange trades req.SubjectToken for an access token. Everything that can
// be refused locally (input, endpoint scheme, policy) is refused before a
// connection is opened.
func (c *Client) Exchange(ctx context.Context, req Request, profile, actor Allowed) (Token, error) {
	endpoint, err := c.checkRequest(req)
	if err != nil {
		return Token{}, err
	}
	if err := CheckAllowed(req, profile, actor); err != nil {
		return Token{}, err
	}
	scopes := dedupe(req.Scopes)

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// A token endpoint is the administrator's to allow, not the tenant's:
	// it is reached within the administrator's ranges, as if opted in.
	ctx = egress.WithGrant(ctx, c.egress.Grant(req.Namespace, true))

	form := url.Values{}
	form.Set("grant_type", GrantTypeTokenExchange)
	form.Set("subject_token", req.SubjectToken.Reveal())
	form.Set("subject_token_type", req.SubjectTokenType)
	form.Set("requested_token_type", TokenTypeAccessToken)
	form.Set("audience", req.Audience)
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, &Error{Kind: KindInvalidInput, Detail: detailBadEndpoint}
	}
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", userAgent)
	// RFC 6749 §2.3.1: id and secret are form-urlencoded before they become
	// the Basic user and password, so a ':' or non-ASCII byte survives.
	hr.SetBasicAuth(url.QueryEscape(req.ClientID), url.QueryEscape(req.ClientSecret.Reveal()))

	// The lifetime is counted from before the request left: the issuer's
	// clock started later, so our expiry is never later than the real one.
	hc, err := c.httpClientFor(req.CABundle)
	if err != nil {
		return Token{}, err
	}
	sentAt := c.now()
	resp, err := hc.Do(hr)
	if err != nil {
		return Token{}, transportError(ctx, err, 0)
	}
	defer func() { _ = resp.Body.Close() }()

	status := resp.StatusCode
	switch {
	case status >= 300 && status < 400:
		return Token{}, &Error{Kind: KindRedirect, StatusCode: status}
	case status >= 500:
		return Token{}, &Error{Kind: KindServerError, StatusCode: status}
	}
	body, err := readCapped(resp.Body, c.maxBytes)
	if errors.Is(err, errOversized) {
		return Token{}, &Error{Kind: KindOversized, StatusCode: status, Limit: c.maxBytes}
	}
	if err != nil {
		return Token{}, transportError(ctx, err, status)
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case status == http.StatusOK:
	case status >= 400:
		return Token{}, decodeOAuthError(status, ct, body)
	default:
		return Token{}, &Error{Kind: KindHTTPStatus, StatusCode: status}
	}
	tok, err := decodeSuccess(ct, body, sentAt, c.defaultLifetime, scopes)
	if err != nil {
		return Token{}, err
	}
	for _, s := range tok.Scope {
		// An issuer granting more than the policy allows would hand the
		// actor rights through us that nobody granted them here.
		if !slices.Contains(profile.Scopes, s) || !slices.Contains(actor.Scopes, s) {
			return Token{}, &Error{Kind: KindInvalidResponse, StatusCode: status, Detail: detailScopeWidened}
		}
	}
	return tok, nil
}

// checkRequest validates everything in req that does not depend on policy and
// returns the endpoint URL to use.
func (c *Client) checkRequest(req Request) (string, error) {
	u, err := url.Parse(req.TokenEndpoint)
	if err != nil || !u.IsAbs() || u.Hostname() == "" || u.User != nil || strings.Contains(req.TokenEndpoint, "#") {
		// Userinfo would become a second, unreviewed Basic credential.
		return "", &Error{Kind: KindInvalidInput, Detail: detailBadEndpoint}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !c.allowHTTP {
			return "", &Error{Kind: KindInsecureEndpoint}
		}
	default:
		return "", &Error{Kind: KindInvalidInput, Detail: detailBadEndpoint}
	}
	switch {
	case req.ClientID == "":
		return "", &Error{Kind: KindInvalidInput, Detail: detailNoClientID}
	case req.ClientSecret.IsZero():
		return "", &Error{Kind: KindInvalidInput, Detail: detailNoClientSecret}
	case req.SubjectToken.IsZero():
		return "", &Error{Kind: KindInvalidInput, Detail: detailNoSubjectToken}
	case !knownTokenType(req.SubjectTokenType):
		return "", &Error{Kind: KindInvalidInput, Detail: detailSubjectTokenType}
	}
	if req.Resource != "" {
		r, err := url.Parse(req.Resource)
		if err != nil || !r.IsAbs() || strings.Contains(req.Resource, "#") {
			return "", &Error{Kind: KindInvalidInput, Detail: detailBadResource}
		}
	}
	return req.TokenEndpoint, nil
}

// transportError classifies a failed round trip or body read. The context
// decides between timeout and cancellation because the transport's own error
// wraps it inconsistently.
func transportError(ctx context.Context, err error, status int) error {
	var blocked *egress.BlockedAddressError
	switch {
	case errors.As(err, &blocked):
		return &Error{Kind: KindBlockedAddress, StatusCode: status, Err: err}
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: KindTimeout, StatusCode: status, Err: err}
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return &Error{Kind: KindCancelled, StatusCode: status, Err: err}
	case egress.IsVerificationFailure(err):
		return &Error{Kind: KindUntrustedCertificate, StatusCode: status, Err: err}
	default:
		return &Error{Kind: KindUnreachable, StatusCode: status, Err: err}
	}
}

// httpClientFor returns the client that trusts b, or the default one for
// nil: the same transport (the address guard or the named proxy, the
// timeouts; for Options.HTTPClient, a clone of its *http.Transport) with
// the bundle as the only roots.
func (c *Client) httpClientFor(b *egress.CABundle) (*http.Client, error) {
	hc, err := c.trust.Client(b)
	if err != nil {
		return nil, &Error{Kind: KindInvalidInput, Detail: detailTransportTrust}
	}
	return hc, nil
}

var errOversized = errors.New("oversized")

// readCapped reads at most limit bytes and reports errOversized when the body
// has more.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errOversized
	}
	return b, nil
}

func knownTokenType(t string) bool {
	switch t {
	case TokenTypeAccessToken, TokenTypeRefreshToken, TokenTypeIDToken, TokenTypeSAML1, TokenTypeSAML2, TokenTypeJWT:
		return true
	}
	return false
}

// validScopeToken implements RFC 6749 §3.3:
// scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
func validScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
