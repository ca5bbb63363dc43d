package oauthresource

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// WellKnownPath is where RFC 9728 puts protected resource metadata: at
// the host's root, or with the resource's path after it.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Metadata is the gateway's protected resource metadata (RFC 9728 §2):
// its canonical resource URI, the issuers that mint tokens for it, that a
// token goes in the Authorization header only, and the scopes it
// advertises.
func (v *Validator) Metadata() *oauthex.ProtectedResourceMetadata {
	servers := make([]string, 0, len(v.opts.Issuers))
	for _, is := range v.opts.Issuers {
		servers = append(servers, is.URL)
	}
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.opts.Resource,
		AuthorizationServers:   servers,
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        append([]string(nil), v.opts.Scopes...),
		ResourceName:           "MCP catalog gateway",
	}
}

// MetadataPaths are the paths the metadata is served at: the path-suffixed
// form for the resource's path first (e.g.
// /.well-known/oauth-protected-resource/mcp), which MCP clients of
// 2025-11-25 try first, and the root form, which clients of 2025-06-18
// and the fallback use. One path when the resource has none.
func (v *Validator) MetadataPaths() []string {
	p := resourcePath(v.opts.Resource)
	if p == "" {
		return []string{WellKnownPath}
	}
	return []string{WellKnownPath + p, WellKnownPath}
}

// MetadataURL is the metadata's URL that the WWW-Authenticate challenge
// names: RFC 9728 §3.1's, the well-known path inserted between the
// resource's host and its path.
func (v *Validator) MetadataURL() string {
	u, _ := url.Parse(v.opts.Resource) // checked by Validate
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: v.MetadataPaths()[0]}).String()
}

// resourcePath is the resource URI's path without a trailing slash ("" for
// none or "/").
func resourcePath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataHandler serves the metadata at MetadataPaths (GET, and the
// OPTIONS of a browser's preflight: the document is public), and 404 at
// any other path. Mount it on the gateway's mux at each of MetadataPaths,
// outside the bearer-token check.
func (v *Validator) MetadataHandler() http.Handler {
	doc := auth.ProtectedResourceMetadataHandler(v.Metadata())
	paths := v.MetadataPaths()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range paths {
			if r.URL.Path == p {
				w.Header().Set("Cache-Control", "public, max-age=300")
				doc.ServeHTTP(w, r)
				return
			}
		}
		http.NotFound(w, r)
	})
}

// Challenge is the WWW-Authenticate value of a 401 to a request without a
// token (RFC 9728 §5.1, RFC 6750 §3): the metadata's URL and the
// advertised scopes. Both MCP revisions require the resource_metadata
// parameter on a 401.
func (v *Validator) Challenge() string {
	return bearer(
		param{"resource_metadata", v.MetadataURL()},
		param{"scope", strings.Join(v.opts.Scopes, " ")},
	)
}

// InvalidTokenChallenge is the WWW-Authenticate value of a 401 to a
// request whose token was refused (RFC 6750 §3.1, invalid_token): the
// reason, never the token.
func (v *Validator) InvalidTokenChallenge(err *TokenError) string {
	desc := "the access token was refused"
	if err != nil {
		desc += " (" + string(err.Reason) + ")"
	}
	return bearer(
		param{"error", "invalid_token"},
		param{"error_description", desc},
		param{"resource_metadata", v.MetadataURL()},
		param{"scope", strings.Join(v.opts.Scopes, " ")},
	)
}

// InsufficientScopeChallenge is the WWW-Authenticate value of a 403 to a
// token that lacks scopes (RFC 6750 §3.1, and the MCP specification's
// runtime insufficient-scope answer of 2025-11-25): scopes are all the
// scopes the request needs, those the token has included, so that the
// client's step-up authorization does not lose what it was granted.
func (v *Validator) InsufficientScopeChallenge(scopes []string, description string) string {
	return bearer(
		param{"error", "insufficient_scope"},
		param{"scope", strings.Join(scopes, " ")},
		param{"resource_metadata", v.MetadataURL()},
		param{"error_description", description},
	)
}

type param struct{ name, value string }

// bearer writes a Bearer challenge; empty values are left out.
func bearer(params ...param) string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	for _, p := range params {
		if p.value == "" {
			continue
		}
		b.WriteString(sep)
		b.WriteString(p.name)
		b.WriteString(`="`)
		b.WriteString(quotedString(p.value))
		b.WriteString(`"`)
		sep = ", "
	}
	return b.String()
}

// quotedString escapes a value for an HTTP quoted-string (RFC 9110
// §5.6.4) and drops control characters, which may not appear in one.
func quotedString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 && r != '\t', r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
