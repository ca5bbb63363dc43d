package controller

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/logging"
)

// McpDelegationProfileReconciler decides whether a delegation profile can be
// used: its token endpoint is an https URL and its client secret resolves.
// It never calls the token endpoint; an exchange happens per tool call. A
// CA bundle named in spec.tls.caBundleRef must be present and hold a
// certificate.
type McpDelegationProfileReconciler struct {
	client.Client
	// APIReader reads Secrets directly from the API server.
	APIReader client.Reader
	// CredentialRetryInterval is how soon a missing client secret is looked
	// for again; 0 means DefaultCredentialRetryInterval.
	CredentialRetryInterval time.Duration
	// Selector, if set, limits the profiles this instance reconciles to
	// those it selects, so that of several shards exactly one writes each
	// profile's status. Every shard still reads every profile: a server's
	// shard is not its profile's.
	Selector labels.Selector
	// Clock is the reconciler's clock; nil means the real one.
	Clock clock.PassiveClock
}

// Reconcile sets Ready, Reconciling and Stalled, and writes status only
// when it changed. An unusable token endpoint stalls (only a spec change
// cures it, and a spec change re-triggers); a client secret not there yet
// waits, and is looked for again after the retry interval, since Secrets
// are not watched.
func (r *McpDelegationProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &mcpv1alpha1.McpDelegationProfile{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := p.DeepCopy()
	result := ctrl.Result{}
	var failure error
	if err := validTokenEndpoint(p.Spec.TokenEndpoint); err != nil {
		failure = &stallingError{reason: mcpv1alpha1.ReasonInvalidSpec, err: err}
	} else if err := r.resolveReferences(ctx, p); err != nil {
		failure = classifyReference(err, r.retry())
		if _, ok := asWaiting(failure); !ok {
			return ctrl.Result{}, failure
		}
	}
	setProfileConditions(p, failure, realOr(r.Clock).Now())
	if w, ok := asWaiting(failure); ok {
		result.RequeueAfter = w.after
	}
	p.Status.ObservedGeneration = p.Generation
	written, err := patchStatus(ctx, r.Client, before, p, statusWrite{owner: FieldManagerStatus})
	if err != nil {
		return ctrl.Result{}, err
	}
	ready := meta.FindStatusCondition(p.Status.Conditions, mcpv1alpha1.ConditionReady)
	logging.FromContext(ctx, logging.Profiles).V(logging.Debug).Info("reconciled McpDelegationProfile",
		"generation", p.Generation, "statusWritten", written, "ready", ready.Status, "reason", ready.Reason, "requeueAfter", result.RequeueAfter)
	return result, nil
}

// resolveReferences reads what the profile references: the client secret
// and, when spec.tls.caBundleRef is set, the token endpoint's CA bundle.
func (r *McpDelegationProfileReconciler) resolveReferences(ctx context.Context, p *mcpv1alpha1.McpDelegationProfile) error {
	if _, err := credentials.SecretValue(ctx, r.APIReader, p.Namespace, p.Spec.ClientSecretRef); err != nil {
		return err
	}
	_, err := credentials.CABundle(ctx, r.APIReader, p.Namespace, p.Spec.TLS)
	return err
}

// setProfileConditions sets a profile's Ready, Reconciling and Stalled from
// the outcome of its checks: nil, a waitingError or a stallingError.
func setProfileConditions(p *mcpv1alpha1.McpDelegationProfile, failure error, now time.Time) {
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&p.Status.Conditions, p.Generation, typ, status, reason, msg, now)
	}
	w, waiting := asWaiting(failure)
	s, stalled := asStalling(failure)
	switch {
	case stalled:
		set(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, s.reason, s.err.Error())
		set(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, s.reason, s.err.Error())
		meta.RemoveStatusCondition(&p.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	case waiting:
		set(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, w.reason, w.err.Error())
		waitingFor := "waiting for the client secret"
		if w.reason == mcpv1alpha1.ReasonCABundleNotUsable {
			waitingFor = "waiting for the token endpoint's CA bundle"
		}
		set(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing, waitingFor)
		meta.RemoveStatusCondition(&p.Status.Conditions, mcpv1alpha1.ConditionStalled)
	default:
		set(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "the token endpoint is an https URL and the client secret resolves")
		meta.RemoveStatusCondition(&p.Status.Conditions, mcpv1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&p.Status.Conditions, mcpv1alpha1.ConditionStalled)
	}
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
		For(&mcpv1alpha1.McpDelegationProfile{}, builder.WithPredicates(specOrShardChanged, selected(r.Selector))).
		Complete(r)
}

// specOrShardChanged passes creations, deletions, spec changes (a new
// generation) and label changes: a relabelled object may have moved into
// this instance's shard, whose status nobody has written yet.
var specOrShardChanged = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})

// selected passes objects the selector selects; a nil selector passes all.
func selected(sel labels.Selector) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return sel == nil || sel.Matches(labels.Set(o.GetLabels()))
	})
}
