package personauth

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/egress"
)

// Revoking a person's authorization deletes their Secret and, first,
// revokes its tokens at the authorization server that issued them (RFC
// 7009). It runs with the credentials of whoever revokes (kubectl mcp and
// its console act with the person's kubeconfig): reading the tokens and the
// client's secret is what their RBAC allows, and the Secret is deleted
// whatever the authorization server answers (ADR 056).

// What happened at the authorization server (Revocation.Upstream).
const (
	// UpstreamRevoked: the revocation endpoint accepted every stored
	// token.
	UpstreamRevoked = "Revoked"
	// UpstreamNoEndpoint: the authorization server's metadata names no
	// revocation endpoint; its tokens stay valid there until they expire.
	UpstreamNoEndpoint = "NoRevocationEndpoint"
	// UpstreamFailed: revoking failed (Revocation.Reason says why, in
	// words that hold no token).
	UpstreamFailed = "Failed"
	// UpstreamNothing: the authorization held no token (refused, or
	// already refused by the authorization server).
	UpstreamNothing = "NothingToRevoke"
)

// Revocation is the outcome of revoking one authorization. The Secret is
// gone whatever Upstream says.
type Revocation struct {
	Upstream string
	Reason   string
}

// Words are what a person is told of the authorization server's part.
func (r Revocation) Words() string {
	switch r.Upstream {
	case UpstreamRevoked:
		return "revoked at the authorization server too"
	case UpstreamNoEndpoint:
		return "the authorization server offers no revocation endpoint: its tokens stay valid there until they expire"
	case UpstreamNothing:
		return "no token was stored, so none was revoked at the authorization server"
	}
	return "revoking at the authorization server failed (" + r.Reason + "): revoke it there too"
}

// NotStoredError says there is no authorization of Server for User.
type NotStoredError struct{ Namespace, Server, User string }

func (e *NotStoredError) Error() string {
	return fmt.Sprintf("no stored authorization of %q for %s in namespace %q", e.Server, e.User, e.Namespace)
}

// NotAnAuthorizationError says the Secret with the authorization's name is
// not one the gateway wrote for that server and person; it is left alone.
type NotAnAuthorizationError struct{ Name, Server, User string }

func (e *NotAnAuthorizationError) Error() string {
	return fmt.Sprintf("the Secret %s is not the gateway's authorization of %q for %s; it was left alone", e.Name, e.Server, e.User)
}

// Owns reports whether the Secret with metadata m is user's authorization
// of server: the label and both annotations, not the name alone.
func Owns(m metav1.Object, server, user string) bool {
	return m.GetLabels()[LabelAuthorization] == "true" && m.GetAnnotations()[AnnotationUser] == user &&
		m.GetAnnotations()[AnnotationServer] == server
}

// Revoker revokes people's authorizations.
type Revoker struct {
	// Client acts as whoever revokes.
	Client client.Client
	// RootCAs, when set, replace the system roots for authorization
	// servers (tests); the server's spec.tls.caBundleRef is trusted too.
	RootCAs *x509.CertPool
	// Egress says which private addresses authorization servers may be
	// at; the zero Policy allows none.
	Egress egress.Policy
}

// localRanges are the private networks a revocation from a person's
// machine may reach for a server that opts in with allowPrivateNetwork.
var localRanges, _ = egress.ParseCIDRs("10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,127.0.0.0/8,fc00::/7,::1/128")

// LocalEgress is the egress policy of a revocation from a person's machine
// (kubectl mcp and its console): the cluster's own ranges are the
// gateway's flags, which kubectl does not know, so the McpServer's opt-in
// alone lets a private address be dialled; link-local and metadata
// addresses stay refused.
func LocalEgress() egress.Policy { return egress.Policy{PrivateCIDRs: localRanges} }

// revokeTimeout bounds the whole conversation with the authorization
// server.
const revokeTimeout = 20 * time.Second

// Revoke revokes user's authorization of the McpServer server in ns: its
// tokens at the authorization server, then the Secret. The error is
// *NotStoredError, *NotAnAuthorizationError, or the API server's refusal
// to read or delete; a failure at the authorization server is not an
// error but the Revocation's Upstream.
func (r *Revoker) Revoke(ctx context.Context, ns, server, user string) (Revocation, error) {
	key := types.NamespacedName{Namespace: ns, Name: SecretName(server, user)}
	// RBAC's get on the Secret: the verb a read of its metadata alone
	// needs too, so revoking upstream asks for no grant that deleting
	// after checking the metadata did not.
	var s corev1.Secret
	err := r.Client.Get(ctx, key, &s)
	switch {
	case apierrors.IsNotFound(err):
		return Revocation{}, &NotStoredError{Namespace: ns, Server: server, User: user}
	case err != nil:
		return Revocation{}, err
	}
	if !Owns(&s, server, user) {
		return Revocation{}, &NotAnAuthorizationError{Name: key.Name, Server: server, User: user}
	}
	out := r.upstream(ctx, ns, server, &s)
	if err := r.Client.Delete(ctx, &s, client.Preconditions{UID: &s.UID}); err != nil && !apierrors.IsNotFound(err) {
		return out, err
	}
	return out, nil
}

