package authn

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// A person, or an agent outside the cluster, calls with an OAuth access
// token of an issuer the administrator trusts (internal/oauthresource).
// Such an identity has no namespace of its own, so it names one in the
// endpoint's path, /namespaces/<namespace>/mcp, and each such endpoint is
// a protected resource of its own: tokens are issued for it, its metadata
// names it, and a token issued for one namespace's endpoint is refused at
// another's (docs/adr/053-oauth-identities-at-the-gateway.md).

// PathNamespace is the name of the path wildcard that carries the
// namespace a request is for ("/namespaces/{namespace}/mcp"); a request
// at a path without it is for the caller's own namespace, which only a
// ServiceAccount has.
const PathNamespace = "namespace"

// NamespaceSegment is the path segment that, followed by a namespace,
// comes before the endpoint's own last segment.
const NamespaceSegment = "namespaces"

// NamespacedResource is the resource URI of namespace's endpoint: the
// gateway's resource URI with "namespaces/<namespace>/" inserted before
// the last segment of its path (https://mcp.example.com/mcp becomes
// https://mcp.example.com/namespaces/team-a/mcp).
func NamespacedResource(resource, namespace string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	dir, last := "", strings.TrimPrefix(u.Path, "/")
	if i := strings.LastIndex(u.Path, "/"); i >= 0 {
		dir, last = u.Path[:i], u.Path[i+1:]
	}
	u.Path = dir + "/" + NamespaceSegment + "/" + namespace + "/" + last
	u.RawPath = ""
	return u.String()
}

// validNamespace reports whether s can be a namespace's name.
func validNamespace(s string) bool {
	return len(validation.IsDNS1123Label(s)) == 0
}

// serviceAccountShaped reports whether token's claims, read without
// verifying anything, name a ServiceAccount as subject: such a token goes
// to TokenReview, any other to the OAuth validator. An OIDC identity never
// lands in system: (oauthresource refuses it), so a token cannot be made
// to take the other path and be accepted there.
func serviceAccountShaped(token string) bool {
	_, rest, ok := strings.Cut(token, ".")
	if !ok || len(token) > maxTokenBytes {
		return false
	}
	payload, _, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return false
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	return json.Unmarshal(raw, &claims) == nil && strings.HasPrefix(claims.Subject, "system:serviceaccount:")
}

// personIdentity is the Identity of a validated access token, for
// namespace.
func personIdentity(id *oauthresource.Identity, namespace string) *Identity {
	extra := make(map[string][]string, len(id.Extra))
	for k, v := range id.Extra {
		extra[k] = append([]string(nil), v...)
	}
	out := &Identity{
		Username: id.Username, UID: id.UID, Groups: append([]string(nil), id.Groups...), Extra: extra,
		Namespace: namespace, Issuer: id.Issuer,
	}
	out.subject = subjectKey(out)
	return out
}
