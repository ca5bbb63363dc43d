package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// DefaultCredentialRetryInterval is how soon a server whose Secret is
// missing is looked at again. Secrets are not watched (the operator may only
// get them, see docs/adr/003-secret-access.md), so this is how a Secret
// created after its server is picked up without anyone's help.
const DefaultCredentialRetryInterval = 15 * time.Second

// discoveryCredential returns the credential imports and probes present (see
// credentials.Resolver.Discovery), turning a missing Secret into a wait. For
// a delegated server it also requires its McpDelegationProfile to exist and
// be Ready, since tool calls depend on it.
func (r *McpServerReconciler) discoveryCredential(ctx context.Context, srv *mcpv1alpha1.McpServer) (*mcp.Credential, error) {
	retry := r.CredentialRetryInterval
	if a := srv.Spec.Auth; a != nil && a.Delegated != nil {
		var p mcpv1alpha1.McpDelegationProfile
		err := r.Get(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: a.Delegated.ProfileRef.Name}, &p)
		switch {
		case apierrors.IsNotFound(err):
			return nil, &waitingError{after: retry, reason: mcpv1alpha1.ReasonProfileNotFound,
				err: fmt.Errorf("McpDelegationProfile %q not found in namespace %q", a.Delegated.ProfileRef.Name, srv.Namespace)}
		case err != nil:
			return nil, fmt.Errorf("reading McpDelegationProfile %q: %w", a.Delegated.ProfileRef.Name, err)
		case !meta.IsStatusConditionTrue(p.Status.Conditions, mcpv1alpha1.ConditionReady):
			return nil, &waitingError{after: retry, reason: mcpv1alpha1.ReasonProfileNotReady,
				err: fmt.Errorf("McpDelegationProfile %q is not Ready", p.Name)}
		}
	}
	cred, err := (&credentials.Resolver{Reader: r.APIReader}).Discovery(ctx, srv)
	var missing *credentials.MissingError
	if errors.As(err, &missing) {
		return nil, &waitingError{after: retry, reason: missing.Reason, err: missing.Err}
	}
	return cred, err
}
