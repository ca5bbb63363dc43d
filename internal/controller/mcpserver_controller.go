package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/upstream"
)

// FieldManagerImporter owns what imports write: an McpTool's identity and
// label, and the definition fields and Imported condition of its status.
const FieldManagerImporter = "mcp-catalog-importer"

// McpServerReconciler imports each McpServer's catalog into McpTools and
// probes its health.
type McpServerReconciler struct {
	client.Client
	// APIReader reads the McpServer itself live (docs/adr/006).
	APIReader client.Reader
	// Upstream turns a server into the endpoint imports and probes use,
	// with its credential resolved.
	Upstream *upstream.Endpoints
	MCP      *mcp.Client
	Recorder events.EventRecorder
	// MaxConcurrent bounds how many servers are imported or probed at once;
	// a hung server holds one slot for at most its own budget.
	MaxConcurrent int
	// ApplyConcurrency bounds the parallel McpTool writes of one import.
	ApplyConcurrency int
	// CredentialRetryInterval is how soon a server whose Secret (or Secret
	// key) is missing is reconciled again; 0 means
	// DefaultCredentialRetryInterval.
	CredentialRetryInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	sched *schedule
}

// serverScope carries what earlier steps of one reconcile learnt to later
// ones.
type serverScope struct {
	server *mcpv1alpha1.McpServer
	key    types.NamespacedName
	now    time.Time
	// endpoint is where imports and probes go, credential resolved.
	endpoint mcp.Endpoint
	// requeueAt is the earliest time a step wants to run again.
	requeueAt time.Time
}

func (s *serverScope) requeueNoLaterThan(t time.Time) {
	if t.IsZero() {
		return
	}
	if s.requeueAt.IsZero() || t.Before(s.requeueAt) {
		s.requeueAt = t
	}
}

// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcptools,verbs=create;update;patch;delete

