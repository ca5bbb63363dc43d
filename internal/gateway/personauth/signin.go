package personauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// A consent link does not go to the server's authorization server
// directly: it comes to the gateway, which first has the browser sign in
// at the person's own identity provider (OpenID Connect, authorization
// code with PKCE) and goes on to the authorization server only when the
// ID token names the person the link was made for. A cookie given to the
// browser when it follows the link, and named by each later state, keeps
// every step in that one browser: a sign-in or a consent finished in
// another browser stores nothing.

// LinkParam is the consent link's query parameter: a signed state of the
// link step.
const LinkParam = "link"

// SignInFlag is the setting that configures the sign-in client, named in
// refusals.
const SignInFlag = "--gateway-consent-signin-client-id"

// cookiePrefix begins the name of a flow's cookie; the flow's id ends it,
// so that two links followed in one browser do not overwrite each other.
const cookiePrefix = "mcp-consent-"

// SignIn is the gateway's client at the identity provider people sign in
// at, and how it names them.
type SignIn struct {
	// Issuer is the identity provider, with the claim mappings the
	// gateway names people by (an issuer of the gateway's OAuth
	// configuration, ADR 053).
	Issuer oauthresource.Issuer
	// ClientID and ClientSecret are the client the administrator
	// registered at Issuer, with CallbackURL as its redirect URI. Without
	// a secret it is a public client (PKCE alone).
	ClientID, ClientSecret string
	// Transport reaches Issuer; nil trusts its CertificateAuthority or
	// the system roots.
	Transport http.RoundTripper
}

// SetupError says the gateway is not configured to hand out consent
// links for this person; no link can cure it.
type SetupError struct{ What string }

func (e *SetupError) Error() string { return e.What }

// checkLinkable refuses a link that no sign-in could complete.
func (a *Authorizer) checkLinkable(p Person) error {
	switch {
	case a.SignIn == nil:
		return &SetupError{What: "this gateway hands out no consent link: the browser that follows one must first sign in as the person it is for, and no sign-in client is configured (" + SignInFlag + ")"}
	case strings.HasPrefix(p.User, "system:"):
		return &SetupError{What: "per-person authorization is for people who sign in at an identity provider; " + p.User + " cannot"}
	}
	return nil
}

// signInProvider is the identity provider's discovery, made once.
type signInProvider struct {
	mu   sync.Mutex
	prov *oidc.Provider
	hc   *http.Client
}

