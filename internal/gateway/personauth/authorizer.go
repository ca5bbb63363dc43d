package personauth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/secret"
)

// CallbackPath is where the gateway receives the authorization server's
// redirect.
const CallbackPath = "/oauth/callback"

// Reasons a call needs the person's consent (ConsentError.Reason), each
// a detail of the audit record.
const (
	// ReasonNotAuthorized: the person has not authorized the server yet
	// (or authorized another authorization server or client than the
	// server names now).
	ReasonNotAuthorized = "NotAuthorized"
	// ReasonConsentRefused: the person refused consent at the
	// authorization server.
	ReasonConsentRefused = "ConsentRefused"
	// ReasonRefreshRevoked: the authorization server refused the refresh
	// token (revoked or expired).
	ReasonRefreshRevoked = "RefreshRevoked"
	// ReasonExpired: the access token expired and there is no refresh
	// token.
	ReasonExpired = "Expired"
)

// ConsentError says the person must authorize the server (again) before
// the call can be made; the caller hands them the consent link.
type ConsentError struct{ Reason string }

func (e *ConsentError) Error() string {
	switch e.Reason {
	case ReasonConsentRefused:
		return "consent to this MCP server was refused at its authorization server"
	case ReasonRefreshRevoked:
		return "the authorization server no longer accepts this person's authorization of the MCP server (the refresh token was revoked or has expired)"
	case ReasonExpired:
		return "this person's authorization of the MCP server has expired and cannot be refreshed"
	}
	return "this person has not authorized the MCP server yet"
}

// OAuthError is a failure at the authorization server that consent does
// not cure. Code is the RFC 6749 error code when it is a known one; the
// server's own text is never kept.
type OAuthError struct {
	Op   string
	Code string
}

func (e *OAuthError) Error() string {
	if e.Code != "" {
		return e.Op + " failed at the authorization server (" + e.Code + ")"
	}
	return e.Op + " failed at the authorization server"
}

// knownCodes are the RFC 6749 error codes repeated in answers.
var knownCodes = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unauthorized_client": true,
	"unsupported_grant_type": true, "invalid_scope": true, "access_denied": true, "unsupported_response_type": true,
	"server_error": true, "temporarily_unavailable": true, "invalid_target": true,
}

func codeOf(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && knownCodes[re.ErrorCode] {
		return re.ErrorCode
	}
	return ""
}

// DiscoveryError says the authorization server could not be found or
// read. Its text names no URL.
type DiscoveryError struct{ What string }

func (e *DiscoveryError) Error() string {
	return "could not discover the authorization server: " + e.What
}

// Options configure an Authorizer.
type Options struct {
	// Client reads McpServers and reads and writes Secrets, uncached.
	Client client.Client
	// Keys are the gateway's approval keys, from which the state key is
	// derived.
	Keys approvals.KeySource
	// CallbackURL is CallbackPath as a person's browser reaches it; the
	// redirect URI registered with each server's authorization server.
	CallbackURL string
	// Egress says which private addresses authorization servers may be
	// at (the McpServer's allowPrivateNetwork opts in, as for the server).
	Egress egress.Policy
	// RootCAs, when set, replace the system roots for authorization
	// servers (tests); a server's spec.tls.caBundleRef is trusted too.
	RootCAs *x509.CertPool
	// SignIn is where the browser that follows a consent link signs in as
	// the person; nil hands out no link (a *SetupError).
	SignIn *SignIn
	// StateTTL is how long a consent link can be used (DefaultStateTTL).
	StateTTL time.Duration
	// Clock is nil for the real one.
	Clock clock.PassiveClock
}

// Authorizer holds people's authorizations of per-person McpServers.
type Authorizer struct {
	Options
	signer signer
	trust  *egress.Trust
	tokens ttlMap[stored]
	metas  ttlMap[discovered]
	signIn signInProvider
}