// Reconcile runs credentials, import and probe in order, stopping at the
// first step that cannot go on, and patches status once, only if it changed.
func (r *McpServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	srv, err := r.readServer(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.sched.forget(req.NamespacedName)
			forgetToolGauges(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !srv.DeletionTimestamp.IsZero() {
		// The McpTools outlive their server: enabled and declared ones stay
		// (not servable) until it returns, and the tool controller removes
		// the rest.
		r.sched.forget(req.NamespacedName)
		forgetToolGauges(req.Namespace, req.Name)
		return ctrl.Result{}, nil
	}

	before := srv.DeepCopy()
	sc := &serverScope{server: srv, key: req.NamespacedName, now: r.now()}
	defer func() {
		summarize(srv, retErr)
		if _, stalled := asStalling(retErr); retErr == nil || stalled {
			// A stall is a decided outcome of this generation.
			srv.Status.ObservedGeneration = srv.Generation
		}
		if err := r.patchStatus(ctx, before, srv); err != nil {
			retErr = errors.Join(retErr, err)
		} else {
			r.sched.sawVersion(sc.key, srv.ResourceVersion)
		}
		result, retErr = sc.result(retErr, r.now())
	}()

	if srv.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	var stalled error
	for _, step := range []func(context.Context, *serverScope) error{
		r.reconcileCredentials,
		r.reconcileImport,
		r.reconcileProbe,
	} {
		err := step(ctx, sc)
		if _, ok := asStalling(err); ok {
			// A stalled import does not stop the probe: it still tells
			// whether the server is up, and answers a requested probe.
			stalled = cmp.Or(stalled, err)
			continue
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	if stalled != nil {
		// Nothing is scheduled for a stalled server: whatever re-triggers
		// it (a spec change, a request annotation) finds the import and
		// the probe due at once.
		r.sched.forget(sc.key)
	}
	return ctrl.Result{}, stalled
}

// readServer reads the server from the cache when the cache holds the
// version this controller last read live or wrote, and live otherwise.
// Whether an import or a probe is due is decided from status this
// controller wrote a moment ago; the tools an import creates enqueue the
// server again at once, and a cache that has not yet seen the last status
// write would import again and patch the newer status back to the older
// one (docs/adr/006). A cached copy of exactly the version last seen has
// neither problem, and saves a live read at every scheduled probe.
func (r *McpServerReconciler) readServer(ctx context.Context, key types.NamespacedName) (*mcpv1alpha1.McpServer, error) {
	if rv := r.sched.knownVersion(key); rv != "" {
		cached := &mcpv1alpha1.McpServer{}
		if err := r.Get(ctx, key, cached); err == nil && cached.ResourceVersion == rv {
			return cached, nil
		}
	}
	srv := &mcpv1alpha1.McpServer{}
	if err := r.APIReader.Get(ctx, key, srv); err != nil {
		return nil, err
	}
	r.sched.sawVersion(key, srv.ResourceVersion)
	return srv, nil
}

// result turns the scope and the reconcile error into what controller-runtime
// acts on: waiting and stalling are not errors to it.
func (s *serverScope) result(err error, now time.Time) (ctrl.Result, error) {
	if w, ok := asWaiting(err); ok {
		s.requeueNoLaterThan(now.Add(w.after))
		err = nil
	}
	if _, ok := asStalling(err); ok {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if s.requeueAt.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(s.requeueAt.Sub(now), time.Second)}, nil
}

// reconcileCredentials resolves the endpoint the server's imports and
// probes use, with the Secret they present, at every reconcile, so a
// rotated Secret is used at once. A delegated server also needs its
// McpDelegationProfile to exist and be Ready, and a server with
// spec.tls.caBundleRef a usable CA bundle. It sets CredentialsResolved; a
// missing reference or an unusable bundle waits.
func (r *McpServerReconciler) reconcileCredentials(ctx context.Context, sc *serverScope) error {
	ep, err := r.Upstream.Discovery(ctx, sc.server)
	if err != nil {
		err = classifyReference(err, r.CredentialRetryInterval)
		if w, ok := asWaiting(err); ok {
			setCondition(sc.server, mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, w.reason, w.err.Error())
		}
		return err
	}
	sc.endpoint = ep
	if ep.Credential == nil && sc.server.Spec.URLFrom == nil {
		setCondition(sc.server, mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonNoCredentials, "no credential is needed")
	} else {
		setCondition(sc.server, mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "every referenced Secret key was read")
	}
	if ep.CABundle != nil && ep.Credential == nil {
		setCondition(sc.server, mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "the CA bundle was read; no credential is needed")
	}
	return nil
}

// reconcileProbe runs the health probe when it is due (or requested) and
// sets Reachable. A successful probe records the contact; a failed one
// records only the condition, and stalls when only a spec change cures it.
func (r *McpServerReconciler) reconcileProbe(ctx context.Context, sc *serverScope) error {
	srv := sc.server
	requested := pendingRequest(srv.Annotations[mcpv1alpha1.AnnotationRequestedProbeAt], srv.Status.LastHandledProbeAt)
	forced := requested != ""
	if !forced && !r.sched.probeDue(sc.key, sc.now) {
		sc.requeueNoLaterThan(r.sched.nextProbe(sc.key))
		return nil
	}
	start := time.Now()
	res, err := r.MCP.Probe(ctx, sc.endpoint)
	observeProbe(srv, time.Since(start), err)
	if forced {
		srv.Status.LastHandledProbeAt = requested
	}
	r.recordProbe(sc, res, err, r.now(), forced, !forced)
	if c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable); err != nil && c.Status == metav1.ConditionFalse {
		return classifyOperation(err, c.Reason, c.Message)
	}
	return nil
}

// recordProbe records the outcome of a handshake, from a probe or from an
// import: Reachable (with an event when it changes), the contact on success
// (in the metrics always, in status at a bounded rate unless refresh), and
// the next probe one interval later (from when it was due, for a scheduled
// probe).
func (r *McpServerReconciler) recordProbe(sc *serverScope, res *mcp.ProbeResult, err error, now time.Time, refresh, onSchedule bool) {
	srv := sc.server
	before := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
	hadCondition := before != nil
	wasReachable := hadCondition && before.Status == metav1.ConditionTrue
	if err == nil {
		observeContact(srv, now)
	}
	setReachable(srv, res, err, now, refresh)
	isReachable := meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
	if isReachable != wasReachable || !hadCondition {
		c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
		kind := "Normal"
		if !isReachable {
			kind = "Warning"
		}
		r.Recorder.Eventf(srv, nil, kind, c.Reason, "Probe", "%s", c.Message)
	}
	sc.requeueNoLaterThan(r.sched.probed(sc.key, now, healthInterval(srv), onSchedule))
}

func healthInterval(srv *mcpv1alpha1.McpServer) time.Duration {
	if hc := srv.Spec.HealthCheck.Interval; hc != nil && hc.Duration > 0 {
		return hc.Duration
	}
	return mcpv1alpha1.DefaultHealthCheckInterval
}

func (r *McpServerReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// patchStatus writes status only when it changed, so an idle reconcile and
// an unchanged probe make no write.
func (r *McpServerReconciler) patchStatus(ctx context.Context, before, after *mcpv1alpha1.McpServer) error {
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// Index names.
const (
	indexToolServer    = "spec.serverRef.name"
	indexServerProfile = "spec.auth.delegated.profileRef.name"
)

// byIndex maps an object to a request for each object of list type L in
// its namespace whose index field names it: the tools of a server, the
// servers of a delegation profile.
func byIndex[L any, PL interface {
	*L
	client.ObjectList
}](c client.Reader, field, what string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := PL(new(L))
		// Only names are read: no copy of every object is needed.
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing "+what)
			return nil
		}
		var reqs []reconcile.Request
		// Every item of a typed list is a client.Object.
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item.(client.Object))})
			return nil
		})
		return reqs
	}
}

