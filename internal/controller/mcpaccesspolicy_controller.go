package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
)

// McpAccessPolicyReconciler reports whether an access policy is valid
// (governance.InvalidPolicy): it sets Ready, Stalled and observedGeneration
// and nothing else. The gateway reads policies itself, on every request.
type McpAccessPolicyReconciler struct {
	client.Client
	// Selector, if set, limits the policies this instance reconciles to
	// those it selects, so that of several shards exactly one writes each
	// policy's status.
	Selector labels.Selector
	// Clock is the reconciler's clock; nil means the real one.
	Clock clock.PassiveClock
}

// Reconcile sets Ready and Stalled, and writes status only when it changed.
// An invalid spec stalls: only a change to it cures it, and that change
// re-triggers, so nothing is requeued.
func (r *McpAccessPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logging.FromContext(ctx, logging.Policies)
	p := &mcpv1alpha1.McpAccessPolicy{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := p.DeepCopy()
	problem := governance.InvalidPolicy(&p.Spec)
	setPolicyConditions(p, problem, realOr(r.Clock).Now())
	p.Status.ObservedGeneration = p.Generation
	written, err := patchStatus(ctx, r.Client, before, p, statusWrite{owner: FieldManagerStatus})
	if err != nil {
		return ctrl.Result{}, err
	}
	log.V(logging.Debug).Info("reconciled", "generation", p.Generation, "valid", problem == "", "statusWritten", written)
	return ctrl.Result{}, nil
}

// setPolicyConditions sets a policy's Ready and Stalled from what is wrong
// with its spec ("" when nothing is).
func setPolicyConditions(p *mcpv1alpha1.McpAccessPolicy, problem string, now time.Time) {
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&p.Status.Conditions, p.Generation, typ, status, reason, msg, now)
	}
	if problem != "" {
		set(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec, problem)
		set(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec, problem)
		return
	}
	set(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "the spec is valid")
	meta.RemoveStatusCondition(&p.Status.Conditions, mcpv1alpha1.ConditionStalled)
}

// SetupWithManager registers the controller.
func (r *McpAccessPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcpaccesspolicy").
		For(&mcpv1alpha1.McpAccessPolicy{}, builder.WithPredicates(specOrShardChanged, selected(r.Selector))).
		Complete(r)
}
