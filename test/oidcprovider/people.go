package oidcprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// This file makes the provider one a person signs in to: public clients
// (an MCP client on the person's machine, registered in advance, or by
// itself at the registration endpoint of register.go, since zitadel's
// OpenID Provider has none), the authorization
// code flow with PKCE, a login page, and the RFC 8707 resource indicator,
// which zitadel does not read and this storage honours: the access token
// of an authorization is issued for the resource it named.

// Person is someone who signs in at the provider, and what their access
// tokens say besides their subject.
type Person struct {
	Username, Password string
	Claims             map[string]any
}

// PublicClient is a client without a secret that uses the authorization
// code flow with PKCE.
type PublicClient struct {
	// RedirectURIs are its registered redirect URIs; a loopback one
	// matches at any port (RFC 8252).
	RedirectURIs []string
	// Resources are the resource URIs it may ask tokens for, by prefix; an
	// authorization naming any other is refused (invalid_target).
	Resources []string
	// Scopes are the scopes besides OpenID's it may be granted.
	Scopes []string

	// grants are the grant types of a client registered at
	// RegistrationPath; nil is both of a native client's.
	grants []string
}

// AddPerson adds someone who can sign in.
func (p *Provider) AddPerson(ps Person) { p.store.addPerson(ps) }

// AddPublicClient registers a public client under id.
func (p *Provider) AddPublicClient(id string, c PublicClient) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.public[id] = c
}

// Authorizations counts the authorization requests the provider took.
func (p *Provider) Authorizations() int64 { return p.authorizations.Load() }

// people is the storage's user store: the test's people, and zitadel's
// example users (codeflow.go) besides.
type people struct {
	s       *storageWithClients
	example storage.UserStore
}

func (u people) GetUserByID(id string) *storage.User {
	u.s.mu.Lock()
	p, ok := u.s.people[id]
	u.s.mu.Unlock()
	if ok {
		return p
	}
	return u.example.GetUserByID(id)
}

func (u people) GetUserByUsername(name string) *storage.User {
	u.s.mu.Lock()
	p, ok := u.s.people[name]
	u.s.mu.Unlock()
	if ok {
		return p
	}
	return u.example.GetUserByUsername(name)
}

func (u people) ExampleClientID() string { return u.example.ExampleClientID() }

func (s *storageWithClients) addPerson(ps Person) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.people[ps.Username] = &storage.User{ID: ps.Username, Username: ps.Username, Password: ps.Password}
	s.personClaims[ps.Username] = ps.Claims
}

// publicClient is a PublicClient as zitadel sees it: native, issued JWT
// access tokens.
type publicClient struct {
	op.Client
	scopes []string
	grants []string
}

func (c publicClient) GrantTypes() []oidc.GrantType {
	if c.grants == nil {
		return c.Client.GrantTypes()
	}
	out := make([]oidc.GrantType, len(c.grants))
	for i, g := range c.grants {
		out[i] = oidc.GrantType(g)
	}
	return out
}

func (publicClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c publicClient) IsScopeAllowed(scope string) bool {
	for _, s := range c.scopes {
		if s == scope {
			return true
		}
	}
	return false
}

func (s *storageWithClients) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.public[id]
	s.mu.Unlock()
	if ok {
		return publicClient{Client: storage.NativeClient(id, c.RedirectURIs...), scopes: c.Scopes, grants: c.grants}, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

// resourceKey carries an authorization request's resource parameters
// from the HTTP request to CreateAuthRequest.
type resourceKey struct{}

// authorization is an authorization request with the audience of the
// resource it named.
type authorization struct {
	*storage.AuthRequest
	audience []string
}

func (a authorization) GetAudience() []string {
	if len(a.audience) == 0 {
		return a.AuthRequest.GetAudience()
	}
	return a.audience
}

func (s *storageWithClients) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	resources, _ := ctx.Value(resourceKey{}).([]string)
	s.mu.Lock()
	c, public := s.public[req.ClientID]
	s.mu.Unlock()
	for _, r := range resources {
		// A public client may ask for the resources it was registered
		// with; a confidential one (codeflow.go) for any.
		if public && !allowed(c.Resources, r) {
			return nil, oidc.ErrInvalidRequest().WithDescription("invalid_target: the resource %q is not one this client may ask for", r)
		}
	}
	created, err := s.Storage.CreateAuthRequest(ctx, req, userID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.resources[created.GetID()] = resources
	s.mu.Unlock()
	return s.withResource(created)
}

func allowed(prefixes []string, resource string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(resource, p) {
			return true
		}
	}
	return false
}

