package controller

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// Namespaces are read for their labels: an owner may share a server with
// the namespaces a selector matches.
//
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpsharedservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpsharedservers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch

// McpSharedServerReconciler reports whether a consuming namespace's
// McpSharedServer is in force: it sets Ready (and Stalled for an invalid
// spec), ArgumentRulesValid while it adds argument rules, and
// observedGeneration, and nothing else. It reports; the gateway decides from the objects
// themselves on every list and call (governance.SharedWith).
type McpSharedServerReconciler struct {
	client.Client
	// Selector, if set, limits the McpSharedServers this instance
	// reconciles to those it selects (shards).
	Selector labels.Selector
	// Trust is whose labels a sharing selector takes (the administrator's
	// reserved prefix); the gateway must be given the same.
	Trust governance.SelectorTrust
	// Clock is the reconciler's clock; nil means the real one.
	Clock clock.PassiveClock

	// rules holds the compiled rules of each version of each
	// McpSharedServer in force, bounded per namespace.
	rules toolview.SharedCache
}

// Reconcile sets Ready from the spec, the owner's McpServer and the
// namespace's labels, and writes status only when it changed.
func (r *McpSharedServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logging.FromContext(ctx, logging.Controllers)
	ss := &mcpv1alpha1.McpSharedServer{}
	if err := r.Get(ctx, req.NamespacedName, ss); err != nil {
		if apierrors.IsNotFound(err) {
			r.rules.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := ss.DeepCopy()
	problem := governance.InvalidSharedServer(ss)
	shared := false
	if problem == "" {
		var err error
		if shared, err = r.shared(ctx, ss); err != nil {
			return ctrl.Result{}, err
		}
	}
	setSharedServerConditions(ss, problem, shared, realOr(r.Clock).Now())
	// A consumer's rules are compiled only while the owner shares the
	// server with it: any namespace can name any server, and compiling
	// its rules costs this process memory and CPU.
	var ruleProblems []string
	if shared {
		var err error
		if ruleProblems, err = r.rules.Problems(ss); err != nil {
			return ctrl.Result{}, err
		}
	} else {
		r.rules.Forget(req.NamespacedName)
	}
	setSharedRulesCondition(ss, shared, ruleProblems, realOr(r.Clock).Now())
	ss.Status.ObservedGeneration = ss.Generation
	written, err := patchStatus(ctx, r.Client, before, ss, statusWrite{owner: FieldManagerStatus})
	if err != nil {
		return ctrl.Result{}, err
	}
	log.V(logging.Debug).Info("reconciled McpSharedServer", "sharedServer", req.String(), "generation", ss.Generation, "shared", shared, "statusWritten", written)
	return ctrl.Result{}, nil
}

// shared reads the owner's McpServer and the consuming namespace and
// applies the sharing rule (governance.SelectorTrust.SharedWith). A
// namespace missing from the cache is unknown: no selector grants it.
func (r *McpSharedServerReconciler) shared(ctx context.Context, ss *mcpv1alpha1.McpSharedServer) (bool, error) {
	srv := &mcpv1alpha1.McpServer{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ss.Spec.Server.Namespace, Name: ss.Spec.Server.Name}, srv); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: ss.Namespace}, ns); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		ns.Labels = nil
	}
	return r.Trust.SharedWith(srv, ss.Namespace, ns.Labels), nil
}

// setSharedServerConditions sets Ready from what is wrong with the spec
// ("" when nothing is) and whether the owner shares the server. The
// messages name nothing of the owner's server but what the consumer wrote.
func setSharedServerConditions(ss *mcpv1alpha1.McpSharedServer, problem string, shared bool, now time.Time) {
	set := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&ss.Status.Conditions, ss.Generation, mcpv1alpha1.ConditionReady, status, reason, msg, now)
	}
	switch {
	case problem != "":
		set(metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec, problem)
		setCondition(&ss.Status.Conditions, ss.Generation, mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec, problem, now)
		return
	case shared:
		set(metav1.ConditionTrue, mcpv1alpha1.ReasonShared, "the server is shared with this namespace; its enabled and approved tools are offered here")
	default:
		set(metav1.ConditionFalse, mcpv1alpha1.ReasonNotShared, "no McpServer of this name is shared with this namespace")
	}
	meta.RemoveStatusCondition(&ss.Status.Conditions, mcpv1alpha1.ConditionStalled)
}

// setSharedRulesCondition sets ArgumentRulesValid while spec.argumentRules
// is set, from the problems of its rules (toolview.SharedRulesProblems,
// the function the gateway compiles them with), and removes it otherwise.
// While the server is not shared with the namespace, the rules are not
// compiled, and the condition is Unknown. A problem names the tool and the
// rule, never an argument value.
func setSharedRulesCondition(ss *mcpv1alpha1.McpSharedServer, shared bool, problems []string, now time.Time) {
	switch {
	case len(ss.Spec.ArgumentRules) == 0:
		meta.RemoveStatusCondition(&ss.Status.Conditions, mcpv1alpha1.ConditionArgumentRulesValid)
	case !shared:
		setCondition(&ss.Status.Conditions, ss.Generation, mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionUnknown, mcpv1alpha1.ReasonNotShared,
			"the rules are not compiled or checked: they are only while the server is shared with this namespace", now)
	case len(problems) > 0:
		setCondition(&ss.Status.Conditions, ss.Generation, mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid,
			clip(strings.Join(problems, "; "), maxProblemMessage)+"; these tools are not offered in this namespace until this is fixed", now)
	default:
		setCondition(&ss.Status.Conditions, ss.Generation, mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "every rule compiles; it applies after the owner's rules", now)
	}
}

// SetupWithManager registers the controller: an McpSharedServer is
// reconciled again when it changes, when its McpServer is created,
// deleted or changes spec (spec.sharing), and when its namespace's labels
// change.
func (r *McpSharedServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcpsharedserver").
		For(&mcpv1alpha1.McpSharedServer{}, builder.WithPredicates(specOrShardChanged, selected(r.Selector))).
		Watches(&mcpv1alpha1.McpServer{}, handler.EnqueueRequestsFromMapFunc(sharedServersOf(c)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(sharedServersIn(c)),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// sharedServersOf maps an McpServer to the McpSharedServers of every
// namespace that name it.
func sharedServersOf(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list mcpv1alpha1.McpSharedServerList
		if err := c.List(ctx, &list, client.MatchingFields{IndexSharedServerRef: o.GetNamespace() + "/" + o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			logging.FromContext(ctx, logging.Controllers).Error(err, "listing McpSharedServers of a server")
			return nil
		}
		return requestsOf(list.Items)
	}
}

// sharedServersIn maps a namespace to its McpSharedServers.
func sharedServersIn(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list mcpv1alpha1.McpSharedServerList
		if err := c.List(ctx, &list, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
			logging.FromContext(ctx, logging.Controllers).Error(err, "listing McpSharedServers of a namespace")
			return nil
		}
		return requestsOf(list.Items)
	}
}

func requestsOf(items []mcpv1alpha1.McpSharedServer) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(items))
	for i := range items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&items[i])})
	}
	return reqs
}
