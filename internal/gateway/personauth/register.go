package personauth

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// A per-person server without spec.auth.perPerson.clientID is reached with
// a client the gateway registers itself (RFC 7591) at the authorization
// server's registration endpoint, once per server: every replica uses the
// one kept in a Secret of the server's namespace, and registers again only
// when that Secret is gone or was made for another authorization server or
// callback URL.

const (
	// LabelClient marks a Secret as the gateway's registered client of a
	// per-person server.
	LabelClient = "mcp.catalog.dev/person-authorization-client"
	// AnnotationIssuer and AnnotationRedirect say for which authorization
	// server and callback URL the client was registered.
	AnnotationIssuer   = "mcp.catalog.dev/issuer"
	AnnotationRedirect = "mcp.catalog.dev/redirect-uri"
	// ClientSecretPrefix begins the name of every registered client's
	// Secret.
	ClientSecretPrefix = "mcp-person-client-"

	keyClientSecret = "client-secret"
)

// ClientSecretName is the name of the Secret holding the gateway's
// registered client of the McpServer server.
func ClientSecretName(server string) string { return ClientSecretPrefix + hash(server) }

// oauthClient is an OAuth client of an authorization server.
type oauthClient struct{ id, secret string }

// registeredClient returns the gateway's registered client of srv at
// issuer, registering one when there is none for it.
func (a *Authorizer) registeredClient(ctx context.Context, srv *mcpv1alpha1.McpServer, issuer string, meta *oauthex.AuthServerMeta, hc *http.Client) (oauthClient, error) {
	key := types.NamespacedName{Namespace: srv.Namespace, Name: ClientSecretName(srv.Name)}
	var s corev1.Secret
	err := a.Client.Get(ctx, key, &s)
	switch {
	case err == nil && a.usableClient(&s, srv, issuer):
		return oauthClient{id: string(s.Data[keyClientID]), secret: string(s.Data[keyClientSecret])}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return oauthClient{}, fmt.Errorf("reading the registered client's Secret: %w", err)
	}
	exists := err == nil
	if meta.RegistrationEndpoint == "" {
		return oauthClient{}, &DiscoveryError{What: "the authorization server offers no dynamic client registration (RFC 7591); register a client and set spec.auth.perPerson.clientID"}
	}
	method := "none"
	if len(meta.TokenEndpointAuthMethodsSupported) == 0 || slices.Contains(meta.TokenEndpointAuthMethodsSupported, "client_secret_basic") {
		method = "client_secret_basic"
	}
	reg, err := oauthex.RegisterClient(ctx, meta.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{a.CallbackURL},
		TokenEndpointAuthMethod: method,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              "MCP catalog gateway (" + srv.Namespace + "/" + srv.Name + ")",
		Scope:                   strings.Join(srv.Spec.Auth.PerPerson.Scopes, " "),
	}, hc)
	if err != nil || reg == nil || reg.ClientID == "" {
		return oauthClient{}, &OAuthError{Op: "registering the gateway as a client (RFC 7591)"}
	}
	c := oauthClient{id: reg.ClientID, secret: reg.ClientSecret}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name, ResourceVersion: s.ResourceVersion,
			Labels:      map[string]string{LabelClient: "true", LabelServerHash: ServerHash(srv.Name)},
			Annotations: map[string]string{AnnotationServer: srv.Name, AnnotationIssuer: issuer, AnnotationRedirect: a.CallbackURL, AnnotationUpdated: a.now().UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: mcpv1alpha1.GroupVersion.String(), Kind: "McpServer",
				Name: srv.Name, UID: srv.UID, BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{keyClientID: []byte(c.id)},
	}
	if c.secret != "" {
		s.Data[keyClientSecret] = []byte(c.secret)
	}
	if exists {
		err = a.Client.Update(ctx, &s)
	} else {
		err = a.Client.Create(ctx, &s)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		// Another replica registered at the same moment: use its client,
		// so that every replica's links and tokens name one client.
		var theirs corev1.Secret
		if gerr := a.Client.Get(ctx, key, &theirs); gerr == nil && a.usableClient(&theirs, srv, issuer) {
			return oauthClient{id: string(theirs.Data[keyClientID]), secret: string(theirs.Data[keyClientSecret])}, nil
		}
	}
	if err != nil {
		return oauthClient{}, fmt.Errorf("storing the registered client: %w", err)
	}
	return c, nil
}

// usableClient reports whether s is the gateway's registered client of srv
// at issuer, for the current callback URL.
func (a *Authorizer) usableClient(s *corev1.Secret, srv *mcpv1alpha1.McpServer, issuer string) bool {
	return s.Labels[LabelClient] == "true" && s.Annotations[AnnotationServer] == srv.Name &&
		s.Annotations[AnnotationIssuer] == issuer && s.Annotations[AnnotationRedirect] == a.CallbackURL && len(s.Data[keyClientID]) > 0
}
