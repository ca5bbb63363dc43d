// Package credentials resolves the credential an MCP operation presents,
// from Secrets in the McpServer's own namespace, at the start of every
// operation so that a rotated Secret takes effect at once. Secrets are read
// with a direct GET: the operator may get Secrets but not list or watch
// them (docs/adr/003-secret-access.md). The gateway reads them through a
// CachedReader, so that a rotation takes effect there within its TTL.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/secret"
	"github.com/mcp-catalog/operator/internal/tokenexchange"
)

// MissingError says a referenced object is not there yet, or not usable
// yet: a Secret (missing, without the key, or not opted in as a
// credential), or the McpDelegationProfile (missing, or not Ready). None of
// them is a fault of the server, and each is fixed without changing the
// referring object; the caller waits and looks again. Reason is the
// condition reason to report.
type MissingError struct {
	Reason string
	Err    error
}

func (e *MissingError) Error() string { return e.Err.Error() }
func (e *MissingError) Unwrap() error { return e.Err }

// ErrDelegationUnavailable is returned for a tool call on a delegated
// server when no token exchanger is configured.
var ErrDelegationUnavailable = errors.New("delegated authentication is not configured in this operator")

// Actor is who a tool call is made for.
type Actor struct {
	// Username is the Kubernetes user name, for a ServiceAccount
	// "system:serviceaccount:<namespace>:<name>".
	Username string
	// Groups are the caller's groups. They never create a delegation
	// mapping; they are carried for audit only.
	Groups []string
	// SubjectToken is the OAuth access token a person presented at the
	// gateway for this call, and Issuer its issuer; both empty for a
	// ServiceAccount. Only an actor entry with subjectTokenFrom: Caller
	// uses it.
	SubjectToken secret.Secret
	Issuer       string
}

// Exchanger exchanges a subject token for one bound to an audience
// (tokenexchange.Client does it per RFC 8693).
type Exchanger interface {
	Exchange(ctx context.Context, req tokenexchange.Request, profile, actor tokenexchange.Allowed) (tokenexchange.Token, error)
}

// Resolver reads the credential an operation presents.
type Resolver struct {
	// Secrets reads Secrets; it must read from the API server, not a cache.
	Secrets client.Reader
	// Profiles reads McpDelegationProfiles (the cache is fine).
	Profiles client.Reader
	// Exchanger serves delegated servers' tool calls; nil refuses them.
	Exchanger Exchanger
}

// SecretValue reads one key of a Secret in ns. It is the only place the
// operator reads a credential from a Secret (CABundle reads CA bundles,
// behind a label of their own), and it refuses a Secret that does not
// carry the label mcp.catalog.dev/credential="true": referencing a Secret
// from an McpServer or McpDelegationProfile is not enough to send it
// anywhere.
func SecretValue(ctx context.Context, r client.Reader, ns string, ref mcpv1alpha1.SecretKeySelector) (secret.Secret, error) {
	var s corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return secret.Secret{}, &MissingError{Reason: mcpv1alpha1.ReasonSecretNotFound,
				Err: fmt.Errorf("no Secret %q in namespace %q", ref.Name, ns)}
		}
		return secret.Secret{}, fmt.Errorf("reading Secret %q: %w", ref.Name, err)
	}
	if s.Labels[mcpv1alpha1.LabelCredential] != mcpv1alpha1.LabelCredentialValue {
		return secret.Secret{}, &MissingError{Reason: mcpv1alpha1.ReasonSecretNotOptedIn,
			Err: fmt.Errorf("the Secret %q in namespace %q is not used as a credential until it carries the label %s=%q",
				ref.Name, ns, mcpv1alpha1.LabelCredential, mcpv1alpha1.LabelCredentialValue)}
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 {
		return secret.Secret{}, &MissingError{Reason: mcpv1alpha1.ReasonSecretKeyNotFound,
			Err: fmt.Errorf("the Secret %q has no non-empty key %q", ref.Name, ref.Key)}
	}
	return secret.New(string(v)), nil
}

