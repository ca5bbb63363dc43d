// Package toolview is what agents see of a tool and what its calls may
// carry, as the platform decides it: the reviewed text in place of the
// server's (spec.reviewedText), the input schema without the arguments the
// gateway sets, and the compiled argument rules (spec.argumentRules). The
// McpTool controller builds it to report whether the spec can be honoured,
// and the gateway to serve the tool; a tool whose view cannot be built is
// not served.
package toolview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
	"github.com/mcp-catalog/operator/internal/governance"
)

// View is what agents see of one version of a tool, and what its calls may
// carry.
type View struct {
	// Title and Description are the reviewed text where the spec sets it,
	// and the server's otherwise.
	Title, Description string
	// InputSchema is the server's normalised schema without the fixed
	// arguments. Where the spec sets reviewed text, it carries the reviewed
	// parameter descriptions and no other prose of the server's
	// (reviewedSchema).
	InputSchema json.RawMessage
	// OutputSchema is the server's output schema, when it has one whose
	// root is an object schema (what every revision can carry) and no
	// reviewed text replaces the server's: its descriptions are the
	// server's prose, which reviewed text keeps from agents. The gateway
	// checks results against the stored schema either way.
	OutputSchema json.RawMessage
	// Rules are applied to every call; never nil.
	Rules *argrules.Program
	// Effects are what agents are told the tool does: what a person
	// reviewed (spec.reviewedEffects) for the approved definition, else
	// the unsafe answers, never the server's hints.
	Effects governance.Effects
}

// ErrNoDefinition says the spec describes arguments of a tool whose
// definition has not been imported yet: whether it can be honoured is not
// known.
var ErrNoDefinition = errors.New("no definition of the tool has been imported yet, so its arguments are not known")

// InvalidError says why a tool's spec cannot be honoured: the problems of
// its reviewed text, and of its argument rules.
type InvalidError struct {
	// Text are the problems of spec.reviewedText.
	Text []string
	// Rules are the problems of spec.argumentRules, or nil.
	Rules *argrules.InvalidError
}

func (e *InvalidError) Error() string {
	var parts []string
	if len(e.Text) > 0 {
		parts = append(parts, "spec.reviewedText: "+strings.Join(e.Text, "; "))
	}
	if e.Rules != nil {
		parts = append(parts, "spec.argumentRules: "+e.Rules.Error())
	}
	return strings.Join(parts, "; ")
}

// Unwrap gives the argument rules' InvalidError, if any.
func (e *InvalidError) Unwrap() error {
	if e.Rules == nil {
		return nil
	}
	return e.Rules
}

// decided reports whether t's spec decides anything of its view.
func decided(t *mcpv1alpha1.McpTool) bool {
	return t.Spec.ReviewedText != nil || t.Spec.ArgumentRules != nil
}

// NeedsSchema reports whether honouring t's spec depends on the server's
// input schema: it describes or fixes arguments.
func NeedsSchema(t *mcpv1alpha1.McpTool) bool {
	return (t.Spec.ReviewedText != nil && len(t.Spec.ReviewedText.Parameters) > 0) ||
		(t.Spec.ArgumentRules != nil && len(t.Spec.ArgumentRules.Fixed) > 0)
}

