package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// reconcileCredentials resolves the endpoint the server's imports and
// probes use, with the Secret they present, at every reconcile, so a
// rotated Secret is used at once. A delegated server also needs its
// McpDelegationProfile to exist and be Ready, and a server with
// spec.tls.caBundleRef a usable CA bundle. It sets CredentialsResolved; a
// missing reference or an unusable bundle waits.
func (r *McpServerReconciler) reconcileCredentials(ctx context.Context, sc *serverScope) error {
	srv := sc.server
	set := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionCredentialsResolved, status, reason, msg, sc.now)
	}
	ep, err := r.Upstream.Discovery(ctx, srv)
	if err != nil {
		err = classifyReference(err, r.CredentialRetryInterval)
		if w, ok := asWaiting(err); ok {
			set(metav1.ConditionFalse, w.reason, w.err.Error())
		}
		return err
	}
	sc.endpoint = withLimits(ep, sc.limits)
	switch {
	case ep.CABundle != nil && ep.Credential == nil:
		set(metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "the CA bundle was read; no credential is needed")
	case ep.Credential == nil && srv.Spec.URLFrom == nil:
		set(metav1.ConditionTrue, mcpv1alpha1.ReasonNoCredentials, "no credential is needed")
	default:
		set(metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "every referenced Secret key was read")
	}
	return nil
}