// New builds an Authorizer.
func New(o Options) (*Authorizer, error) {
	if o.Client == nil || o.Keys == nil || o.CallbackURL == "" {
		return nil, errors.New("personauth: Client, Keys and CallbackURL are required")
	}
	u, err := url.Parse(o.CallbackURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("personauth: the callback URL must be an absolute http(s) URL without query or fragment")
	}
	if o.SignIn != nil && (o.SignIn.Issuer.URL == "" || o.SignIn.ClientID == "") {
		return nil, errNoSignIn
	}
	if o.StateTTL <= 0 {
		o.StateTTL = DefaultStateTTL
	}
	var tlsRoots = egress.NewTransport(nil)
	if o.RootCAs != nil {
		tlsRoots = egress.NewTransport(tlsConfig(o.RootCAs))
	}
	base := &http.Client{
		Transport: tlsRoots,
		Timeout:   15 * time.Second,
		// Redirects are not followed: a token request's credentials never
		// reach another host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Authorizer{Options: o, signer: signer{keys: o.Keys}, trust: egress.NewTrust(base)}, nil
}

func (a *Authorizer) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

// Person is whom a call is made for.
type Person struct {
	// User is the Kubernetes user name (OAuth people and ServiceAccounts
	// alike).
	User string
}

// endpoint is what the gateway knows of a server's authorization server
// for one operation: the OAuth configuration and an HTTP client bound to
// the server's egress grant and trust, on ctx.
type endpoint struct {
	ctx    context.Context
	issuer string
	cfg    oauth2.Config
	meta   *oauthex.AuthServerMeta
}

// endpointFor discovers srv's authorization server and builds its client.
func (a *Authorizer) endpointFor(ctx context.Context, srv *mcpv1alpha1.McpServer) (*endpoint, error) {
	pp := srv.Spec.Auth.PerPerson
	bundle, err := credentials.CABundle(ctx, a.Client, srv.Namespace, srv.Spec.TLS)
	if err != nil {
		return nil, err
	}
	hc, err := a.trust.Client(bundle)
	if err != nil {
		return nil, err
	}
	ctx = egress.WithGrant(ctx, a.Egress.Grant(srv.Namespace, srv.Spec.AllowPrivateNetwork))
	metaKey := fmt.Sprintf("%s/%s/%s/%d", srv.Namespace, srv.Name, srv.UID, srv.Generation)
	d, ok := a.metas.get(metaKey, a.now())
	if !ok {
		d.issuer = pp.AuthorizationServer
		if d.issuer == "" {
			if d.issuer, err = discoverIssuer(ctx, srv, hc); err != nil {
				return nil, err
			}
		}
		if d.meta, err = authServerMeta(ctx, d.issuer, hc); err != nil {
			return nil, err
		}
		a.metas.put(metaKey, d, a.now().Add(MetadataTTL))
	}
	issuer, meta := d.issuer, d.meta
	c := oauthClient{id: pp.ClientID}
	switch {
	case pp.ClientID == "":
		if c, err = a.registeredClient(ctx, srv, issuer, meta, hc); err != nil {
			return nil, err
		}
	case pp.ClientSecretRef != nil:
		v, err := credentials.SecretValue(ctx, a.Client, srv.Namespace, *pp.ClientSecretRef)
		if err != nil {
			return nil, err
		}
		c.secret = v.Reveal()
	}
	style := oauth2.AuthStyleInParams
	if c.secret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &endpoint{
		ctx:    context.WithValue(ctx, oauth2.HTTPClient, hc),
		issuer: issuer,
		meta:   meta,
		cfg: oauth2.Config{
			ClientID:     c.id,
			ClientSecret: c.secret,
			Endpoint:     oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: style},
			RedirectURL:  a.CallbackURL,
			Scopes:       pp.Scopes,
		},
	}, nil
}

