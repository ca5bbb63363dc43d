package controller

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// admitImport takes the bytes an import may hold in memory until its
// catalog is applied (its ceiling, as capped) from the process's catalog
// budget, and returns the function that gives them back. When the budget
// cannot spare them, the import waits for them without holding a worker:
// the server is woken when bytes are given back (catalogWaiters), or at
// the latest after CatalogBudgetRetry, and says so in its status.
func (r *McpServerReconciler) admitImport(sc *serverScope) (release func(), admitted bool) {
	ns, reserved := sc.key.Namespace, sc.limits.MaxCatalogBytes
	if !r.CatalogBudget.TryAcquire(ns, reserved) {
		r.waiters.wait(sc.key, reserved)
		all, mine := r.CatalogBudget.Held(ns)
		sc.deferred = &waitingError{after: r.CatalogBudgetRetry, reason: mcpv1alpha1.ReasonWaitingForCatalogBudget,
			err: fmt.Errorf("the import waits for %d bytes of the controller's catalog budget: %d of %d are taken, %d of them by this namespace, which may hold %d",
				reserved, all, r.CatalogBudget.Total(), mine, r.CatalogBudget.PerTenant())}
		return nil, false
	}
	r.waiters.done(sc.key)
	return func() {
		r.CatalogBudget.Release(ns, reserved)
		r.waiters.released(reserved)
	}, true
}

// catalogWaiters are the servers whose import waits for bytes of the
// catalog budget, in the order they began to wait. Bytes given back wake
// the first waiters whose imports they could let in, so a waiting import
// starts as soon as it may rather than at its next retry, and a release
// does not wake every waiter at once. A waiter woken in vain waits again.
type catalogWaiters struct {
	mu    sync.Mutex
	order []types.NamespacedName
	want  map[types.NamespacedName]int64
	// wake is watched by the McpServer controller.
	wake chan event.GenericEvent
}

func newCatalogWaiters() *catalogWaiters {
	return &catalogWaiters{want: map[types.NamespacedName]int64{}, wake: make(chan event.GenericEvent, 1024)}
}

// wait records that key waits for n bytes.
func (w *catalogWaiters) wait(key types.NamespacedName, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.want[key]; !ok {
		w.order = append(w.order, key)
	}
	w.want[key] = n
}

// done drops key, whose import went ahead or whose server is gone.
func (w *catalogWaiters) done(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.want[key]; !ok {
		return
	}
	delete(w.want, key)
	for i, k := range w.order {
		if k == key {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
}

// released wakes the first waiters that n bytes given back could let in.
// A full wake channel drops the event: the waiter's own retry still comes.
func (w *catalogWaiters) released(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n > 0 && len(w.order) > 0 {
		key := w.order[0]
		w.order = w.order[1:]
		n -= w.want[key]
		delete(w.want, key)
		select {
		case w.wake <- event.GenericEvent{Object: &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
		default:
		}
	}
}
