package fairqueue

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/mcp-catalog/operator/test/poll"
)

// tenantOf reads the tenant of "tenant/name".
func tenantOf(item string) string {
	t, _, _ := strings.Cut(item, "/")
	return t
}

// get takes the next item, failing the test if none can be handed out.
func get(t *testing.T, q *Queue[string]) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		item, shutdown := q.Get()
		if shutdown {
			item = "<shutdown>"
		}
		got <- item
	}()
	select {
	case item := <-got:
		return item
	case <-time.After(5 * time.Second):
		t.Fatal("Get blocked although an item could be handed out")
		return ""
	}
}

// blocked asserts that Get hands out nothing now; it returns what the
// blocked Get later receives.
func blocked(t *testing.T, q *Queue[string]) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		item, _ := q.Get()
		got <- item
	}()
	select {
	case item := <-got:
		t.Fatalf("Get handed out %q, want it to wait", item)
	case <-time.After(100 * time.Millisecond):
	}
	return got
}

// The attack: one tenant queues more slow items than there are workers
// before anyone else queues anything. It gets at most its ceiling, and
// the other tenant's item is handed out at once, without any of the first
// tenant's items being done.
func TestNoisyTenantCannotHoldEveryWorker(t *testing.T) {
	const workers = 4
	q := New(tenantOf, DefaultMaxPerTenant(workers))
	for i := range 10 {
		q.Add("noisy/" + string(rune('a'+i)))
	}
	for range DefaultMaxPerTenant(workers) {
		if got := get(t, q); tenantOf(got) != "noisy" {
			t.Fatalf("got %q", got)
		}
	}
	if h := q.Held("noisy"); h != 3 {
		t.Fatalf("noisy holds %d workers, want 3 (three quarters of 4)", h)
	}
	// The fourth worker waits: the noisy tenant is at its ceiling.
	later := blocked(t, q)
	q.Add("quiet/x")
	select {
	case got := <-later:
		if got != "quiet/x" {
			t.Fatalf("the free worker got %q, want quiet/x", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the quiet tenant's item was not handed to the free worker")
	}
}

// Among tenants with work queued, the one holding the fewest workers goes
// first, ties in turn; within a tenant, first in first out.
func TestFewestHeldFirstThenInTurn(t *testing.T) {
	q := New(tenantOf, 100)
	for _, item := range []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"} {
		q.Add(item)
	}
	var got []string
	for range 6 {
		got = append(got, get(t, q))
	}
	want := []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("handed out %v, want %v", got, want)
	}
}

func TestTenantHoldingFewerGoesFirst(t *testing.T) {
	q := New(tenantOf, 100)
	q.Add("a/1")
	q.Add("a/2")
	if got := get(t, q); got != "a/1" {
		t.Fatal(got)
	}
	if got := get(t, q); got != "a/2" {
		t.Fatal(got)
	}
	// a holds two; b arrives after a's third item and still goes first.
	q.Add("a/3")
	q.Add("b/1")
	if got := get(t, q); got != "b/1" {
		t.Fatalf("got %q, want b/1: b holds no worker", got)
	}
}

// The work queue's contract: an item is queued once, never handed to two
// workers, and an item added while held is handed out again after Done.
func TestQueueContract(t *testing.T) {
	q := New(tenantOf, 10)
	q.Add("a/1")
	q.Add("a/1")
	if q.Len() != 1 {
		t.Fatalf("Len = %d after adding one item twice, want 1", q.Len())
	}
	item := get(t, q)
	q.Add("a/1")
	if q.Len() != 0 {
		t.Fatalf("an item added while held was queued at once (Len %d)", q.Len())
	}
	later := blocked(t, q)
	q.Done(item)
	select {
	case got := <-later:
		if got != "a/1" {
			t.Fatal(got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the item added while held was not handed out after Done")
	}
	q.Done("a/1")
	if h := q.Held("a"); h != 0 {
		t.Fatalf("a holds %d workers after every item is done", h)
	}
	if len(q.tenants) != 0 || len(q.order) != 0 {
		t.Fatalf("an idle tenant is still tracked: %v %v", q.tenants, q.order)
	}
}

func TestShutDown(t *testing.T) {
	q := New(tenantOf, 1)
	q.Add("a/1")
	q.Add("a/2")
	item := get(t, q)
	// a is at its ceiling: a Get waits, and is released by the shutdown.
	later := blocked(t, q)
	q.ShutDown()
	select {
	case got := <-later:
		if got != "" {
			t.Fatalf("got %q after shutdown with nothing that may be handed out", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Get still waits after ShutDown")
	}
	q.Add("b/1")
	if q.Len() != 1 {
		t.Fatalf("Add after ShutDown queued an item (Len %d)", q.Len())
	}
	drained := make(chan struct{})
	go func() { q.ShutDownWithDrain(); close(drained) }()
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned while an item is held")
	case <-time.After(100 * time.Millisecond):
	}
	q.Done(item)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("ShutDownWithDrain did not return once every item was done")
	}
}

func TestDefaultMaxPerTenant(t *testing.T) {
	for workers, want := range map[int]int{0: 1, 1: 1, 2: 1, 4: 3, 16: 12, 64: 48} {
		if got := DefaultMaxPerTenant(workers); got != want {
			t.Errorf("DefaultMaxPerTenant(%d) = %d, want %d", workers, got, want)
		}
	}
}

// mayHandOut reports whether Get would hand out an item now.
func (q *Queue[T]) mayHandOut() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.next()
	return ok
}

// Under the delaying and rate-limiting layers, as a controller uses it,
// with many workers at once (run with -race): more workers than the three
// tenants' ceilings add up to, each holding its item for as long as the
// queue may hand another to a free worker, so that every tenant is held at
// what the queue allows, again and again.
func TestRateLimitingQueueUnderConcurrentWorkers(t *testing.T) {
	fair := New(tenantOf, 2)
	q := rateLimiting("", workqueue.DefaultTypedControllerRateLimiter[string](), fair)
	const perTenant, workers = 50, 8
	var mu sync.Mutex
	// changed is broadcast whenever a worker takes or gives back an item.
	changed := sync.NewCond(&mu)
	held, holding, most := map[string]int{}, 0, 0
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				held[tenantOf(item)]++
				holding++
				most = max(most, held[tenantOf(item)])
				seen[item]++
				changed.Broadcast()
				// A free worker takes what the queue may hand out; until
				// it did, this one keeps its item.
				for holding < workers && fair.mayHandOut() {
					changed.Wait()
				}
				held[tenantOf(item)]--
				holding--
				changed.Broadcast()
				mu.Unlock()
				q.Forget(item)
				q.Done(item)
			}
		}()
	}
	for i := range perTenant {
		for _, tenant := range []string{"a", "b", "c"} {
			item := tenant + "/" + string(rune('0'+i%10)) + string(rune('a'+i/10))
			if i%3 == 0 {
				q.AddAfter(item, time.Millisecond)
			} else {
				q.Add(item)
			}
		}
	}
	poll.UntilEvery(t, 10*time.Second, 10*time.Millisecond, "every item handed out", func() error {
		mu.Lock()
		defer mu.Unlock()
		if n := len(seen); n != 3*perTenant {
			return fmt.Errorf("%d distinct items handed out, want %d", n, 3*perTenant)
		}
		return nil
	})
	q.ShutDownWithDrain()
	wg.Wait()
	if len(seen) != 3*perTenant {
		t.Fatalf("%d distinct items handed out, want %d", len(seen), 3*perTenant)
	}
	if most > 2 {
		t.Fatalf("a tenant held %d workers at once, above its ceiling of 2", most)
	}
}
