package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// fieldManagerFeatureStatus names the status writes of
// McpFeatureReconciler: Ready and observedGeneration of McpPrompts and
// McpResources. The import writes the rest of their status.
const fieldManagerFeatureStatus = "mcp-catalog-feature-status"

// McpFeatureReconciler keeps the Ready condition and observedGeneration of
// McpPrompts and McpResources (docs/adr/065-prompts-and-resources.md), so
// that kubectl, kstatus and Argo CD read whether each is servable. The
// gateway decides from spec and the imported definition at every request,
// never from this condition. Both kinds are reconciled by one type, set
// up once per kind.
type McpFeatureReconciler struct {
	client.Client
	// Selector, if set, limits the objects this instance reconciles.
	Selector labels.Selector
	// Clock is the reconciler's clock; nil means the real one.
	Clock clock.PassiveClock
	// prompts says which kind this instance reconciles.
	prompts bool
}

// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpprompts;mcpresources,verbs=get;list;watch
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpprompts/status;mcpresources/status,verbs=get;update;patch

// Reconcile sets Ready and observedGeneration, and writes status only when
// it changed, guarded by the resourceVersion read, so that it never
// overwrites what an import wrote meanwhile.
func (r *McpFeatureReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj client.Object
	var state featureReadiness
	var conds *[]metav1.Condition
	var observed *int64
	if r.prompts {
		p := &mcpv1alpha1.McpPrompt{}
		if err := r.Get(ctx, req.NamespacedName, p); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		obj, conds, observed = p, &p.Status.Conditions, &p.Status.ObservedGeneration
		state = featureReadiness{enabled: p.Spec.Enabled, approved: p.Spec.ApprovedDefinitionHash, current: p.Status.DefinitionHash,
			imported: meta.FindStatusCondition(p.Status.Conditions, mcpv1alpha1.ConditionImported), textValid: p.ReviewedTextValid()}
	} else {
		res := &mcpv1alpha1.McpResource{}
		if err := r.Get(ctx, req.NamespacedName, res); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		obj, conds, observed = res, &res.Status.Conditions, &res.Status.ObservedGeneration
		state = featureReadiness{enabled: res.Spec.Enabled, approved: res.Spec.ApprovedDefinitionHash, current: res.Status.DefinitionHash,
			imported: meta.FindStatusCondition(res.Status.Conditions, mcpv1alpha1.ConditionImported), textValid: true}
	}
	before := obj.DeepCopyObject().(client.Object)
	status, reason, message := state.ready()
	setCondition(conds, obj.GetGeneration(), mcpv1alpha1.ConditionReady, status, reason, message, realOr(r.Clock).Now())
	*observed = obj.GetGeneration()
	_, err := patchStatus(ctx, r.Client, before, obj, statusWrite{owner: fieldManagerFeatureStatus, guarded: true})
	return ctrl.Result{}, err
}

// featureReadiness is what Ready is computed from.
type featureReadiness struct {
	enabled           bool
	approved, current string
	imported          *metav1.Condition
	textValid         bool
}

// ready is the Ready condition of an McpPrompt or McpResource: True only
// while it is enabled, its current definition is the approved one, the
// last import found it, and its reviewed text can be honoured. The first
// reason that applies wins.
func (s featureReadiness) ready() (metav1.ConditionStatus, string, string) {
	switch {
	case s.imported == nil || s.current == "":
		return metav1.ConditionFalse, mcpv1alpha1.ReasonNotImported, "no import has recorded its definition yet"
	case !s.enabled:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled, "spec.enabled is false"
	case s.approved == "":
		return metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved, "no definition is approved: set spec.approvedDefinitionHash to the status.definitionHash you reviewed"
	case s.approved != s.current:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged, "the definition changed since it was approved (see status.drift)"
	case s.imported.Status != metav1.ConditionTrue:
		return metav1.ConditionFalse, s.imported.Reason, "the server no longer offers it"
	case !s.textValid:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonReviewedTextInvalid, "spec.reviewedText describes an argument the prompt does not have"
	}
	return metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "served by the gateway to callers RBAC and their data-class ceiling allow"
}

// SetupFeatureControllers sets up the reconciler of McpPrompts and the
// one of McpResources. Every change of an object, its status included,
// is reconciled: an import's new definition changes Ready, and a
// reconcile that changes nothing writes nothing.
func SetupFeatureControllers(mgr ctrl.Manager, sel labels.Selector) error {
	prompts := &McpFeatureReconciler{Client: mgr.GetClient(), Selector: sel, prompts: true}
	if err := ctrl.NewControllerManagedBy(mgr).Named("mcpprompt").
		For(&mcpv1alpha1.McpPrompt{}, builder.WithPredicates(selected(sel))).Complete(prompts); err != nil {
		return err
	}
	resources := &McpFeatureReconciler{Client: mgr.GetClient(), Selector: sel}
	return ctrl.NewControllerManagedBy(mgr).Named("mcpresource").
		For(&mcpv1alpha1.McpResource{}, builder.WithPredicates(selected(sel))).Complete(resources)
}
