package oidcprovider

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// Dynamic client registration (RFC 7591), which zitadel's OpenID Provider
// does not serve: RegistrationPath creates a public client (no secret,
// PKCE) in the provider's storage, as AddPublicClient does, with the
// redirect URIs the request names; the discovery document advertises it as
// registration_endpoint. What a registered client may ask for (resources,
// scopes) is the provider's decision, set with SetRegistrationPolicy, not
// the request's: a registration grants no resource by itself.

// RegistrationPath is the registration endpoint's path.
const RegistrationPath = "/register"

// maxRegistration bounds a registration request's body.
const maxRegistration = 64 << 10

// SetRegistrationPolicy sets what every client registered from now on may
// ask for: its Resources and Scopes (its RedirectURIs are the request's).
func (p *Provider) SetRegistrationPolicy(c PublicClient) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.registration = c
}

// Registered counts the clients registered at RegistrationPath.
func (p *Provider) Registered() int64 { return p.registered.Load() }

// registrationRequest is the client metadata of RFC 7591 §2 this provider
// reads; any other member is ignored, as the RFC allows.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ClientName              string   `json:"client_name"`
	Scope                   string   `json:"scope"`
}

// registrationError answers a refused registration (RFC 7591 §3.2.2).
func registrationError(w http.ResponseWriter, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// register serves RegistrationPath.
func (p *Provider) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "registration is a POST", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		registrationError(w, "invalid_client_metadata", "the client metadata must be sent as application/json")
		return
	}
	var req registrationRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistration+1))
	if err != nil || len(body) > maxRegistration {
		registrationError(w, "invalid_client_metadata", "the client metadata is too large")
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		registrationError(w, "invalid_client_metadata", "the client metadata is not a JSON object of RFC 7591's members")
		return
	}
	if reason := checkRedirectURIs(req.RedirectURIs); reason != "" {
		registrationError(w, "invalid_redirect_uri", reason)
		return
	}
	grants := req.GrantTypes
	if len(grants) == 0 {
		grants = []string{string(oidc.GrantTypeCode)}
	}
	for _, g := range grants {
		if g != string(oidc.GrantTypeCode) && g != string(oidc.GrantTypeRefreshToken) {
			registrationError(w, "invalid_client_metadata", "the grant type "+quote(g)+" is not supported: only authorization_code and refresh_token")
			return
		}
	}
	if !slices.Contains(grants, string(oidc.GrantTypeCode)) {
		registrationError(w, "invalid_client_metadata", "a client is registered for the authorization_code grant")
		return
	}
	for _, rt := range req.ResponseTypes {
		if rt != string(oidc.ResponseTypeCode) {
			registrationError(w, "invalid_client_metadata", "the response type "+quote(rt)+" is not supported: only code")
			return
		}
	}
	// RFC 7591's default is client_secret_basic; this provider registers
	// public clients only, so the request must say none.
	if req.TokenEndpointAuthMethod != string(oidc.AuthMethodNone) {
		registrationError(w, "invalid_client_metadata", "only public clients are registered: token_endpoint_auth_method must be none (PKCE protects the code)")
		return
	}
	id := "dyn-" + strings.ToLower(rand.Text())
	p.store.mu.Lock()
	policy := p.store.registration
	p.store.public[id] = PublicClient{RedirectURIs: req.RedirectURIs, Resources: policy.Resources, Scopes: policy.Scopes, grants: grants}
	p.store.mu.Unlock()
	p.registered.Add(1)
	resp := map[string]any{
		"client_id":                  id,
		"client_id_issued_at":        time.Now().Unix(),
		"redirect_uris":              req.RedirectURIs,
		"grant_types":                grants,
		"response_types":             []string{string(oidc.ResponseTypeCode)},
		"token_endpoint_auth_method": string(oidc.AuthMethodNone),
	}
	if req.ClientName != "" {
		resp["client_name"] = req.ClientName
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(resp)
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// checkRedirectURIs says what is wrong with a registration's redirect
// URIs, "" when nothing: at least one; each absolute, without a fragment,
// and https, or http at a loopback address (RFC 8252 §7.3).
func checkRedirectURIs(uris []string) string {
	if len(uris) == 0 {
		return "redirect_uris is required: the authorization code is sent to one of them"
	}
	for _, raw := range uris {
		u, err := url.Parse(raw)
		switch {
		case err != nil || !u.IsAbs() || u.Host == "":
			return "the redirect URI " + quote(raw) + " is not an absolute URL"
		case u.Fragment != "" || strings.Contains(raw, "#"):
			return "the redirect URI " + quote(raw) + " has a fragment"
		case u.User != nil:
			return "the redirect URI " + quote(raw) + " has user information"
		case u.Scheme == "https":
		case u.Scheme == "http" && loopback(u.Hostname()):
		default:
			return "the redirect URI " + quote(raw) + " is neither https nor http at a loopback address"
		}
	}
	return ""
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// withRegistration serves zitadel's discovery document with the
// registration endpoint added.
func (p *Provider) withRegistration(zitadel http.Handler, w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	zitadel.ServeHTTP(rec, r)
	var doc map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	doc["registration_endpoint"] = p.Issuer + RegistrationPath
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}
