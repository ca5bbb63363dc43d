package toolview

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
)

// A consuming namespace adds rules of its own to a shared tool
// (McpSharedServer spec.argumentRules). They are a later layer than the
// owner's: compiled apart from them, once per version of the
// McpSharedServer and tool, and applied to the arguments the owner's rules
// let through (the owner's fixed arguments set), so that they can add to
// the owner's rules and never remove or loosen one.

// noRules is the program of a tool a consumer adds no rule to: empty, and
// shared, since a Program is never changed once compiled.
var noRules = &argrules.Program{}

// ConsumerSource is where a consuming namespace's rules come from, as
// refusals, audit records and conditions name them:
// mcpsharedserver/<name>/<rule>.
func ConsumerSource(ss *mcpv1alpha1.McpSharedServer) string {
	return "mcpsharedserver/" + ss.Name
}

// rulesFor are ss's rules for the shared tool of remote name remote, or nil.
func rulesFor(ss *mcpv1alpha1.McpSharedServer, remote string) *mcpv1alpha1.ArgumentRules {
	for i := range ss.Spec.ArgumentRules {
		if e := &ss.Spec.ArgumentRules[i]; e.Tool == remote {
			return &mcpv1alpha1.ArgumentRules{Rules: e.Rules}
		}
	}
	return nil
}

// SharedRules compiles the rules ss adds to the shared tool of remote name
// remote: an empty program when it adds none, an *argrules.InvalidError
// when one does not compile. They fix no argument, so no schema is needed.
func SharedRules(ss *mcpv1alpha1.McpSharedServer, remote string) (*argrules.Program, error) {
	rules := rulesFor(ss, remote)
	if rules == nil {
		return noRules, nil
	}
	return argrules.Compile(nil, argrules.Layer{Source: ConsumerSource(ss), Rules: rules})
}

// SharedRulesProblems are the problems of every tool's rules of ss, each
// naming the tool and the rule, never an argument value; nil when every
// rule compiles.
func SharedRulesProblems(ss *mcpv1alpha1.McpSharedServer) ([]string, error) {
	var out []string
	for _, e := range ss.Spec.ArgumentRules {
		_, err := SharedRules(ss, e.Tool)
		var inv *argrules.InvalidError
		switch {
		case err == nil:
			continue
		case !errors.As(err, &inv):
			return nil, err
		}
		out = append(out, problemOf(e.Tool, inv))
	}
	return out, nil
}

// Problems are the problems of every tool's rules of ss, as
// SharedRulesProblems says them, compiled through the cache.
func (c *SharedCache) Problems(ss *mcpv1alpha1.McpSharedServer) ([]string, error) {
	var out []string
	for _, e := range ss.Spec.ArgumentRules {
		_, err := c.Get(ss, e.Tool)
		var inv *argrules.InvalidError
		switch {
		case err == nil:
			continue
		case !errors.As(err, &inv):
			return nil, err
		}
		out = append(out, problemOf(e.Tool, inv))
	}
	return out, nil
}

func problemOf(tool string, inv *argrules.InvalidError) string {
	parts := make([]string, len(inv.Problems))
	for i, p := range inv.Problems {
		parts[i] = p.What + ": " + p.Why
	}
	return fmt.Sprintf("tool %q: %s", tool, strings.Join(parts, "; "))
}

// sharedKey is one version of a consumer's rules for one tool.
type sharedKey struct {
	uid        types.UID
	generation int64
	tool       string
}

type sharedEntry struct {
	rules *argrules.Program
	err   error
	// namespace and weight are what the rules count against (budget.go).
	namespace string
	weight    uint64
}

// SharedCache keeps the compiled rules of each version of each
// McpSharedServer, per tool it adds rules to, so that they are compiled
// once per version. It is bounded like Cache, by entries and by what the
// rules hold, in all and per namespace, and safe for concurrent use.
type SharedCache struct {
	mu sync.Mutex
	m  map[sharedKey]sharedEntry
	// last is the generation each object was last seen at, so that an
	// older version's entries are dropped when a newer one is stored.
	last map[types.UID]int64
	// uids are the UIDs of the objects of each name, for Forget.
	uids    map[types.NamespacedName]types.UID
	weights weights
}

// Get returns the rules ss adds to the shared tool of remote name remote
// (SharedRules), compiling them the first time that version is asked for.
// Rules that would take the namespace of ss past MaxNamespaceWeight are
// not compiled, or not kept: an *argrules.InvalidError says so.
func (c *SharedCache) Get(ss *mcpv1alpha1.McpSharedServer, remote string) (*argrules.Program, error) {
	rules := rulesFor(ss, remote)
	if rules == nil {
		return noRules, nil
	}
	k := sharedKey{uid: ss.UID, generation: ss.Generation, tool: remote}
	c.mu.Lock()
	e, ok := c.m[k]
	if ok {
		c.mu.Unlock()
		return e.rules, e.err
	}
	// Estimated before compiling: a namespace past its bound makes
	// nothing compile.
	room := c.weights.ns[ss.Namespace]-c.olderWeight(ss)+argrules.EstimateWeight(argrules.Layer{Rules: rules}) <= MaxNamespaceWeight
	c.mu.Unlock()
	var p *argrules.Program
	var err error
	if room {
		p, err = SharedRules(ss, remote)
	} else {
		err = overBudget(ss.Namespace)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := p.Weight()
	if c.m == nil || len(c.m) >= MaxEntries || c.weights.full(w) {
		c.m, c.last, c.uids, c.weights = make(map[sharedKey]sharedEntry), make(map[types.UID]int64), make(map[types.NamespacedName]types.UID), weights{}
	}
	c.uids[types.NamespacedName{Namespace: ss.Namespace, Name: ss.Name}] = ss.UID
	if old, seen := c.last[ss.UID]; seen && old < ss.Generation {
		c.drop(func(key sharedKey) bool { return key.uid == ss.UID && key.generation == old })
	}
	if old, seen := c.last[ss.UID]; !seen || old < ss.Generation {
		c.last[ss.UID] = ss.Generation
	}
	c.drop(func(key sharedKey) bool { return key == k })
	if !c.weights.fits(ss.Namespace, w) {
		p, err, w = nil, overBudget(ss.Namespace), 0
	}
	c.m[k] = sharedEntry{rules: p, err: err, namespace: ss.Namespace, weight: w}
	c.weights.add(ss.Namespace, w)
	return p, err
}

// olderWeight is what the entries of older generations of ss hold, which
// storing this one drops.
func (c *SharedCache) olderWeight(ss *mcpv1alpha1.McpSharedServer) uint64 {
	var w uint64
	for key, e := range c.m {
		if key.uid == ss.UID && key.generation < ss.Generation {
			w += e.weight
		}
	}
	return w
}

// Forget drops every entry of the McpSharedServer of that name: for one
// that is gone or no longer in force, so that its rules no longer count
// against its namespace.
func (c *SharedCache) Forget(name types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, ok := c.uids[name]
	if !ok {
		return
	}
	c.drop(func(key sharedKey) bool { return key.uid == uid })
	delete(c.last, uid)
	delete(c.uids, name)
}

// Weight is what the rules of namespace ns hold in the cache.
func (c *SharedCache) Weight(ns string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.weights.ns[ns]
}

func (c *SharedCache) drop(match func(sharedKey) bool) {
	for key, e := range c.m {
		if match(key) {
			c.weights.remove(e.namespace, e.weight)
			delete(c.m, key)
		}
	}
}