// SetupWithManager registers the controller and the field indexes it uses.
func (r *McpServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.sched = newSchedule()
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = DefaultMaxConcurrentServers
	}
	if r.ApplyConcurrency <= 0 {
		r.ApplyConcurrency = DefaultApplyConcurrency
	}
	if r.CredentialRetryInterval <= 0 {
		r.CredentialRetryInterval = DefaultCredentialRetryInterval
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &mcpv1alpha1.McpTool{}, indexToolServer,
		func(o client.Object) []string { return []string{o.(*mcpv1alpha1.McpTool).Spec.ServerRef.Name} }); err != nil {
		return fmt.Errorf("indexing McpTools by server: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &mcpv1alpha1.McpServer{}, indexServerProfile,
		func(o client.Object) []string {
			if a := o.(*mcpv1alpha1.McpServer).Spec.Auth; a != nil && a.Delegated != nil {
				return []string{a.Delegated.ProfileRef.Name}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("indexing McpServers by delegation profile: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcpserver").
		For(&mcpv1alpha1.McpServer{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			annotationChanged(mcpv1alpha1.AnnotationRequestedImportAt, mcpv1alpha1.AnnotationRequestedProbeAt),
		))).
		// A tool enabled or disabled changes its server's counts.
		Watches(&mcpv1alpha1.McpTool{}, handler.EnqueueRequestsFromMapFunc(toolToServer), builder.WithPredicates(enabledChanged{})).
		// A delegated server's credentials depend on its profile's readiness.
		Watches(&mcpv1alpha1.McpDelegationProfile{}, handler.EnqueueRequestsFromMapFunc(byIndex[mcpv1alpha1.McpServerList](r.Client, indexServerProfile, "the servers of a delegation profile")), builder.WithPredicates(readyChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrent}).
		Complete(r)
}

// readyChanged passes creations, deletions and changes of the Ready
// condition's status.
type readyChanged struct{ predicate.Funcs }

func (readyChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*mcpv1alpha1.McpDelegationProfile)
	n, ok2 := e.ObjectNew.(*mcpv1alpha1.McpDelegationProfile)
	return ok1 && ok2 && meta.IsStatusConditionTrue(o.Status.Conditions, mcpv1alpha1.ConditionReady) !=
		meta.IsStatusConditionTrue(n.Status.Conditions, mcpv1alpha1.ConditionReady)
}
func (readyChanged) Create(event.CreateEvent) bool   { return true }
func (readyChanged) Delete(event.DeleteEvent) bool   { return true }
func (readyChanged) Generic(event.GenericEvent) bool { return false }

func toolToServer(_ context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*mcpv1alpha1.McpTool)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ServerRef.Name}}}
}

// annotationChanged passes updates that change any of the given annotations.
func annotationChanged(keys ...string) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			for _, k := range keys {
				if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
					return true
				}
			}
			return false
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// enabledChanged passes McpTool creations, deletions and changes of
// spec.enabled.
type enabledChanged struct{ predicate.Funcs }

func (enabledChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*mcpv1alpha1.McpTool)
	n, ok2 := e.ObjectNew.(*mcpv1alpha1.McpTool)
	return ok1 && ok2 && o.Spec.Enabled != n.Spec.Enabled
}
func (enabledChanged) Create(event.CreateEvent) bool   { return true }
func (enabledChanged) Delete(event.DeleteEvent) bool   { return true }
func (enabledChanged) Generic(event.GenericEvent) bool { return false }
