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
		parts := make([]string, len(inv.Problems))
		for i, p := range inv.Problems {
			parts[i] = p.What + ": " + p.Why
		}
		out = append(out, fmt.Sprintf("tool %q: %s", e.Tool, strings.Join(parts, "; ")))
	}
	return out, nil
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
}

// SharedCache keeps the compiled rules of each version of each
// McpSharedServer, per tool it adds rules to, so that they are compiled
// once per version. It is bounded like Cache and safe for concurrent use.
type SharedCache struct {
	mu sync.Mutex
	m  map[sharedKey]sharedEntry
	// last is the generation each object was last seen at, so that an
	// older version's entries are dropped when a newer one is stored.
	last map[types.UID]int64
}

// Get returns the rules ss adds to the shared tool of remote name remote
// (SharedRules), compiling them the first time that version is asked for.
func (c *SharedCache) Get(ss *mcpv1alpha1.McpSharedServer, remote string) (*argrules.Program, error) {
	if rulesFor(ss, remote) == nil {
		return noRules, nil
	}
	k := sharedKey{uid: ss.UID, generation: ss.Generation, tool: remote}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return e.rules, e.err
	}
	p, err := SharedRules(ss, remote)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= MaxEntries {
		c.m, c.last = make(map[sharedKey]sharedEntry), make(map[types.UID]int64)
	}
	if old, seen := c.last[ss.UID]; seen && old < ss.Generation {
		for key := range c.m {
			if key.uid == ss.UID && key.generation == old {
				delete(c.m, key)
			}
		}
	}
	if old, seen := c.last[ss.UID]; !seen || old < ss.Generation {
		c.last[ss.UID] = ss.Generation
	}
	c.m[k] = sharedEntry{rules: p, err: err}
	return p, err
}
