package toolview

import (
	"fmt"

	"github.com/mcp-catalog/operator/internal/argrules"
)

// A cache of compiled rules is bounded by what its programs hold, not only
// by their number: compiled rules hold about 150 bytes per byte of their
// expressions (argrules.Program.Weight), so one McpTool's sixteen rules can
// hold megabytes, and any namespace can create objects whose rules a cache
// compiles. Each namespace may hold MaxNamespaceWeight in a cache; an
// object whose rules would take its namespace past that is not compiled,
// or not kept, and cannot be honoured (ArgumentRulesValid=False) until it
// or the cache changes. A cache whose programs would hold more than
// MaxCacheWeight in all starts again empty, as one past MaxEntries does.

const (
	// MaxNamespaceWeight bounds the compiled rules of one namespace's
	// objects in one cache, in bytes (about).
	MaxNamespaceWeight = 16 << 20
	// MaxCacheWeight bounds the compiled rules of one cache, in bytes
	// (about).
	MaxCacheWeight = 96 << 20
)

// weights counts the weight of the programs a cache holds, per namespace
// and in all. Its user holds the cache's lock.
type weights struct {
	ns    map[string]uint64
	total uint64
}

func (w *weights) add(ns string, n uint64) {
	if w.ns == nil {
		w.ns = map[string]uint64{}
	}
	w.ns[ns] += n
	w.total += n
}

func (w *weights) remove(ns string, n uint64) {
	if w.ns == nil {
		return
	}
	w.ns[ns] -= n
	if w.ns[ns] == 0 {
		delete(w.ns, ns)
	}
	w.total -= n
}

// fits says whether ns may hold n more.
func (w *weights) fits(ns string, n uint64) bool {
	return w.ns[ns]+n <= MaxNamespaceWeight
}

// full says whether the cache would hold more than MaxCacheWeight with n
// more.
func (w *weights) full(n uint64) bool {
	return w.total+n > MaxCacheWeight
}

// overBudget is the refusal of rules that would take namespace ns past
// MaxNamespaceWeight.
func overBudget(ns string) *argrules.InvalidError {
	return &argrules.InvalidError{Problems: []argrules.Problem{{
		What: "argument rules",
		Why: fmt.Sprintf("compiled, they would take the argument rules of namespace %s past the %d MiB a namespace's rules may hold; remove or shorten rules of this namespace, then change this object",
			ns, MaxNamespaceWeight>>20),
	}}}
}
