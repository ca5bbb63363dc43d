// Package fairqueue is a work queue that shares a controller's workers
// fairly between tenants (namespaces), for controllers whose work a tenant
// can make slow: a reconcile that waits on a remote server holds its worker
// for as long as the server makes it wait.
//
// It keeps the semantics of client-go's work queue (an item is queued at
// most once, is never handed to two workers at once, and an item added
// while a worker holds it is queued again when the worker is done), and
// changes only which queued item a free worker gets:
//
//   - a tenant never holds more than MaxPerTenant workers, so with one
//     tenant's work stuck the others always have Workers-MaxPerTenant;
//   - among the tenants below that ceiling with work queued, the one
//     holding the fewest workers goes first, ties taken in turn; within a
//     tenant, items go first in, first out.
//
// A worker is never taken back: a tenant that reached the ceiling keeps
// its workers until their items are done, and gets no more until then.
package fairqueue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Queue implements workqueue.TypedInterface. Wrap it with
// workqueue.NewTypedDelayingQueueWithConfig and
// NewTypedRateLimitingQueueWithConfig (NewRateLimiting does) for a
// controller.
type Queue[T comparable] struct {
	tenant       func(T) string
	maxPerTenant int

	mu   sync.Mutex
	cond *sync.Cond
	// tenants holds each tenant's queued items in order, and its workers.
	tenants map[string]*tenantQueue[T]
	// order is the tenants in turn: ties go to the earliest, who then moves
	// to the end.
	order []string
	// queued are items waiting for a worker; processing are items a worker
	// holds; dirty are items to hand out again (queued, or added while
	// processing).
	queued, processing, dirty map[T]struct{}
	shuttingDown              bool
}

type tenantQueue[T comparable] struct {
	items []T
	held  int
}

// New returns a queue whose items belong to the tenant tenant(item) names,
// and where a tenant holds at most maxPerTenant workers at once (at least
// one).
func New[T comparable](tenant func(T) string, maxPerTenant int) *Queue[T] {
	q := &Queue[T]{
		tenant:       tenant,
		maxPerTenant: max(1, maxPerTenant),
		tenants:      map[string]*tenantQueue[T]{},
		queued:       map[T]struct{}{},
		processing:   map[T]struct{}{},
		dirty:        map[T]struct{}{},
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// NewRateLimiting is a controller's queue: the fair queue under client-go's
// delaying (AddAfter) and rate-limiting (AddRateLimited) layers.
func NewRateLimiting[T comparable](name string, rl workqueue.TypedRateLimiter[T], tenant func(T) string, maxPerTenant int) workqueue.TypedRateLimitingInterface[T] {
	return rateLimiting(name, rl, New(tenant, maxPerTenant))
}

// rateLimiting puts the delaying and rate-limiting layers over q.
func rateLimiting[T comparable](name string, rl workqueue.TypedRateLimiter[T], q *Queue[T]) workqueue.TypedRateLimitingInterface[T] {
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{
		Name:  name,
		Queue: q,
	})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[T]{
		Name:          name,
		DelayingQueue: delaying,
	})
}

// DefaultMaxPerTenant is the ceiling a pool of workers gives one tenant
// unless told otherwise: three quarters of the workers, so that a quarter
// always remains for the others, and never less than one.
func DefaultMaxPerTenant(workers int) int {
	if workers <= 1 {
		return 1
	}
	return workers - max(1, workers/4)
}

// Add queues item unless it is queued already; an item a worker holds is
// queued again once the worker is done with it.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	if _, ok := q.dirty[item]; ok {
		return
	}
	q.dirty[item] = struct{}{}
	if _, ok := q.processing[item]; ok {
		return
	}
	q.push(item)
	q.cond.Signal()
}

func (q *Queue[T]) push(item T) {
	name := q.tenant(item)
	t := q.tenants[name]
	if t == nil {
		t = &tenantQueue[T]{}
		q.tenants[name] = t
		q.order = append(q.order, name)
	}
	t.items = append(t.items, item)
	q.queued[item] = struct{}{}
}

// Len is how many items wait for a worker.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queued)
}

// Get blocks until an item may be handed out and returns it; shutdown is
// true once the queue is shutting down and has nothing left to hand out.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if i, ok := q.next(); ok {
			return q.take(i), false
		}
		if q.shuttingDown {
			var zero T
			return zero, true
		}
		q.cond.Wait()
	}
}

// next is the position in order of the tenant whose item goes next: below
// its ceiling, with items queued, holding the fewest workers, earliest in
// turn.
func (q *Queue[T]) next() (int, bool) {
	best := -1
	for i, name := range q.order {
		t := q.tenants[name]
		if len(t.items) == 0 || t.held >= q.maxPerTenant {
			continue
		}
		if best < 0 || t.held < q.tenants[q.order[best]].held {
			best = i
		}
	}
	return best, best >= 0
}

// take hands out the first item of the tenant at position i, and moves the
// tenant to the end of the turn.
func (q *Queue[T]) take(i int) T {
	name := q.order[i]
	t := q.tenants[name]
	item := t.items[0]
	var zero T
	t.items[0] = zero
	t.items = t.items[1:]
	t.held++
	q.order = append(append(q.order[:i:i], q.order[i+1:]...), name)
	delete(q.queued, item)
	delete(q.dirty, item)
	q.processing[item] = struct{}{}
	return item
}

// Done says a worker finished item: its tenant's worker is free, and an
// item added meanwhile is queued again.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.processing[item]; !ok {
		return
	}
	delete(q.processing, item)
	name := q.tenant(item)
	t := q.tenants[name]
	t.held--
	if _, ok := q.dirty[item]; ok {
		q.push(item)
	} else if t.held == 0 && len(t.items) == 0 {
		q.forget(name)
	}
	// A worker of this tenant is free: a waiting Get may now take one of
	// its items, and a draining ShutDown may be done.
	q.cond.Broadcast()
}

// forget drops an idle tenant, so that tenants that come and go leave no
// trace.
func (q *Queue[T]) forget(name string) {
	delete(q.tenants, name)
	for i, n := range q.order {
		if n == name {
			q.order = append(q.order[:i], q.order[i+1:]...)
			break
		}
	}
}

// ShutDown makes Get return shutdown once nothing can be handed out, and
// Add ignore new items.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shuttingDown = true
	q.cond.Broadcast()
}

// ShutDownWithDrain is ShutDown, then waits until every item a worker
// holds is done.
func (q *Queue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shuttingDown = true
	q.cond.Broadcast()
	for len(q.processing) > 0 {
		q.cond.Wait()
	}
}

// ShuttingDown reports whether ShutDown was called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// Held is how many workers tenant holds now.
func (q *Queue[T]) Held(tenant string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if t := q.tenants[tenant]; t != nil {
		return t.held
	}
	return 0
}