// upstream revokes the tokens s holds at the authorization server that
// issued them, with the client they were issued to.
func (r *Revoker) upstream(ctx context.Context, ns, server string, s *corev1.Secret) Revocation {
	refresh, access := string(s.Data[keyRefreshToken]), string(s.Data[keyAccessToken])
	if refresh == "" && access == "" {
		return Revocation{Upstream: UpstreamNothing}
	}
	failed := func(reason string) Revocation { return Revocation{Upstream: UpstreamFailed, Reason: reason} }
	issuer, clientID := string(s.Data[keyIssuer]), string(s.Data[keyClientID])
	if issuer == "" || clientID == "" {
		return failed("the authorization does not record its authorization server or client")
	}
	ctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	var srv mcpv1alpha1.McpServer
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: server}, &srv); err != nil {
		return failed("the McpServer could not be read")
	}
	hc, err := r.httpClient(ctx, &srv)
	if err != nil {
		return failed("the server's CA bundle could not be used")
	}
	ctx = egress.WithGrant(ctx, r.Egress.Grant(ns, srv.Spec.AllowPrivateNetwork))
	// The tokens go only where the issuer they came from says: its own
	// metadata's revocation endpoint, never one the spec names now.
	meta, err := authServerMeta(ctx, issuer, hc)
	if err != nil {
		return failed(err.Error())
	}
	if meta.RevocationEndpoint == "" {
		return Revocation{Upstream: UpstreamNoEndpoint}
	}
	if u, err := url.Parse(meta.RevocationEndpoint); err != nil || u.Scheme != "https" || u.Host == "" {
		return failed("the revocation endpoint is not an https URL")
	}
	secret, err := r.clientSecret(ctx, &srv, clientID)
	if err != nil {
		return failed(err.Error())
	}
	// The refresh token first: revoking it may revoke its access tokens
	// too (RFC 7009 §2.1); the access token is revoked as well in case
	// it does not.
	for _, t := range []struct{ value, hint string }{{refresh, "refresh_token"}, {access, "access_token"}} {
		if t.value == "" {
			continue
		}
		if reason := revokeAt(ctx, hc, meta.RevocationEndpoint, clientID, secret, t.value, t.hint); reason != "" {
			return failed(reason)
		}
	}
	return Revocation{Upstream: UpstreamRevoked}
}

func (r *Revoker) httpClient(ctx context.Context, srv *mcpv1alpha1.McpServer) (*http.Client, error) {
	transport := egress.NewTransport(nil)
	if r.RootCAs != nil {
		transport = egress.NewTransport(tlsConfig(r.RootCAs))
	}
	base := &http.Client{
		Transport: transport,
		Timeout:   revokeTimeout,
		// A token is never sent to another host than the one named.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	bundle, err := credentials.CABundle(ctx, r.Client, srv.Namespace, srv.Spec.TLS)
	if err != nil {
		return nil, err
	}
	return egress.NewTrust(base).Client(bundle)
}

// clientSecret is the secret of the client the tokens were issued to, or
// "" for a public client: the spec's clientSecretRef when the spec still
// names that client, the gateway's registered client's otherwise.
func (r *Revoker) clientSecret(ctx context.Context, srv *mcpv1alpha1.McpServer, clientID string) (string, error) {
	var pp *mcpv1alpha1.PerPersonAuth
	if srv.Spec.Auth != nil {
		pp = srv.Spec.Auth.PerPerson
	}
	switch {
	case pp != nil && pp.ClientID == clientID:
		if pp.ClientSecretRef == nil {
			return "", nil
		}
		v, err := credentials.SecretValue(ctx, r.Client, srv.Namespace, *pp.ClientSecretRef)
		if err != nil {
			return "", errors.New("the client's secret could not be read")
		}
		return v.Reveal(), nil
	case pp == nil || pp.ClientID == "":
		var s corev1.Secret
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: ClientSecretName(srv.Name)}, &s)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", errors.New("the gateway's registered client could not be read")
		case s.Labels[LabelClient] == "true" && s.Annotations[AnnotationServer] == srv.Name && string(s.Data[keyClientID]) == clientID:
			return string(s.Data[keyClientSecret]), nil
		}
	}
	// The client is no longer known: revoke as a public client, which an
	// authorization server refuses if the client had a secret.
	return "", nil
}

// maxRevocationAnswer bounds what is read of a refusal.
const maxRevocationAnswer = 16 << 10

// revokeAt asks endpoint to revoke token (RFC 7009), authenticating as the
// client did at the token endpoint: HTTP Basic with a secret (RFC 6749
// §2.3.1, names form-encoded), client_id alone for a public client. It
// returns "" on success, or why not in words that hold no token and no
// text of the server's.
func revokeAt(ctx context.Context, hc *http.Client, endpoint, clientID, secret, token, hint string) string {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if secret == "" {
		form.Set("client_id", clientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "the revocation request could not be made"
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		var blocked *egress.BlockedAddressError
		if errors.As(err, &blocked) {
			return "the authorization server is at an address the egress policy does not allow"
		}
		return "the revocation endpoint could not be reached"
	}
	defer func() { _ = resp.Body.Close() }()
	// RFC 7009 §2.2 answers 200; a 204 means the same to a client.
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNoContent {
		return ""
	}
	var body struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxRevocationAnswer)).Decode(&body)
	if knownCodes[body.Error] || body.Error == "unsupported_token_type" {
		return "the revocation endpoint answered " + body.Error
	}
	return "the revocation endpoint answered HTTP " + strconv.Itoa(resp.StatusCode)
}
