package credentials

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

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
	// ReasonCallerTokenUnavailable: the actor's entry takes the caller's
	// token (subjectTokenFrom: Caller), and the call carries none: a
	// ServiceAccount, whose gateway token never leaves the gateway.
	ReasonCallerTokenUnavailable = "CallerTokenUnavailable"
	// ReasonCallerTokenElsewhere: the profile's token endpoint is not on the
	// origin of the issuer of the caller's token, which is sent nowhere
	// else.
	ReasonCallerTokenElsewhere = "CallerTokenNotForEndpoint"
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
	subject, err := r.subjectToken(ctx, srv.Namespace, p, entry, actor)
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

// subjectToken is the actor's subject token: its Secret's, or with
// subjectTokenFrom: Caller the access token the person presented at the
// gateway, which is sent only to a token endpoint on its issuer's origin.
func (r *Resolver) subjectToken(ctx context.Context, ns string, p *mcpv1alpha1.McpDelegationProfile, entry *mcpv1alpha1.DelegationActor, actor Actor) (secret.Secret, error) {
	if entry.SubjectTokenFrom != mcpv1alpha1.SubjectTokenFromCaller {
		if entry.SubjectTokenSecretRef == nil {
			return secret.Secret{}, &MissingError{Reason: mcpv1alpha1.ReasonSecretNotFound,
				Err: fmt.Errorf("the entry of %q in McpDelegationProfile %q names no subject token Secret", actor.Username, p.Name)}
		}
		return SecretValue(ctx, r.Secrets, ns, *entry.SubjectTokenSecretRef)
	}
	if actor.SubjectToken.IsZero() || actor.Issuer == "" {
		return secret.Secret{}, &DelegationError{Reason: ReasonCallerTokenUnavailable,
			Err: fmt.Errorf("the entry of %q in McpDelegationProfile %q takes the caller's access token, and this call carries none (only a person with an OAuth access token has one)", actor.Username, p.Name)}
	}
	if !sameOrigin(p.Spec.TokenEndpoint, actor.Issuer) {
		return secret.Secret{}, &DelegationError{Reason: ReasonCallerTokenElsewhere,
			Err: fmt.Errorf("McpDelegationProfile %q's token endpoint is not on the origin of the issuer of the caller's token, which is sent nowhere else", p.Name)}
	}
	return actor.SubjectToken, nil
}

// sameOrigin reports whether two absolute URLs have the same scheme, host
// and port.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || ua.Host == "" {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
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
