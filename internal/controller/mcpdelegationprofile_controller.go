package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
)

// McpDelegationProfileReconciler decides whether a delegation profile can be
// used: its token endpoint is an https URL and its client secret resolves.
// It never calls the token endpoint; an exchange happens per tool call.
type McpDelegationProfileReconciler struct {
	client.Client
	// APIReader reads Secrets directly from the API server.
	APIReader client.Reader
	// CredentialRetryInterval is how soon a missing client secret is looked
	// for again; 0 means DefaultCredentialRetryInterval.
	CredentialRetryInterval time.Duration
}

// Reconcile sets Ready, and status only when it changed.
func (r *McpDelegationProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &mcpv1alpha1.McpDelegationProfile{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := p.DeepCopy()
	result := ctrl.Result{}
	status, reason, msg := metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "the token endpoint is an https URL and the client secret resolves"
	if err := validTokenEndpoint(p.Spec.TokenEndpoint); err != nil {
		status, reason, msg = metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec, err.Error()
	} else if _, err := credentials.SecretValue(ctx, r.APIReader, p.Namespace, p.Spec.ClientSecretRef); err != nil {
		var missing *credentials.MissingError
		if !errors.As(err, &missing) {
			return ctrl.Result{}, err
		}
		status, reason, msg = metav1.ConditionFalse, missing.Reason, missing.Err.Error()
		result.RequeueAfter = r.retry()
	}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
		Type: mcpv1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: p.Generation,
	})
	p.Status.ObservedGeneration = p.Generation
	if equality.Semantic.DeepEqual(before.Status, p.Status) {
		return result, nil
	}
	if err := r.Status().Patch(ctx, p, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("patching status: %w", err)
	}
	return result, nil
}

// validTokenEndpoint repeats what the API server's CEL rules check, for
// objects stored before the rules existed.
func validTokenEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		return errors.New("spec.tokenEndpoint must be an absolute https URL without user information or fragment")
	}
	return nil
}

func (r *McpDelegationProfileReconciler) retry() time.Duration {
	if r.CredentialRetryInterval > 0 {
		return r.CredentialRetryInterval
	}
	return DefaultCredentialRetryInterval
}

// SetupWithManager registers the controller.
func (r *McpDelegationProfileReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcpdelegationprofile").
		For(&mcpv1alpha1.McpDelegationProfile{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}