// discoverIssuer reads srv's protected resource metadata (RFC 9728) and
// returns the first authorization server it names.
func discoverIssuer(ctx context.Context, srv *mcpv1alpha1.McpServer, hc *http.Client) (string, error) {
	if srv.Spec.URL == "" {
		return "", &DiscoveryError{What: "a server whose URL is in a Secret must name spec.auth.perPerson.authorizationServer"}
	}
	u, err := url.Parse(srv.Spec.URL)
	if err != nil {
		return "", &DiscoveryError{What: "the server's URL does not parse"}
	}
	meta := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, meta.String(), srv.Spec.URL, hc)
	if err != nil || prm == nil || len(prm.AuthorizationServers) == 0 {
		return "", &DiscoveryError{What: "the server's protected resource metadata (RFC 9728) names no usable authorization server"}
	}
	return prm.AuthorizationServers[0], nil
}

// authServerMeta reads issuer's metadata: RFC 8414's well-known URL, then
// OpenID Connect discovery's.
func authServerMeta(ctx context.Context, issuer string, hc *http.Client) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, &DiscoveryError{What: "the authorization server's issuer is not a URL"}
	}
	path := strings.TrimSuffix(u.Path, "/")
	for _, p := range []string{"/.well-known/oauth-authorization-server" + path, path + "/.well-known/openid-configuration"} {
		m := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}
		meta, err := oauthex.GetAuthServerMeta(ctx, m.String(), issuer, hc)
		if err != nil {
			return nil, &DiscoveryError{What: "the authorization server's metadata could not be read or is not valid"}
		}
		if meta != nil {
			if meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" {
				return nil, &DiscoveryError{What: "the authorization server's metadata lacks an authorization or token endpoint"}
			}
			return meta, nil
		}
	}
	return nil, &DiscoveryError{What: "the authorization server publishes no metadata (RFC 8414 or OpenID Connect discovery)"}
}

// ConsentURL is the link person follows to authorize srv: the gateway's
// callback with a signed state of the link step, naming srv, its
// authorization server and client, and the person. Following it, the
// browser signs in as the person first (signin.go); only then is it sent
// to the authorization server. A *SetupError says no link can be made for
// p at this gateway.
func (a *Authorizer) ConsentURL(ctx context.Context, srv *mcpv1alpha1.McpServer, p Person) (string, error) {
	if err := a.checkLinkable(p); err != nil {
		return "", err
	}
	ep, err := a.endpointFor(ctx, srv)
	if err != nil {
		return "", err
	}
	st := state{
		Kind: kindLink, Namespace: srv.Namespace, Server: srv.Name, ServerUID: string(srv.UID), User: p.User,
		Issuer: ep.issuer, ClientID: ep.cfg.ClientID, Nonce: newNonce(), Expires: a.now().Add(a.StateTTL).Unix(),
	}
	token, _, err := a.signer.sign(ctx, st)
	if err != nil {
		return "", fmt.Errorf("signing the consent link: %w", err)
	}
	return a.CallbackURL + "?" + url.Values{LinkParam: {token}}.Encode(), nil
}

// refreshSkew is how long before its expiry a token is refreshed.
const refreshSkew = 30 * time.Second

