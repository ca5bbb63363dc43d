package credentials

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/secret"
	"github.com/mcp-catalog/operator/internal/tokenexchange"
)

// Reasons a delegated call is refused before any token is requested.
const (
	// ReasonActorNotMapped: the profile has no entry for the actor. Group
	// membership (cluster-admin included) never creates one.
	ReasonActorNotMapped = "ActorNotMapped"
	// ReasonActorDisabled: the actor's entry is not enabled.
	ReasonActorDisabled = "ActorDisabled"
	// ReasonExchangeFailed: the token endpoint refused or failed.
	ReasonExchangeFailed = "TokenExchangeFailed"
)

// DelegationError explains why no token could be had for an actor. Its
// text names the reason and the objects involved, never a token.
type DelegationError struct {
	Reason string
	Err    error
}

func (e *DelegationError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *DelegationError) Unwrap() error { return e.Err }

// exchange obtains, per call, a token exchanged for the calling actor
// through the server's McpDelegationProfile (RFC 8693). The token lives only
// in the returned credential: it is used for one operation and dropped.
func (r *Resolver) exchange(ctx context.Context, srv *mcpv1alpha1.McpServer, actor Actor) (*secret.Credential, error) {
	del := srv.Spec.Auth.Delegated
	if del == nil {
		return nil, errors.New("the server is not in delegated mode")
	}
	p, err := r.Profile(ctx, srv)
	if err != nil {
		return nil, err
	}
	entry := actorEntry(p, actor.Username)
	switch {
	case entry == nil:
		return nil, &DelegationError{Reason: ReasonActorNotMapped, Err: fmt.Errorf("%q has no entry in McpDelegationProfile %q", actor.Username, p.Name)}
	case entry.Enabled == nil || !*entry.Enabled:
		return nil, &DelegationError{Reason: ReasonActorDisabled, Err: fmt.Errorf("the entry of %q in McpDelegationProfile %q is not enabled", actor.Username, p.Name)}
	}

	clientSecret, err := SecretValue(ctx, r.Secrets, srv.Namespace, p.Spec.ClientSecretRef)
	if err != nil {
		return nil, err
	}
	subject, err := SecretValue(ctx, r.Secrets, srv.Namespace, entry.SubjectTokenSecretRef)
	if err != nil {
		return nil, err
	}
	// The resource indicator names the server. A URL read from a Secret is
	// itself a credential and is not sent to the token endpoint; the
	// audience still binds the token.
	resource := srv.Spec.URL
	if srv.Spec.URLFrom != nil {
		resource = ""
	}
	// The token endpoint's CA bundle is read with the secrets, per call, so
	// a rotated bundle is used at once.
	bundle, err := CABundle(ctx, r.Secrets, srv.Namespace, p.Spec.TLS)
	if err != nil {
		return nil, err
	}
	profileAllowed, actorAllowed := allowedSets(p, entry)
	tok, err := r.Exchanger.Exchange(ctx, tokenexchange.Request{
		TokenEndpoint:    p.Spec.TokenEndpoint,
		ClientID:         p.Spec.ClientID,
		ClientSecret:     clientSecret,
		SubjectToken:     subject,
		SubjectTokenType: subjectTokenType(p),
		Audience:         del.Audience,
		Scopes:           del.Scopes,
		Resource:         resource,
		Namespace:        srv.Namespace,
		CABundle:         bundle,
	}, profileAllowed, actorAllowed)
	if err != nil {
		return nil, &DelegationError{Reason: ReasonExchangeFailed, Err: err}
	}
	cred, err := tok.Credential()
	if err != nil {
		return nil, &DelegationError{Reason: ReasonExchangeFailed, Err: err}
	}
	return &cred, nil
}

// Profile reads the McpDelegationProfile a delegated server names; a
// missing one is a *MissingError.
func (r *Resolver) Profile(ctx context.Context, srv *mcpv1alpha1.McpServer) (*mcpv1alpha1.McpDelegationProfile, error) {
	name := srv.Spec.Auth.Delegated.ProfileRef.Name
	var p mcpv1alpha1.McpDelegationProfile
	if err := r.Profiles.Get(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: name}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &MissingError{Reason: mcpv1alpha1.ReasonProfileNotFound, Err: fmt.Errorf("McpDelegationProfile %q not found in namespace %q", name, srv.Namespace)}
		}
		return nil, fmt.Errorf("reading McpDelegationProfile %q: %w", name, err)
	}
	return &p, nil
}

// actorEntry finds the actor's explicit entry. Only an exact identity
// matches: no wildcard, no group.
func actorEntry(p *mcpv1alpha1.McpDelegationProfile, username string) *mcpv1alpha1.DelegationActor {
	if username == "" {
		return nil
	}
	for i := range p.Spec.Actors {
		if p.Spec.Actors[i].Identity == username {
			return &p.Spec.Actors[i]
		}
	}
	return nil
}

// allowedSets resolves the API's rule that an actor's unset lists mean all
// of the profile's.
func allowedSets(p *mcpv1alpha1.McpDelegationProfile, a *mcpv1alpha1.DelegationActor) (profile, actor tokenexchange.Allowed) {
	profile = tokenexchange.Allowed{Audiences: p.Spec.AllowedAudiences, Scopes: p.Spec.AllowedScopes}
	actor = profile
	if a.AllowedAudiences != nil {
		actor.Audiences = a.AllowedAudiences
	}
	if a.AllowedScopes != nil {
		actor.Scopes = a.AllowedScopes
	}
	return profile, actor
}

func subjectTokenType(p *mcpv1alpha1.McpDelegationProfile) string {
	if p.Spec.SubjectTokenType != "" {
		return p.Spec.SubjectTokenType
	}
	return tokenexchange.TokenTypeAccessToken
}