// URL returns the server's endpoint URL: spec.url, or the value of the
// spec.urlFrom Secret, read at every operation like a credential (and only
// from a Secret that opted in). Errors never quote the value.
func (r *Resolver) URL(ctx context.Context, srv *mcpv1alpha1.McpServer) (string, error) {
	from := srv.Spec.URLFrom
	if from == nil {
		return srv.Spec.URL, nil
	}
	v, err := SecretValue(ctx, r.Secrets, srv.Namespace, from.SecretRef)
	if err != nil {
		return "", err
	}
	raw := strings.TrimSpace(v.Reveal())
	if err := usableSecretURL(raw, srv.Spec.AllowCredentialOverHTTP); err != nil {
		return "", &MissingError{Reason: mcpv1alpha1.ReasonSecretURLInvalid,
			Err: fmt.Errorf("the Secret %q key %q (spec.urlFrom) %w", from.SecretRef.Name, from.SecretRef.Key, err)}
	}
	return raw, nil
}

// usableSecretURL checks a URL read from a Secret the way the API server
// checks spec.url, except that the query may carry a credential. Since the
// whole URL is secret, plain http needs the same opt-in as a credential.
func usableSecretURL(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil, u.Hostname() == "":
		return errors.New("does not hold an absolute URL with a host")
	case !strings.EqualFold(u.Scheme, "https") && !strings.EqualFold(u.Scheme, "http"):
		return errors.New("does not hold an https or http URL")
	case u.User != nil:
		return errors.New("holds a URL with user information, which is never sent; use spec.auth")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("holds a URL with a fragment")
	case strings.EqualFold(u.Scheme, "http") && !allowHTTP:
		return errors.New("holds a plain http URL, which would send it in clear text; use https, or set spec.allowCredentialOverHTTP: true")
	}
	return nil
}

// Discovery returns the credential imports and probes present: the bearer
// or header Secret, or a delegated server's discovery Secret; nil when none
// is needed.
func (r *Resolver) Discovery(ctx context.Context, srv *mcpv1alpha1.McpServer) (*secret.Credential, error) {
	a := srv.Spec.Auth
	switch {
	case a == nil:
		return nil, nil
	case a.Bearer != nil:
		v, err := SecretValue(ctx, r.Secrets, srv.Namespace, a.Bearer.SecretRef)
		if err != nil {
			return nil, err
		}
		return &secret.Credential{Value: v}, nil
	case a.Header != nil:
		v, err := SecretValue(ctx, r.Secrets, srv.Namespace, a.Header.SecretRef)
		if err != nil {
			return nil, err
		}
		return &secret.Credential{Header: a.Header.Name, Value: v}, nil
	case a.Delegated != nil && a.Delegated.DiscoverySecretRef != nil:
		v, err := SecretValue(ctx, r.Secrets, srv.Namespace, *a.Delegated.DiscoverySecretRef)
		if err != nil {
			return nil, err
		}
		return &secret.Credential{Value: v}, nil
	case a.PerPerson != nil && a.PerPerson.DiscoverySecretRef != nil:
		v, err := SecretValue(ctx, r.Secrets, srv.Namespace, *a.PerPerson.DiscoverySecretRef)
		if err != nil {
			return nil, err
		}
		return &secret.Credential{Value: v}, nil
	}
	return nil, nil
}

// ErrPerPersonCall is returned by ForCall for a per-person server: its
// calls present the calling person's own token, which only the gateway
// holds (Endpoints.CallAs), never the discovery credential.
var ErrPerPersonCall = errors.New("a per-person server's tool calls present the calling person's own token")

// ForCall returns the credential a tool call made for actor presents: the
// server's own credential, or for a delegated server a token exchanged for
// the actor. A delegated call never falls back to the discovery credential.
func (r *Resolver) ForCall(ctx context.Context, srv *mcpv1alpha1.McpServer, actor Actor) (*secret.Credential, error) {
	if a := srv.Spec.Auth; a != nil && a.PerPerson != nil {
		return nil, ErrPerPersonCall
	}
	if a := srv.Spec.Auth; a != nil && a.Delegated != nil {
		if r.Exchanger == nil {
			return nil, ErrDelegationUnavailable
		}
		return r.exchange(ctx, srv, actor)
	}
	return r.Discovery(ctx, srv)
}