func (s *storageWithClients) withResource(req op.AuthRequest) (op.AuthRequest, error) {
	r, ok := req.(*storage.AuthRequest)
	if !ok {
		return req, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return authorization{AuthRequest: r, audience: s.resources[r.ID]}, nil
}

func (s *storageWithClients) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	req, err := s.Storage.AuthRequestByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.withResource(req)
}

func (s *storageWithClients) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	req, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	return s.withResource(req)
}

// CreateAccessToken records the token as the example storage does, for
// the authorization itself rather than its wrapper.
func (s *storageWithClients) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	if a, ok := req.(authorization); ok {
		req = a.AuthRequest
	}
	return s.Storage.CreateAccessToken(ctx, req)
}

// SignIn is the person's browser: it opens authorizeURL (an authorization
// request to this provider, or a link of the client's that leads to one),
// signs in on the login page as username with password, as often as the
// provider asks (a gateway's consent link has the person sign in, then
// consent), and follows the redirects to the client's redirect URI, which
// it opens too (the client's loopback listener takes the code there). It
// keeps cookies, as a browser does.
func (p *Provider) SignIn(ctx context.Context, authorizeURL, username, password string) error {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	browser := &http.Client{
		Transport:     p.srv.Client().Transport,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	next, err := url.Parse(authorizeURL)
	if err != nil {
		return err
	}
	if next.Scheme != "https" && next.Scheme != "http" || next.Host == "" {
		return fmt.Errorf("the authorization URL %s is not an absolute http(s) URL", next.Redacted())
	}
	var form url.Values
	for range 20 {
		var req *http.Request
		if form != nil {
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, next.String(), strings.NewReader(form.Encode()))
			if req != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			form = nil
		} else {
			req, err = http.NewRequestWithContext(ctx, http.MethodGet, next.String(), nil)
		}
		if err != nil {
			return err
		}
		resp, err := browser.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusFound || resp.StatusCode == http.StatusSeeOther:
			loc, err := next.Parse(resp.Header.Get("Location"))
			if err != nil {
				return err
			}
			next = loc
		case resp.StatusCode == http.StatusOK && next.Path == "/login/username" && req.Method == http.MethodGet:
			form = url.Values{"authRequestID": {next.Query().Get("authRequestID")}, "username": {username}, "password": {password}}
		case resp.StatusCode == http.StatusOK && !strings.HasPrefix(next.String(), p.Issuer+"/"):
			// The redirect URI answered: the client has its code.
			return nil
		default:
			return fmt.Errorf("%s %s: %d %s", req.Method, next.Path, resp.StatusCode, strings.TrimSpace(string(body)))
		}
	}
	return errors.New("too many redirects")
}

// CreateAccessAndRefreshTokens records the tokens as the example storage
// does, for the authorization itself rather than its wrapper: the example
// storage reads the client and the time of the sign-in from it, and a
// refresh token recorded without them could not be used.
func (s *storageWithClients) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, currentRefreshToken string) (string, string, time.Time, error) {
	if a, ok := req.(authorization); ok {
		req = a.AuthRequest
	}
	return s.Storage.CreateAccessAndRefreshTokens(ctx, req, currentRefreshToken)
}

// SetUserinfoFromScopes is the example storage's, with the person's own
// claims (AddPerson) added, so that an ID token of a person's sign-in
// carries what the person's access tokens do (an email the gateway names
// them by, say).
func (s *storageWithClients) SetUserinfoFromScopes(ctx context.Context, info *oidc.UserInfo, userID, clientID string, scopes []string) error {
	if err := s.Storage.SetUserinfoFromScopes(ctx, info, userID, clientID, scopes); err != nil {
		return err
	}
	s.mu.Lock()
	claims := s.personClaims[userID]
	s.mu.Unlock()
	for k, v := range claims {
		switch k {
		case "email":
			info.Email, _ = v.(string)
		case "email_verified":
			b, _ := v.(bool)
			info.EmailVerified = oidc.Bool(b)
		default:
			info.AppendClaims(k, v)
		}
	}
	return nil
}
