package oidcprovider

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The authorization code flow: zitadel's OP serves the authorization,
// token and revocation endpoints and checks PKCE; its example storage
// keeps the users, the authorization requests, codes and tokens. What
// the provider adds is the login page zitadel leaves to the application:
// a form a test posts as the person's browser would, with the person's
// name and password and whether they consent.

// LoginPath is where the provider sends the person's browser to log in
// and consent (zitadel's example login URL).
const LoginPath = "/login/username"

// The example storage's users: the first is named after the issuer's
// host.
const (
	UserPassword = "verysecure"
	// SecondUser is the second user's name; its subject is SecondSubject.
	SecondUser    = "test-user2"
	FirstSubject  = "id1"
	SecondSubject = "id2"
)

// FirstUser is the first user's name at p; its subject is FirstSubject.
func (p *Provider) FirstUser() string {
	u, _ := url.Parse(p.Issuer)
	return "test-user@" + u.Hostname()
}

// AddCodeClient adds a confidential web client (HTTP Basic, refresh
// tokens) of the authorization code flow, redirecting to redirectURI.
// Call it before the client is used.
func (p *Provider) AddCodeClient(id, secret, redirectURI string) {
	p.codeClients[id] = storage.WebClient(id, secret, redirectURI)
}

// Login form fields.
const (
	FormRequest  = "authRequestID"
	FormUser     = "username"
	FormPassword = "password"
	// FormConsent is "allow" or "deny".
	FormConsent = "consent"
)

// login serves LoginPath: GET shows the form; POST logs the person in and
// either finishes the authorization (consent) or answers access_denied
// to the client's redirect URI (refusal).
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<form method="post"><input name="` + FormRequest + `" type="hidden" value="` +
			url.QueryEscape(r.URL.Query().Get(FormRequest)) + `"><input name="username"><input name="password" type="password">` +
			`<button name="consent" value="allow">Allow</button><button name="consent" value="deny">Deny</button></form>`))
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id := r.PostForm.Get(FormRequest)
	if err := p.store.CheckUsernamePassword(r.PostForm.Get(FormUser), r.PostForm.Get(FormPassword), id); err != nil {
		http.Error(w, "sign-in refused: wrong user name or password", http.StatusUnauthorized)
		return
	}
	// A form without a consent answer (a person signing in to their own
	// client, people.go) consents.
	if c := r.PostForm.Get(FormConsent); c == "" || strings.EqualFold(c, "allow") {
		http.Redirect(w, r, op.AuthCallbackURL(p.op)(r.Context(), id), http.StatusFound)
		return
	}
	req, err := p.store.AuthRequestByID(r.Context(), id)
	if err != nil {
		http.Error(w, "no such request", http.StatusBadRequest)
		return
	}
	op.AuthRequestError(w, r, req, oidc.ErrAccessDenied().WithDescription("the person refused"), p.op)
}

// Client is the provider's TLS client, trusting its certificate.
func (p *Provider) Client() *http.Client { return p.srv.Client() }