func (a *Authorizer) provider(ctx context.Context) (*oidc.Provider, context.Context, error) {
	s := &a.signIn
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hc == nil {
		t := a.SignIn.Transport
		if t == nil {
			tc := &tls.Config{MinVersion: tls.VersionTLS12}
			if ca := a.SignIn.Issuer.CertificateAuthority; ca != "" {
				tc.RootCAs = x509.NewCertPool()
				tc.RootCAs.AppendCertsFromPEM([]byte(ca))
			}
			t = &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}
		}
		s.hc = &http.Client{Transport: t, Timeout: 15 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if s.prov == nil {
		// Discovery on a context of its own: the key set go-oidc keeps
		// outlives this request.
		dctx, cancel := context.WithTimeout(oidc.ClientContext(context.Background(), s.hc), 15*time.Second)
		defer cancel()
		prov, err := oidc.NewProvider(dctx, a.SignIn.Issuer.URL)
		if err != nil {
			return nil, nil, &DiscoveryError{What: "the identity provider people sign in at could not be discovered"}
		}
		s.prov = prov
	}
	return s.prov, oidc.ClientContext(ctx, s.hc), nil
}

func (a *Authorizer) signInConfig(prov *oidc.Provider) *oauth2.Config {
	ep := prov.Endpoint()
	ep.AuthStyle = oauth2.AuthStyleInParams
	if a.SignIn.ClientSecret != "" {
		ep.AuthStyle = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: a.SignIn.ClientID, ClientSecret: a.SignIn.ClientSecret, Endpoint: ep,
		RedirectURL: a.CallbackURL, Scopes: []string{oidc.ScopeOpenID}}
}

// browserHash is what a state keeps of a browser's cookie.
func browserHash(cookie string) string {
	h := sha256.Sum256([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// idNonce is the OpenID Connect nonce of a sign-in whose PKCE verifier is
// verifier: derived, so that nothing is kept between the steps.
func idNonce(verifier string) string {
	h := sha256.Sum256([]byte("id-token-nonce\x00" + verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// sameBrowser reports whether r comes from the browser that followed
// st's link: it presents the cookie st names.
func sameBrowser(r *http.Request, st state) bool {
	c, err := r.Cookie(cookiePrefix + st.Flow)
	return err == nil && st.Flow != "" && st.Browser != "" &&
		subtle.ConstantTimeCompare([]byte(browserHash(c.Value)), []byte(st.Browser)) == 1
}

func (a *Authorizer) cookie(flow, value string, maxAge int) *http.Cookie {
	u, _ := url.Parse(a.CallbackURL)
	return &http.Cookie{Name: cookiePrefix + flow, Value: value, Path: u.Path, MaxAge: maxAge,
		HttpOnly: true, Secure: u.Scheme == "https", SameSite: http.SameSiteLaxMode}
}

// redirect sends the browser on, keeping the state out of any referrer.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusFound)
}

// notThisBrowser answers a step that did not start in this browser.
func notThisBrowser(w http.ResponseWriter) {
	answer(w, http.StatusForbidden, "Not the browser that followed the link",
		"This step of an authorization did not start in this browser, or took too long. Nothing was stored. Open the link your own agent gave you, and finish in the browser you opened it in.")
}

// followLink serves the consent link: it gives the browser the flow's
// cookie and sends it to sign in at the identity provider.
func (a *Authorizer) followLink(w http.ResponseWriter, r *http.Request, st state) {
	ctx := r.Context()
	if a.SignIn == nil {
		answer(w, http.StatusServiceUnavailable, "Sign-in not configured", "This gateway cannot check who you are, so it cannot take your authorization.")
		return
	}
	prov, _, err := a.provider(ctx)
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).WithName("personauth").Info("the sign-in identity provider is unavailable", "reason", err.Error())
		answer(w, http.StatusBadGateway, "Sign-in unavailable", "The gateway could not reach the identity provider you sign in at. Try the link again shortly.")
		return
	}
	value := newNonce()
	next := st
	next.Kind, next.Nonce, next.Flow, next.Browser = kindSignIn, newNonce(), st.Nonce, browserHash(value)
	next.Expires = a.now().Add(a.StateTTL).Unix()
	token, verifier, err := a.signer.sign(ctx, next)
	if err != nil {
		answer(w, http.StatusInternalServerError, "Link not usable", "The gateway could not continue. Call the tool again to get a new link.")
		return
	}
	http.SetCookie(w, a.cookie(next.Flow, value, int(a.StateTTL/time.Second)))
	redirect(w, r, a.signInConfig(prov).AuthCodeURL(token, oauth2.S256ChallengeOption(verifier), oidc.Nonce(idNonce(verifier))))
}

// signedIn serves the identity provider's redirect: the ID token must name
// the link's person, in the browser that followed the link; then the
// browser goes on to the server's authorization server.
func (a *Authorizer) signedIn(w http.ResponseWriter, r *http.Request, st state, verifier string) {
	ctx := r.Context()
	log := logging.FromContext(ctx, logging.Gateway).WithName("personauth")
	if !sameBrowser(r, st) {
		notThisBrowser(w)
		return
	}
	q := r.URL.Query()
	if iss := q.Get("iss"); a.SignIn == nil || iss != "" && iss != a.SignIn.Issuer.URL {
		answer(w, http.StatusBadRequest, "Wrong identity provider", "The sign-in came back from another identity provider than the gateway's. Nothing was stored.")
		return
	}
	code := q.Get("code")
	if q.Get("error") != "" || code == "" {
		answer(w, http.StatusForbidden, "Not signed in", "You did not sign in, so the gateway cannot tell who you are. Nothing was stored.")
		return
	}
	prov, pctx, err := a.provider(ctx)
	if err != nil {
		answer(w, http.StatusBadGateway, "Sign-in unavailable", "The gateway could not reach the identity provider you sign in at. Call the tool again to get a new link.")
		return
	}
	tok, err := a.signInConfig(prov).Exchange(pctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		log.Info("the identity provider refused the sign-in's code", "code", codeOf(err))
		answer(w, http.StatusBadGateway, "Sign-in failed", "The identity provider did not confirm your sign-in. Nothing was stored; call the tool again to get a new link.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := prov.VerifierContext(pctx, &oidc.Config{ClientID: a.SignIn.ClientID, Now: a.now}).Verify(pctx, raw)
	if err != nil || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(idNonce(verifier))) != 1 {
		log.Info("a sign-in's ID token was not valid")
		answer(w, http.StatusBadGateway, "Sign-in failed", "The identity provider's answer could not be verified. Nothing was stored; call the tool again to get a new link.")
		return
	}
	var claims json.RawMessage
	var party struct {
		AZP string `json:"azp"`
	}
	if err := idt.Claims(&claims); err != nil || json.Unmarshal(claims, &party) != nil ||
		len(idt.Audience) > 1 && party.AZP != a.SignIn.ClientID {
		// An ID token for several audiences is the gateway's only when it
		// names the gateway as the party it was issued to (OpenID Connect
		// Core, 3.1.3.7).
		answer(w, http.StatusBadGateway, "Sign-in failed", "The identity provider's answer could not be read or was not issued to the gateway. Nothing was stored.")
		return
	}
	id, err := a.SignIn.Issuer.MapClaims(claims)
	if err != nil || id.Username != st.User {
		// The link was someone else's: whoever follows another person's
		// link must not bind their own upstream account to that person.
		log.Info("a consent link was followed by another person than it was made for", "namespace", st.Namespace, "server", st.Server, "linkFor", st.User)
		answer(w, http.StatusForbidden, "This link is for another person",
			"You signed in as someone other than the person whose agent asked for this authorization. Nothing was stored, and nothing of your account was given to them. Only follow authorization links your own agent gave you.")
		return
	}
	srv, ok := a.serverOf(w, r, st)
	if !ok {
		return
	}
	ep, err := a.endpointFor(ctx, srv)
	if err != nil || ep.issuer != st.Issuer || ep.cfg.ClientID != st.ClientID {
		answer(w, http.StatusBadGateway, "Server changed", "The MCP server's authorization server or client changed since the link was made, or cannot be reached. Call the tool again to get a new link.")
		return
	}
	next := st
	next.Kind, next.Nonce, next.Expires = kindUpstream, newNonce(), a.now().Add(a.StateTTL).Unix()
	token, upVerifier, err := a.signer.sign(ctx, next)
	if err != nil {
		answer(w, http.StatusInternalServerError, "Link not usable", "The gateway could not continue. Call the tool again to get a new link.")
		return
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(upVerifier)}
	if srv.Spec.URL != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", srv.Spec.URL))
	}
	redirect(w, r, ep.cfg.AuthCodeURL(token, opts...))
}

// errNoSignIn is returned by New for a SignIn without a client.
var errNoSignIn = errors.New("personauth: SignIn needs an issuer URL and a client ID")
