package tenancy

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestCapsOnlyMakeOperationsCheaper(t *testing.T) {
	caps := Caps{MaxCatalogBytes: 1 << 20, MaxTools: 500, MaxOperationTimeout: 30 * time.Second, MinHealthInterval: time.Minute}
	asked := Limits{MaxCatalogBytes: 64 << 20, MaxTools: 2000, OperationTimeout: 5 * time.Minute, HealthInterval: 5 * time.Second}
	used, capped := caps.Apply(asked)
	want := Limits{MaxCatalogBytes: 1 << 20, MaxTools: 500, OperationTimeout: 30 * time.Second, HealthInterval: time.Minute}
	if used != want {
		t.Errorf("used %+v, want %+v", used, want)
	}
	var fields []string
	for _, c := range capped {
		fields = append(fields, c.Field)
	}
	if len(fields) != 4 || fields[0] != "spec.import.maxCatalogBytes" || fields[3] != "spec.healthCheck.interval" {
		t.Errorf("capped fields %v", fields)
	}
	if got := capped[2].String(); got != "spec.operationTimeout asks for 5m0s, the administrator allows 30s" {
		t.Errorf("message %q", got)
	}

	// A spec within the caps, and no caps at all, change nothing.
	within := Limits{MaxCatalogBytes: 1 << 16, MaxTools: 10, OperationTimeout: time.Second, HealthInterval: time.Hour}
	if used, capped := caps.Apply(within); used != within || capped != nil {
		t.Errorf("within the caps: %+v %v", used, capped)
	}
	if used, capped := (Caps{}).Apply(asked); used != asked || capped != nil {
		t.Errorf("no caps: %+v %v", used, capped)
	}
}

// The attack: far more imports than the budget holds try to take a
// hostile catalog's full ceiling at once. The bytes taken never exceed the
// total, one namespace never holds more than half, and another namespace
// still gets its import in while the first holds its half.
func TestBudgetBoundsBytesInFlight(t *testing.T) {
	const ceiling = 16 << 20
	b := NewBudget(64 << 20)
	var over atomic.Bool
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tenant := "hostile"
			if i%8 == 0 {
				tenant = "other"
			}
			for range 200 {
				if !b.TryAcquire(tenant, ceiling) {
					continue
				}
				all, mine := b.Held(tenant)
				if all > b.Total() || mine > b.PerTenant() {
					over.Store(true)
				}
				b.Release(tenant, ceiling)
			}
		}()
	}
	wg.Wait()
	if over.Load() || b.Peak() > b.Total() {
		t.Fatalf("held more than the budget: peak %d of %d", b.Peak(), b.Total())
	}
	if all, _ := b.Held(""); all != 0 {
		t.Fatalf("%d bytes still held after every release", all)
	}

	// The hostile namespace takes all it can: its half.
	n := 0
	for b.TryAcquire("hostile", ceiling) {
		n++
	}
	if n != 2 {
		t.Fatalf("one namespace took %d imports of 16 MiB from 64 MiB, want 2 (half)", n)
	}
	if !b.TryAcquire("other", ceiling) {
		t.Fatal("another namespace was refused while the first held only its half")
	}
	if b.TryAcquire("other", b.PerTenant()+1) {
		t.Fatal("granted more than one namespace may hold")
	}
}

func TestDefaultInFlight(t *testing.T) {
	if got := DefaultInFlight(256<<20, 16, 16<<20); got != 64<<20 {
		t.Errorf("256 MiB limit: %d, want a quarter", got)
	}
	if got := DefaultInFlight(math.MaxInt64, 16, 16<<20); got != 256<<20 {
		t.Errorf("no limit: %d, want 16 imports at 16 MiB", got)
	}
	if got := NewBudget(1).Total(); got != 2<<20 {
		t.Errorf("smallest budget %d", got)
	}
}

func TestLedgerCountsImportsOfOneNamespaceAgainstEachOther(t *testing.T) {
	l := NewLedger()
	limits := StorageLimits{Tools: 100, DefinitionBytes: 1000}
	a := types.NamespacedName{Namespace: "team", Name: "a"}
	b := types.NamespacedName{Namespace: "team", Name: "b"}
	elsewhere := types.NamespacedName{Namespace: "other", Name: "a"}
	// Neither import is in any status yet: the second is counted against
	// the first through the ledger.
	if err := l.Admit(a, Usage{Tools: 60, DefinitionBytes: 100}, nil, limits); err != nil {
		t.Fatal(err)
	}
	err := l.Admit(b, Usage{Tools: 50, DefinitionBytes: 100}, nil, limits)
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Limit != LimitTools || ex.Namespace != 110 || ex.Max != 100 {
		t.Fatalf("second import: %v, want the tool limit exceeded at 110", err)
	}
	// Another namespace has its own count.
	if err := l.Admit(elsewhere, Usage{Tools: 100}, nil, limits); err != nil {
		t.Fatal(err)
	}
	// Bytes are a limit of their own; the ledger's claim wins over a stale
	// status.
	recorded := map[string]Usage{"a": {Tools: 1, DefinitionBytes: 1}, "b": {}}
	err = l.Admit(b, Usage{Tools: 10, DefinitionBytes: 901}, recorded, limits)
	if !errors.As(err, &ex) || ex.Limit != LimitDefinitionBytes || ex.Namespace != 1001 {
		t.Fatalf("bytes: %v", err)
	}
	if err := l.Admit(b, Usage{Tools: 40, DefinitionBytes: 900}, recorded, limits); err != nil {
		t.Fatalf("at the limit exactly: %v", err)
	}
	// After a is deleted, its claim no longer counts.
	l.Forget(a)
	if err := l.Admit(b, Usage{Tools: 100, DefinitionBytes: 1000}, map[string]Usage{"b": {}}, limits); err != nil {
		t.Fatalf("after the other server went: %v", err)
	}
}

func TestLedgerLetsAServerOverALoweredLimitKeepItsShare(t *testing.T) {
	l := NewLedger()
	a := types.NamespacedName{Namespace: "team", Name: "a"}
	recorded := map[string]Usage{"a": {Tools: 80, DefinitionBytes: 800}, "b": {Tools: 80}}
	limits := StorageLimits{Tools: 100}
	// The namespace holds 160 under a limit of 100: a's import that keeps
	// its 80 tools (definitions changed) is admitted, one that adds is not.
	if err := l.Admit(a, Usage{Tools: 80, DefinitionBytes: 700}, recorded, limits); err != nil {
		t.Fatalf("an import that does not grow was refused: %v", err)
	}
	if err := l.Admit(a, Usage{Tools: 81, DefinitionBytes: 700}, recorded, limits); err == nil {
		t.Fatal("an import that grows a namespace over its limit was admitted")
	}
}
