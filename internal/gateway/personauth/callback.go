package personauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"golang.org/x/oauth2"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/logging"
)

func tlsConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// page is what the person's browser is shown: words only, never a token,
// code, state or the authorization server's text.
var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MCP catalog: {{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

func answer(w http.ResponseWriter, status int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = page.Execute(w, struct{ Title, Text string }{title, text})
}

// CallbackHandler serves CallbackPath, every step of a consent flow: the
// consent link (LinkParam), which sends the browser to sign in as the
// person; the identity provider's redirect, which goes on to the server's
// authorization server when the browser signed in as the link's person;
// and the authorization server's redirect after the person consented (or
// refused). Each step verifies its state; the last exchanges the code with
// the PKCE verifier the state's nonce derives and stores the person's
// tokens (a refusal is stored too, so that the agent's next call says
// so), in the browser that signed in only.
func (a *Authorizer) CallbackHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			answer(w, http.StatusMethodNotAllowed, "Method not allowed", "This address is only visited by a browser coming back from an authorization server.")
			return
		}
		q := r.URL.Query()
		if q.Has(LinkParam) {
			st, _, err := a.signer.verify(r.Context(), q.Get(LinkParam), a.now())
			if err != nil || st.Kind != kindLink {
				answer(w, http.StatusBadRequest, "Link not valid", "This authorization link is not valid or has expired. Call the tool again from your agent to get a new link.")
				return
			}
			a.followLink(w, r, st)
			return
		}
		st, verifier, err := a.signer.verify(r.Context(), q.Get("state"), a.now())
		switch {
		case err != nil:
		case st.Kind == kindSignIn:
			a.signedIn(w, r, st, verifier)
			return
		case st.Kind == kindUpstream:
			a.consented(w, r, st, verifier)
			return
		}
		answer(w, http.StatusBadRequest, "Link not valid", "This authorization link is not valid or has expired. Call the tool again from your agent to get a new link.")
	})
}

// serverOf is the server st is for, while it is the one the link was made
// for (same UID, still per-person, same client when the spec names one);
// otherwise it answers and reports false.
func (a *Authorizer) serverOf(w http.ResponseWriter, r *http.Request, st state) (*mcpv1alpha1.McpServer, bool) {
	var srv mcpv1alpha1.McpServer
	if err := a.Client.Get(r.Context(), types.NamespacedName{Namespace: st.Namespace, Name: st.Server}, &srv); err != nil ||
		string(srv.UID) != st.ServerUID || srv.Spec.Auth == nil || srv.Spec.Auth.PerPerson == nil ||
		srv.Spec.Auth.PerPerson.ClientID != "" && srv.Spec.Auth.PerPerson.ClientID != st.ClientID {
		answer(w, http.StatusBadRequest, "Server changed", "The MCP server this link was for no longer exists or has changed how it is authorized. Call the tool again to get a new link.")
		return nil, false
	}
	return &srv, true
}

// consented serves the authorization server's redirect, in the browser
// that signed in as the link's person: it exchanges the code and stores
// the tokens, or the refusal.
func (a *Authorizer) consented(w http.ResponseWriter, r *http.Request, st state, verifier string) {
	ctx := r.Context()
	log := logging.FromContext(ctx, logging.Gateway).WithName("personauth")
	q := r.URL.Query()
	if !sameBrowser(r, st) {
		// Not the browser that signed in as st.User: a consent link
		// passed on after the sign-in stores nothing.
		notThisBrowser(w)
		return
	}
	srv, ok := a.serverOf(w, r, st)
	if !ok {
		return
	}
	// The flow ends here, whatever the answer.
	http.SetCookie(w, a.cookie(st.Flow, "", -1))
	if iss := q.Get("iss"); iss != "" && iss != st.Issuer {
		// RFC 9207: the answer is from another authorization server
		// than the one the link sent the person to (a mix-up).
		answer(w, http.StatusBadRequest, "Wrong authorization server", "The answer came from another authorization server than the one this link was for; nothing was stored.")
		return
	}
	if e := q.Get("error"); e != "" {
		if e != "access_denied" {
			code := ""
			if knownCodes[e] {
				code = " (" + e + ")"
			}
			answer(w, http.StatusBadGateway, "Authorization failed", "The authorization server did not authorize the MCP server"+code+". Nothing was stored; call the tool again to try again.")
			return
		}
		a.tokens.drop(srv.Namespace + "/" + SecretName(srv.Name, st.User))
		if err := a.write(ctx, srv, st.User, stored{state: StateRefused, issuer: st.Issuer, clientID: st.ClientID}, nil); err != nil {
			log.Error(err, "recording a refused consent failed", "namespace", srv.Namespace, "server", srv.Name)
		}
		answer(w, http.StatusOK, "Consent refused", "You refused to authorize the MCP server "+srv.Name+". Your agent's calls of its tools are refused until you authorize it.")
		return
	}
	code := q.Get("code")
	if code == "" {
		answer(w, http.StatusBadRequest, "No authorization code", "The authorization server sent no authorization code. Call the tool again to get a new link.")
		return
	}
	ep, err := a.endpointFor(ctx, srv)
	if err == nil && ep.cfg.ClientID != st.ClientID {
		answer(w, http.StatusBadRequest, "Server changed", "The gateway's client at the authorization server changed since the link was made. Call the tool again to get a new link.")
		return
	}
	if err != nil || ep.issuer != st.Issuer {
		log.Info("the authorization server could not be used for a callback", "namespace", srv.Namespace, "server", srv.Name, "reason", reasonOf(err))
		answer(w, http.StatusBadGateway, "Authorization server unavailable", "The gateway could not use the MCP server's authorization server to finish. Call the tool again to get a new link.")
		return
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if srv.Spec.URL != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", srv.Spec.URL))
	}
	tok, err := ep.cfg.Exchange(ep.ctx, code, opts...)
	if err != nil {
		c := codeOf(err)
		log.Info("the authorization server refused the authorization code", "namespace", srv.Namespace, "server", srv.Name, "code", c)
		if c != "" {
			c = " (" + c + ")"
		}
		answer(w, http.StatusBadGateway, "Authorization failed", "The authorization server did not issue a token"+c+". Nothing was stored; call the tool again to try again.")
		return
	}
	next, err := storedFrom(tok, st.Issuer, st.ClientID, "")
	if next.scopes == "" {
		// RFC 6749 §5.1: no scope in the answer is the scope asked.
		next.scopes = strings.Join(srv.Spec.Auth.PerPerson.Scopes, " ")
	}
	a.tokens.drop(srv.Namespace + "/" + SecretName(srv.Name, st.User))
	if err == nil {
		err = a.write(ctx, srv, st.User, next, nil)
	}
	if err != nil {
		log.Error(errors.New(reasonOf(err)), "storing a person's authorization failed", "namespace", srv.Namespace, "server", srv.Name)
		answer(w, http.StatusInternalServerError, "Not stored", "The gateway could not store your authorization. Call the tool again to try again.")
		return
	}
	log.V(1).Info("a person authorized a server", "namespace", srv.Namespace, "server", srv.Name, "user", st.User)
	answer(w, http.StatusOK, "Authorized", "You authorized the MCP server "+srv.Name+" for your own calls. Return to your agent and call the tool again.")
}

// reasonOf is an error's text when it is one of this package's (which
// hold no token), and a fixed word otherwise.
func reasonOf(err error) string {
	var (
		d *DiscoveryError
		o *OAuthError
	)
	switch {
	case err == nil:
		return "the issuer changed"
	case errors.As(err, &d), errors.As(err, &o):
		return err.Error()
	}
	return "failed"
}