// Build is the view of t, from its spec and the definition the importer
// recorded in its status. It fails with ErrNoDefinition when the spec names
// arguments and no definition is known, and with an InvalidError when the
// spec cannot be honoured. t must hold its input schema when NeedsSchema
// (a tool read from the API server, or from a cache that keeps it).
func Build(t *mcpv1alpha1.McpTool) (*View, error) {
	if NeedsSchema(t) && t.Status.DefinitionHash == "" {
		return nil, ErrNoDefinition
	}
	var schema []byte
	if t.Status.InputSchema != nil {
		schema = t.Status.InputSchema.Raw
	}
	v := &View{Title: t.Status.Title, Description: t.Status.Description, InputSchema: schema, Effects: governance.EffectsOf(t)}
	if len(v.InputSchema) == 0 {
		v.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if out := t.Status.OutputSchema; out != nil && t.Spec.ReviewedText == nil && objectSchema(out.Raw) {
		v.OutputSchema = out.Raw
	}
	if !decided(t) {
		// The server's definition as it is: nothing to check or compile.
		v.Rules = &argrules.Program{}
		return v, nil
	}
	inv := &InvalidError{}
	rt := t.Spec.ReviewedText
	if rt != nil {
		if rt.Title != "" {
			v.Title = rt.Title
		}
		if rt.Description != "" {
			v.Description = rt.Description
		}
	}
	rules, err := argrules.Compile(schema, argrules.Layer{Rules: t.Spec.ArgumentRules})
	if err != nil {
		if !errors.As(err, &inv.Rules) {
			return nil, err
		}
	}
	if rt != nil || len(rules.Fixed()) > 0 {
		served, problems := serve(v.InputSchema, rt, rules.Fixed())
		inv.Text = problems
		v.InputSchema = served
	}
	if len(inv.Text) > 0 || inv.Rules != nil {
		return nil, inv
	}
	v.Rules = rules
	return v, nil
}

// serve rewrites a schema for agents: with reviewed text (rt), the
// server's prose removed (reviewedSchema) and the reviewed parameter
// descriptions put in; and the fixed arguments removed from its properties
// and required list. It reports a reviewed parameter the schema does not
// have.
func serve(schema json.RawMessage, rt *mcpv1alpha1.ReviewedText, fixed []string) (json.RawMessage, []string) {
	var s map[string]any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil || s == nil {
		return schema, []string{"the tool's input schema cannot be read"}
	}
	if rt != nil {
		reviewedSchema(s, 0)
	}
	props, _ := s["properties"].(map[string]any)
	var problems []string
	if rt != nil {
		for _, p := range rt.Parameters {
			prop, ok := props[p.Name].(map[string]any)
			if !ok {
				problems = append(problems, fmt.Sprintf("parameter %q: the tool's input schema has no top-level argument of this name", p.Name))
				continue
			}
			prop["description"] = p.Description
		}
	}
	if len(fixed) > 0 {
		hidden := make(map[string]bool, len(fixed))
		for _, f := range fixed {
			hidden[f] = true
			delete(props, f)
		}
		if req, ok := s["required"].([]any); ok {
			kept := make([]any, 0, len(req))
			for _, r := range req {
				if name, _ := r.(string); !hidden[name] {
					kept = append(kept, r)
				}
			}
			if len(kept) == 0 {
				delete(s, "required")
			} else {
				s["required"] = kept
			}
		}
	}
	out, err := json.Marshal(s)
	if err != nil {
		return schema, append(problems, "the tool's input schema cannot be rewritten")
	}
	return out, problems
}

// structural are the keywords a reviewed tool's schema keeps: those the
// importer's normaliser keeps, but "description". They say what a call may
// carry; argument names and enum values are the server's words, which
// reviewers see as such (kubectl mcp describe-as, diff, the console) and
// which cannot be removed without changing the tool.
var structural = map[string]bool{"type": true, "properties": true, "required": true, "items": true, "enum": true, "x-mcp-header": true}

// maxReviewedDepth bounds the walk of reviewedSchema; a schema nested
// deeper (the importer refuses any deeper than 32) loses what is below.
const maxReviewedDepth = 64

// reviewedSchema removes from a schema every keyword that is not
// structural, at every level: the server's descriptions (of the root, of
// nested arguments, of arguments no reviewed text names), titles, and
// anything else a schema written past the importer could carry. What
// remains for an agent to read as prose is what a person reviewed
// (docs/adr/045-what-is-stored-is-what-is-served.md).
func reviewedSchema(s map[string]any, depth int) {
	for k, v := range s {
		if !structural[k] {
			delete(s, k)
			continue
		}
		if depth >= maxReviewedDepth {
			if k == "properties" || k == "items" {
				delete(s, k)
			}
			continue
		}
		switch k {
		case "properties":
			props, _ := v.(map[string]any)
			for name, p := range props {
				if ps, ok := p.(map[string]any); ok {
					reviewedSchema(ps, depth+1)
				} else {
					delete(props, name)
				}
			}
		case "items":
			if is, ok := v.(map[string]any); ok {
				reviewedSchema(is, depth+1)
			} else {
				delete(s, k)
			}
		}
	}
}

// key is one version of a tool as far as its view goes: its spec
// (generation) and the definition the server offers.
type key struct {
	uid        types.UID
	generation int64
	definition string
}

func keyOf(t *mcpv1alpha1.McpTool) key {
	return key{uid: t.UID, generation: t.Generation, definition: t.Status.DefinitionHash}
}

type entry struct {
	view *View
	err  error
	// weight is what the view's rules hold (argrules.Program.Weight).
	weight uint64
}

// Cache keeps the view of each version of each tool whose spec decides
// any of it, so that rules are compiled once per version; the view of any
// other tool is the server's definition, built without being kept. It is
// bounded: when it holds MaxEntries, or its rules would hold more than
// MaxCacheWeight, it starts again empty; and the rules of one namespace's
// tools hold at most MaxNamespaceWeight in it (budget.go). It is safe for
// concurrent use.
type Cache struct {
	mu sync.Mutex
	m  map[key]entry
	// byName is the key each tool was last seen at, so that an older
	// version's entry is dropped when a newer one is stored.
	byName  map[types.NamespacedName]key
	weights weights
}

// MaxEntries bounds a Cache.
const MaxEntries = 8192

// Lookup returns the cached view of t's version, and whether there was one.
func (c *Cache) Lookup(t *mcpv1alpha1.McpTool) (*View, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[keyOf(t)]
	return e.view, e.err, ok
}

// Get returns the view of t's version, building it (Build) the first time
// that version is asked for. t must hold what Build needs. A version whose
// rules would take its namespace past MaxNamespaceWeight is not compiled,
// or not kept: an InvalidError says so.
func (c *Cache) Get(t *mcpv1alpha1.McpTool) (*View, error) {
	if !decided(t) {
		return Build(t)
	}
	if v, err, ok := c.Lookup(t); ok {
		return v, err
	}
	name := types.NamespacedName{Namespace: t.Namespace, Name: t.Name}
	c.mu.Lock()
	room := c.roomFor(name, argrules.EstimateWeight(argrules.Layer{Rules: t.Spec.ArgumentRules}))
	c.mu.Unlock()
	var v *View
	var err error
	if room {
		v, err = Build(t)
	} else {
		err = &InvalidError{Rules: overBudget(t.Namespace)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var w uint64
	if v != nil {
		w = v.Rules.Weight()
	}
	if c.m == nil || len(c.m) >= MaxEntries || c.weights.full(w) {
		c.m, c.byName, c.weights = make(map[key]entry), make(map[types.NamespacedName]key), weights{}
	}
	c.forget(name)
	if !c.weights.fits(t.Namespace, w) {
		v, err, w = nil, &InvalidError{Rules: overBudget(t.Namespace)}, 0
	}
	k := keyOf(t)
	c.m[k], c.byName[name] = entry{view: v, err: err, weight: w}, k
	c.weights.add(t.Namespace, w)
	return v, err
}

// roomFor says whether the namespace of name has room for w more once the
// entry of name is dropped.
func (c *Cache) roomFor(name types.NamespacedName, w uint64) bool {
	held := c.weights.ns[name.Namespace]
	if k, ok := c.byName[name]; ok {
		held -= c.m[k].weight
	}
	return held+w <= MaxNamespaceWeight
}

// Forget drops the view of the tool of that name, if any: for a tool that
// is gone, so that its rules no longer count against its namespace.
func (c *Cache) Forget(name types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(name)
}

func (c *Cache) forget(name types.NamespacedName) {
	k, ok := c.byName[name]
	if !ok {
		return
	}
	c.weights.remove(name.Namespace, c.m[k].weight)
	delete(c.m, k)
	delete(c.byName, name)
}

// objectSchema reports whether a schema says its instances are objects:
// "type" is "object".
func objectSchema(raw []byte) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(raw, &s) == nil && s.Type == "object"
}
