package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// McpToolReconciler keeps each McpTool's view (names, effective class and
// approval, Ready) current with its spec and its server, through the one
// writer of McpTool status, and removes what an McpServer's deletion leaves
// behind that nobody decided anything about.
type McpToolReconciler struct {
	client.Client
	// APIReader confirms, before a tool is deleted, that its server is
	// really gone and not merely absent from a cache that lags a
	// re-creation; and reads a tool live when a status write conflicts.
	APIReader client.Reader
	// Clock is the reconciler's clock; nil means the real one.
	Clock clock.PassiveClock
	// Views holds the compiled rules of each version of each tool, shared
	// with the McpServer controller so that a namespace's rules count
	// once against its bound (toolview.MaxNamespaceWeight); nil means a
	// cache of its own.
	Views *toolview.Cache

	tools *toolStatus
}

// Reconcile releases the tool from a server owner reference, collects it
// when its server is gone and nobody decided anything about it, and
// otherwise brings its view up to date.
func (r *McpToolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logging.FromContext(ctx, logging.ToolStatus).V(logging.Debug)
	t := &mcpv1alpha1.McpTool{}
	if err := r.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			// Its rules no longer count against its namespace.
			r.tools.views.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.releaseFromServer(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	var srv *mcpv1alpha1.McpServer
	s := &mcpv1alpha1.McpServer{}
	switch err := r.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ServerRef.Name}, s); {
	case err == nil:
		srv = s
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	if srv == nil && governance.Collectable(t) {
		done, err := r.collect(ctx, t)
		if done {
			log.Info("deleted the McpTool of a deleted server", "server", t.Spec.ServerRef.Name)
		}
		if done || err != nil {
			return ctrl.Result{}, err
		}
	}
	if awaitingImport(t) {
		// The import that created it writes its first status.
		return ctrl.Result{}, nil
	}
	w, err := r.tools.writeView(ctx, t, srv)
	if err != nil {
		log.Info("reconciled McpTool", "generation", t.Generation, "error", err.Error())
		return ctrl.Result{}, err
	}
	if w.tool != nil {
		if c := meta.FindStatusCondition(w.tool.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
			log.Info("reconciled McpTool", "generation", t.Generation, "statusWritten", w.written, "ready", c.Status, "reason", c.Reason)
		}
	}
	return ctrl.Result{}, nil
}

// isServerOwner reports whether an owner reference names an McpServer.
func isServerOwner(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == mcpv1alpha1.GroupVersion.Group && ref.Kind == "McpServer"
}

// releaseFromServer removes owner references to an McpServer, which earlier
// versions of the importer set: with one, the garbage collector deletes the
// tool, enabled or not, whenever its server is deleted. The patch is
// guarded by the resource version, so it removes nothing someone added
// meanwhile.
func (r *McpToolReconciler) releaseFromServer(ctx context.Context, t *mcpv1alpha1.McpTool) error {
	keep := make([]metav1.OwnerReference, 0, len(t.OwnerReferences))
	for _, ref := range t.OwnerReferences {
		if !isServerOwner(ref) {
			keep = append(keep, ref)
		}
	}
	if len(keep) == len(t.OwnerReferences) {
		return nil
	}
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	t.OwnerReferences = keep
	err := r.Patch(ctx, t, patch, client.FieldOwner(governance.FieldManagerToolController))
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// On a conflict the newer version brings the tool here again.
		return nil
	}
	return fmt.Errorf("removing the McpServer owner reference of McpTool %s: %w", t.Name, err)
}

// collect deletes a collectable tool once a live read confirms its server
// does not exist. It reports whether the tool was deleted (or is already
// gone). The preconditions make the delete fail, harmlessly, when someone
// enabled or declared the tool since it was read.
func (r *McpToolReconciler) collect(ctx context.Context, t *mcpv1alpha1.McpTool) (bool, error) {
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ServerRef.Name}, &mcpv1alpha1.McpServer{})
	switch {
	case err == nil:
		// The server is back; the watch on servers brings the tool here
		// again once the cache has seen it.
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading McpServer %s: %w", t.Spec.ServerRef.Name, err)
	}
	uid, rv := t.UID, t.ResourceVersion
	err = r.Delete(ctx, t, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// Changed since it was read: the next reconcile decides again.
		return false, nil
	}
	return false, fmt.Errorf("deleting McpTool %s of a deleted server: %w", t.Name, err)
}

// SetupWithManager registers the controller. The field index it maps
// servers to tools by is registered by RegisterIndexes.
func (r *McpToolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.tools = &toolStatus{client: r.Client, live: r.APIReader, clock: realOr(r.Clock), views: viewsOr(r.Views)}
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcptool").
		For(&mcpv1alpha1.McpTool{}).
		Watches(&mcpv1alpha1.McpServer{}, handler.EnqueueRequestsFromMapFunc(byIndex[mcpv1alpha1.McpToolList](r.Client, indexToolServer, "the tools of a server")), builder.WithPredicates(serverDeclarationChanged{})).
		Complete(r)
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
