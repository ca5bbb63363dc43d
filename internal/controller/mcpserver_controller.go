package controller

import (
	"cmp"
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/fairqueue"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/schedule"
	"github.com/mcp-catalog/operator/internal/tenancy"
	"github.com/mcp-catalog/operator/internal/toolview"
	"github.com/mcp-catalog/operator/internal/upstream"
)

// McpServerReconciler imports each McpServer's catalog into McpTools and
// probes its health. It is the one writer of McpServer status.
type McpServerReconciler struct {
	client.Client
	// APIReader reads the McpServer itself live (docs/adr/006), and an
	// McpTool before its definition is replaced.
	APIReader client.Reader
	// Upstream turns a server into the endpoint imports and probes use,
	// with its credential resolved.
	Upstream *upstream.Endpoints
	MCP      *mcp.Client
	Recorder events.EventRecorder
	// MaxConcurrent bounds how many servers are imported or probed at once;
	// a hung server holds one slot for at most its own budget.
	MaxConcurrent int
	// MaxConcurrentPerNamespace bounds how many of those one namespace's
	// servers hold at once; among namespaces with work waiting, the one
	// holding fewest goes first (package fairqueue). 0 means
	// fairqueue.DefaultMaxPerTenant(MaxConcurrent).
	MaxConcurrentPerNamespace int
	// Caps are the administrator's ceilings on what a spec may ask for.
	// Catalog ceilings are also capped at what one namespace may hold of
	// CatalogBudget.
	Caps tenancy.Caps
	// CatalogBudget is the process's budget of catalog bytes in flight;
	// nil means one of tenancy.DefaultInFlight.
	CatalogBudget *tenancy.Budget
	// CatalogBudgetRetry is how soon an import waiting for CatalogBudget is
	// tried again; 0 means DefaultCatalogBudgetRetry.
	CatalogBudgetRetry time.Duration
	// Storage bounds what the imports of one namespace's servers store.
	Storage tenancy.StorageLimits
	// ApplyConcurrency bounds the parallel McpTool writes of one import.
	ApplyConcurrency int
	// CredentialRetryInterval is how soon a server whose Secret (or Secret
	// key) is missing is reconciled again; 0 means
	// DefaultCredentialRetryInterval.
	CredentialRetryInterval time.Duration
	// HealthInterval, when set and positive for a server, is the
	// health-check interval used for it in place of its
	// spec.healthCheck.interval; for tests only.
	HealthInterval func(*mcpv1alpha1.McpServer) time.Duration
	// Schedule keeps when each server's next probe and import retry are
	// due; nil means a new one. Tests set one to fix the jitter.
	Schedule *schedule.Schedule
	// Clock is the reconciler's clock; nil means the real one.
	Clock clock.PassiveClock
	// Views holds the compiled rules of each version of each tool, shared
	// with the McpTool controller; nil means a cache of its own.
	Views *toolview.Cache
	// Listeners, when set, keeps a stream open to every Ready server that
	// announces changes of its tools, and imports on a change
	// (docs/adr/028).
	Listeners *ToolListeners
	// SharingTrust is whose labels a sharing selector takes; the server
	// gets a SharingWarning condition for a selector it refuses, and for
	// {}.
	SharingTrust governance.SelectorTrust

	tools *toolStatus
	// stored is what each server's admitted imports store, when Storage
	// bounds anything.
	stored *tenancy.Ledger
	// storedFeatures is what each server's admitted imports store of
	// McpPrompts and McpResources, when Storage bounds them.
	storedFeatures *tenancy.Ledger
	// waiters are the servers whose import waits for catalog budget.
	waiters *catalogWaiters
}