// Token returns the credential p's calls of srv present: p's own access
// token, refreshed when it has expired. A *ConsentError says p must
// authorize (again); any other error is a failure to read, write or reach
// the authorization server.
func (a *Authorizer) Token(ctx context.Context, srv *mcpv1alpha1.McpServer, p Person) (*secret.Credential, error) {
	now := a.now()
	key := srv.Namespace + "/" + SecretName(srv.Name, p.User)
	if st, ok := a.tokens.get(key, now); ok && a.current(srv, &st) && fresh(&st, now) {
		return credential(&st), nil
	}
	a.tokens.drop(key)
	st, prev, err := a.read(ctx, srv, p.User)
	if err != nil {
		return nil, err
	}
	switch {
	case st == nil:
		return nil, &ConsentError{Reason: ReasonNotAuthorized}
	case st.state == StateRefused:
		return nil, &ConsentError{Reason: ReasonConsentRefused}
	case st.state == StateRevoked:
		return nil, &ConsentError{Reason: ReasonRefreshRevoked}
	case st.state != StateAuthorized || st.access == "" || !a.current(srv, st):
		return nil, &ConsentError{Reason: ReasonNotAuthorized}
	}
	if fresh(st, now) {
		a.tokens.put(key, *st, now.Add(TokenTTL))
		return credential(st), nil
	}
	if st.refresh == "" {
		return nil, &ConsentError{Reason: ReasonExpired}
	}
	ep, err := a.endpointFor(ctx, srv)
	if err != nil {
		return nil, err
	}
	if ep.issuer != st.issuer {
		return nil, &ConsentError{Reason: ReasonNotAuthorized}
	}
	tok, err := ep.cfg.TokenSource(ep.ctx, &oauth2.Token{RefreshToken: st.refresh, Expiry: now.Add(-time.Minute)}).Token()
	if err != nil {
		code := codeOf(err)
		if code != "invalid_grant" {
			return nil, &OAuthError{Op: "refreshing the person's token", Code: code}
		}
		// The refresh token is dead: forget the tokens, keep the fact.
		if werr := a.write(ctx, srv, p.User, stored{state: StateRevoked, issuer: st.issuer, clientID: st.clientID}, prev); werr != nil {
			return nil, werr
		}
		return nil, &ConsentError{Reason: ReasonRefreshRevoked}
	}
	next, err := storedFrom(tok, st.issuer, st.clientID, st.refresh)
	if err != nil {
		return nil, err
	}
	next.granted = st.granted
	if next.scopes == "" {
		next.scopes = st.scopes
	}
	if err := a.write(ctx, srv, p.User, next, prev); err != nil {
		// Another replica refreshed at the same moment: its tokens are as
		// good, and the one it stored is read next time.
		if cur, _, rerr := a.read(ctx, srv, p.User); rerr == nil && cur != nil && cur.state == StateAuthorized && a.current(srv, cur) && fresh(cur, now) {
			return credential(cur), nil
		}
		return nil, err
	}
	a.tokens.put(key, next, now.Add(TokenTTL))
	return credential(&next), nil
}

// current reports whether st was obtained from the client (and the
// authorization server, when the spec names one) srv names now. A client
// the gateway registered itself is any it registered: a token of an
// earlier registration stops working at its refresh, which then asks the
// person again.
func (a *Authorizer) current(srv *mcpv1alpha1.McpServer, st *stored) bool {
	pp := srv.Spec.Auth.PerPerson
	return (st.clientID == pp.ClientID || pp.ClientID == "" && st.clientID != "") &&
		(pp.AuthorizationServer == "" || st.issuer == pp.AuthorizationServer)
}

// fresh reports whether st's access token can be sent at now without a
// refresh.
func fresh(st *stored, now time.Time) bool {
	return st.expiry.IsZero() || now.Add(refreshSkew).Before(st.expiry)
}

// storedFrom is what a token response is kept as; refresh is kept when
// the response rotates none.
func storedFrom(tok *oauth2.Token, issuer, clientID, refresh string) (stored, error) {
	if tok.AccessToken == "" {
		return stored{}, &OAuthError{Op: "obtaining the person's token"}
	}
	if t := tok.Type(); !strings.EqualFold(t, "Bearer") {
		return stored{}, &OAuthError{Op: "obtaining the person's token (not a bearer token)"}
	}
	st := stored{state: StateAuthorized, access: tok.AccessToken, refresh: tok.RefreshToken, tokenType: "Bearer", expiry: tok.Expiry, issuer: issuer, clientID: clientID}
	if st.refresh == "" {
		st.refresh = refresh
	}
	if sc, ok := tok.Extra("scope").(string); ok {
		st.scopes = sc
	}
	return st, nil
}

func credential(st *stored) *secret.Credential {
	return &secret.Credential{Value: secret.New(st.access), Expires: st.expiry}
}
