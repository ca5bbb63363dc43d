package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// FieldManagerToolController owns the McpTool status fields derived from
// spec and the server: names, effective class and approval, the approved
// definition and the Ready condition.
const FieldManagerToolController = "mcp-catalog-tool-controller"

// McpToolReconciler decides whether each McpTool is servable.
type McpToolReconciler struct {
	client.Client
	Now func() time.Time
}

// Reconcile computes the tool's view and applies it when it differs from
// what the status shows.
func (r *McpToolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &mcpv1alpha1.McpTool{}
	if err := r.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var srv *mcpv1alpha1.McpServer
	s := &mcpv1alpha1.McpServer{}
	switch err := r.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ServerRef.Name}, s); {
	case err == nil:
		srv = s
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}

	v := computeToolView(t, srv)
	if toolViewCurrent(t, v) {
		return ctrl.Result{}, nil
	}
	ltt := metav1.NewTime(r.now().Truncate(time.Second))
	if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil && c.Status == v.Ready {
		ltt = c.LastTransitionTime
	}
	status := mcpac.McpToolStatus().
		WithObservedGeneration(t.Generation).
		WithLocalName(v.LocalName).
		WithGroup(v.Group).
		WithEffectiveDataClass(v.EffectiveDataClass).
		WithEffectiveApprovalRequired(v.EffectiveApprovalRequired).
		WithEffect(mcpv1alpha1.EffectNonIdempotentWrite).
		WithRequiresAdmin(true).
		WithConditions(metav1ac.Condition().
			WithType(mcpv1alpha1.ConditionReady).
			WithStatus(v.Ready).
			WithReason(v.Reason).
			WithMessage(v.Message).
			WithObservedGeneration(t.Generation).
			WithLastTransitionTime(ltt))
	if v.EnabledDefinitionHash != "" {
		status.WithEnabledDefinitionHash(v.EnabledDefinitionHash)
	}
	if err := r.Status().Apply(ctx, mcpac.McpTool(t.Name, t.Namespace).WithStatus(status),
		client.FieldOwner(FieldManagerToolController), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("applying McpTool status: %w", err)
	}
	return ctrl.Result{}, nil
}

func (r *McpToolReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the controller. It relies on the McpTool index
// by server that McpServerReconciler registers.
func (r *McpToolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcptool").
		For(&mcpv1alpha1.McpTool{}).
		Watches(&mcpv1alpha1.McpServer{}, handler.EnqueueRequestsFromMapFunc(r.serverToTools), builder.WithPredicates(serverDeclarationChanged{})).
		Complete(r)
}

func (r *McpToolReconciler) serverToTools(ctx context.Context, o client.Object) []reconcile.Request {
	var tools mcpv1alpha1.McpToolList
	if err := r.List(ctx, &tools, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexToolServer: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the tools of a server")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(tools.Items))
	for _, t := range tools.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
	}
	return reqs
}

// serverDeclarationChanged passes server events that can change a tool's
// view: creation, deletion, and updates of the data class, approval or
// Ready status. A probe that only refreshes the contact time passes nothing.
type serverDeclarationChanged struct{ predicate.Funcs }

func (serverDeclarationChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*mcpv1alpha1.McpServer)
	n, ok2 := e.ObjectNew.(*mcpv1alpha1.McpServer)
	if !ok1 || !ok2 {
		return false
	}
	if o.Spec.DataClass != n.Spec.DataClass {
		return true
	}
	oa, na := o.Spec.ApprovalRequired, n.Spec.ApprovalRequired
	if (oa == nil) != (na == nil) || (oa != nil && *oa != *na) {
		return true
	}
	return meta.IsStatusConditionTrue(o.Status.Conditions, mcpv1alpha1.ConditionReady) !=
		meta.IsStatusConditionTrue(n.Status.Conditions, mcpv1alpha1.ConditionReady)
}
func (serverDeclarationChanged) Create(event.CreateEvent) bool   { return true }
func (serverDeclarationChanged) Delete(event.DeleteEvent) bool   { return true }
func (serverDeclarationChanged) Generic(event.GenericEvent) bool { return false }