// serverScope carries what earlier steps of one reconcile learnt to later
// ones, and what the reconcile's end acts on.
type serverScope struct {
	server *mcpv1alpha1.McpServer
	key    types.NamespacedName
	now    time.Time
	// plan is what the schedule says is due, read once at the start.
	plan schedule.Plan
	// limits are what imports and probes run under (reconcileLimits).
	limits tenancy.Limits
	// endpoint is where imports and probes go, credential resolved.
	endpoint mcp.Endpoint
	// importChecked and probeChecked are set when the import and probe
	// steps decided whether they were due; imported when an import ran.
	importChecked, probeChecked, imported bool
	// outcome is what the schedule counts the next probe and import retry
	// from, recorded once at the end.
	outcome schedule.Outcome
	// healthInterval is the server's health-check interval, before the
	// administrator's shortest (limits): use interval().
	healthInterval time.Duration
	// importInterval is the server's import interval; nextImport is when
	// the next scheduled import is due (zero: none).
	importInterval time.Duration
	nextImport     time.Time
	// events are emitted at the end, once status is settled.
	events []pendingEvent
	// deferred is set when a due import was put off without holding a
	// worker (its catalog budget was not free); the reconcile waits.
	deferred *waitingError
}

// interval is the health interval the server is probed at: its spec's,
// within the administrator's shortest.
func (s *serverScope) interval() time.Duration {
	if s.limits.HealthInterval > 0 {
		return s.limits.HealthInterval
	}
	if s.healthInterval > 0 {
		return s.healthInterval
	}
	return healthInterval(s.server)
}

// Event vocabulary: the reasons of the Events this package emits that are
// not condition reasons, and their actions.
const (
	EventImportFailed    = "ImportFailed"
	EventImportSucceeded = "ImportSucceeded"
	// EventDefinitionDrift is the Warning an McpTool gets when the
	// importer records a changed definition, or a first one with findings
	// (status.drift).
	EventDefinitionDrift = "DefinitionDrift"

	actionImport = "Import"
	actionProbe  = "Probe"
	eventNormal  = "Normal"
	eventWarning = "Warning"
)

// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcptools,verbs=create;update;patch;delete

// Reconcile runs credentials, import, probe and tool counts in order,
// stopping at the first step that cannot go on, and at its end patches
// status once (only if it changed), records the outcome in the schedule
// and emits the Events the steps asked for.
func (r *McpServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	srv, err := r.readServer(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !srv.DeletionTimestamp.IsZero() {
		// The McpTools outlive their server: enabled and declared ones stay
		// (not servable) until it returns, and the tool controller removes
		// the rest.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	before := srv.DeepCopy()
	now := realOr(r.Clock).Now()
	sc := &serverScope{server: srv, key: req.NamespacedName, now: now, plan: r.Schedule.Plan(req.NamespacedName, now),
		healthInterval: r.healthInterval(srv)}
	defer func() {
		result, retErr = r.finish(ctx, sc, before, retErr)
	}()

	if srv.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	var stalled error
	for _, step := range []func(context.Context, *serverScope) error{
		r.reconcileLimits,
		r.reconcileCredentials,
		r.reconcileImport,
		r.reconcileProbe,
		r.reconcileCounts,
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
	if stalled == nil && sc.deferred != nil {
		return ctrl.Result{}, sc.deferred
	}
	return ctrl.Result{}, stalled
}

// finish ends a reconcile: it summarises the conditions, writes status,
// records the outcome in the schedule (a stalled server is forgotten, so
// that whatever re-triggers it finds everything due at once), emits the
// Events and logs the result. When the status write fails, none of that
// happens: the write's error is returned, whatever the reconcile's own
// outcome, and the retry decides everything again.
func (r *McpServerReconciler) finish(ctx context.Context, sc *serverScope, before *mcpv1alpha1.McpServer, err error) (ctrl.Result, error) {
	srv := sc.server
	setSharingWarning(srv, r.SharingTrust, sc.now)
	summarize(srv, err, sc.now)
	if d := sc.deferred; d != nil && errors.Is(err, d) {
		// The import was put off, not failed: work in progress.
		setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, d.reason, d.err.Error(), sc.now)
	}
	_, stalled := asStalling(err)
	if err == nil || stalled {
		// A stall is a decided outcome of this generation.
		srv.Status.ObservedGeneration = srv.Generation
	}
	log := logging.FromContext(ctx, logging.Controllers).V(logging.Debug)
	written, werr := patchStatus(ctx, r.Client, before, srv, statusWrite{owner: FieldManagerStatus})
	if werr != nil {
		logResult(log, srv, false, ctrl.Result{}, werr)
		return ctrl.Result{}, werr
	}
	r.Schedule.SawVersion(sc.key, srv.ResourceVersion)
	if r.Listeners != nil {
		r.Listeners.Observe(sc.key, sc.endpoint, r.Listeners.wanted(srv, sc.endpoint, stalled))
	}
	for _, e := range sc.events {
		r.Recorder.Eventf(srv, nil, e.kind, e.reason, e.action, e.note, e.args...)
	}

	var next time.Time
	if stalled {
		r.Schedule.Forget(sc.key)
	} else if !srv.Spec.Suspend {
		sc.outcome.Now = realOr(r.Clock).Now()
		sc.outcome.ImportRequestsSeen = sc.plan.ImportRequests
		nextProbe, nextRetry := r.Schedule.Record(sc.key, sc.outcome)
		if sc.probeChecked {
			next = earliest(next, nextProbe)
		}
		if sc.importChecked {
			next = earliest(next, sc.nextImport)
			if !meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced) {
				next = earliest(next, nextRetry)
			}
		}
	}
	result, err := resultOf(err, next, realOr(r.Clock).Now())
	logResult(log, srv, written, result, err)
	return result, err
}

// resultOf turns the reconcile's error and the next time something is due
// into what controller-runtime acts on: waiting and stalling are not errors
// to it.
func resultOf(err error, next, now time.Time) (ctrl.Result, error) {
	if w, ok := asWaiting(err); ok {
		next = earliest(next, now.Add(w.after))
		err = nil
	}
	if _, ok := asStalling(err); ok {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
}

// logResult logs a reconcile's outcome at debug level, with the keys a
// person follows one server by.
func logResult(log logr.Logger, srv *mcpv1alpha1.McpServer, written bool, result ctrl.Result, err error) {
	ready := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady)
	kv := []any{"generation", srv.Generation, "statusWritten", written, "requeueAfter", result.RequeueAfter}
	if ready != nil {
		kv = append(kv, "ready", ready.Status, "reason", ready.Reason)
	}
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	log.Info("reconciled McpServer", kv...)
}

// earliest is the earlier of two times, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// forget drops a deleted server's schedule and metrics.
func (r *McpServerReconciler) forget(key types.NamespacedName) {
	r.Schedule.Forget(key)
	if r.stored != nil {
		r.stored.Forget(key)
	}
	if r.storedFeatures != nil {
		r.storedFeatures.Forget(key)
	}
	if r.waiters != nil {
		r.waiters.done(key)
	}
	forgetServerGauges(key.Namespace, key.Name)
	if r.Listeners != nil {
		r.Listeners.Stop(key)
	}
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
	if rv := r.Schedule.KnownVersion(key); rv != "" {
		cached := &mcpv1alpha1.McpServer{}
		if err := r.Get(ctx, key, cached); err == nil && cached.ResourceVersion == rv {
			return cached, nil
		}
	}
	srv := &mcpv1alpha1.McpServer{}
	if err := r.APIReader.Get(ctx, key, srv); err != nil {
		return nil, err
	}
	r.Schedule.SawVersion(key, srv.ResourceVersion)
	return srv, nil
}

func (r *McpServerReconciler) healthInterval(srv *mcpv1alpha1.McpServer) time.Duration {
	if r.HealthInterval != nil {
		if d := r.HealthInterval(srv); d > 0 {
			return d
		}
	}
	return healthInterval(srv)
}

// SetupWithManager registers the controller. The field indexes it lists by
// are registered by RegisterIndexes.
func (r *McpServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Schedule == nil {
		r.Schedule = schedule.New()
	}
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = DefaultMaxConcurrentServers
	}
	if r.ApplyConcurrency <= 0 {
		r.ApplyConcurrency = DefaultApplyConcurrency
	}
	if r.CredentialRetryInterval <= 0 {
		r.CredentialRetryInterval = DefaultCredentialRetryInterval
	}
	if r.MaxConcurrentPerNamespace <= 0 {
		r.MaxConcurrentPerNamespace = fairqueue.DefaultMaxPerTenant(r.MaxConcurrent)
	}
	if r.CatalogBudget == nil {
		r.CatalogBudget = tenancy.NewBudget(tenancy.DefaultInFlight(debug.SetMemoryLimit(-1), r.MaxConcurrent, mcp.DefaultMaxCatalogBytes))
	}
	if r.CatalogBudgetRetry <= 0 {
		r.CatalogBudgetRetry = DefaultCatalogBudgetRetry
	}
	// An import takes its catalog ceiling from the budget, so no ceiling
	// may exceed what one namespace may hold of it.
	if per := r.CatalogBudget.PerTenant(); r.Caps.MaxCatalogBytes <= 0 || r.Caps.MaxCatalogBytes > per {
		r.Caps.MaxCatalogBytes = per
	}
	if r.Storage.Tools > 0 || r.Storage.DefinitionBytes > 0 {
		r.stored = tenancy.NewLedger()
	}
	if r.Storage.PromptsAndResources > 0 {
		r.storedFeatures = tenancy.NewLedger()
	}
	r.waiters = newCatalogWaiters()
	changed := make(chan event.GenericEvent, listenQueue)
	if r.Listeners != nil {
		r.Listeners.init()
		enqueue := func(ctx context.Context, key types.NamespacedName) {
			srv := &mcpv1alpha1.McpServer{}
			srv.Namespace, srv.Name = key.Namespace, key.Name
			select {
			case changed <- event.GenericEvent{Object: srv}:
			case <-ctx.Done():
			}
		}
		r.Listeners.request = func(ctx context.Context, key types.NamespacedName) {
			r.Schedule.RequestImport(key)
			enqueue(ctx, key)
		}
		r.Listeners.refresh = enqueue
		if err := mgr.Add(r.Listeners); err != nil {
			return err
		}
	}
	perNamespace := r.MaxConcurrentPerNamespace
	r.tools = &toolStatus{client: r.Client, live: r.APIReader, clock: realOr(r.Clock), views: viewsOr(r.Views)}
	return ctrl.NewControllerManagedBy(mgr).
		Named("mcpserver").
		For(&mcpv1alpha1.McpServer{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			annotationChanged(mcpv1alpha1.AnnotationRequestedImportAt, mcpv1alpha1.AnnotationRequestedProbeAt),
		))).
		// A tool enabled or disabled changes its server's counts.
		Watches(&mcpv1alpha1.McpTool{}, handler.EnqueueRequestsFromMapFunc(toolToServer), builder.WithPredicates(enabledChanged{})).
		// A delegated server's credentials depend on its profile's readiness.
		// An import waiting for catalog budget starts when bytes are given
		// back.
		WatchesRawSource(source.Channel(r.waiters.wake, &handler.EnqueueRequestForObject{})).
		// A server announced that its tools changed (ToolListeners).
		WatchesRawSource(source.Channel(changed, &handler.EnqueueRequestForObject{})).
		Watches(&mcpv1alpha1.McpDelegationProfile{}, handler.EnqueueRequestsFromMapFunc(byIndex[mcpv1alpha1.McpServerList](r.Client, indexServerProfile, "the servers of a delegation profile")), builder.WithPredicates(readyChanged{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: r.MaxConcurrent,
			// A server that answers slowly holds its worker for its whole
			// budget: workers are shared fairly between namespaces.
			NewQueue: func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
				return fairqueue.NewRateLimiting(name, rl, requestNamespace, perNamespace)
			},
		}).
		Complete(r)
}

// requestNamespace is the tenant a request's work belongs to.
func requestNamespace(r reconcile.Request) string { return r.Namespace }

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
