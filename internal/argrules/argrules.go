// Package argrules compiles and applies the argument rules of a tool
// (mcpv1alpha1.ArgumentRules): the arguments the gateway sets itself, and
// the CEL rules every call's arguments must pass. The McpTool controller
// compiles them to report whether they can be honoured, and the gateway
// compiles them once per version of a tool and applies them to every call;
// both call Compile, so the two cannot disagree on what compiles.
//
// Rules come in layers: the tool owner's, and later those a consuming
// namespace adds to a tool it is granted. Every rule of every layer
// applies, and a fixed argument may be set by one layer only, so a layer
// can add to what the layers before it allow, never widen it.
package argrules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// RuleCostLimit is what one rule may spend on one call, in CEL's cost
// units (about one cheap operation each): a tenth of what the API server
// lets one CEL validation rule spend per call (1,000,000), as ADR 030
// says. A rule that would spend more is
// stopped and the call refused.
const RuleCostLimit = 100_000

// Variable is the name under which a rule sees the call's arguments.
const Variable = "args"

// celVersion pins the CEL language and functions rules are written in: those
// of Kubernetes validation rules in this Kubernetes version. It changes
// only deliberately, since a rule that compiles today must compile after an
// upgrade of the operator.
var celVersion = version.MajorMinor(1, 37)

// env is the one CEL environment every rule is compiled in.
var env = sync.OnceValues(func() (*cel.Env, error) {
	set, err := environment.MustBaseEnvSet(celVersion).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable(Variable, cel.MapType(cel.StringType, cel.DynType)),
			cel.ParserExpressionSizeLimit(4096),
			cel.ParserRecursionLimit(64),
		},
	})
	if err != nil {
		return nil, err
	}
	return set.NewExpressionsEnv(), nil
})

// Layer is one set of argument rules and where it comes from.
type Layer struct {
	// Source names the object the rules come from in refusals and
	// problems ("" for the tool's own spec); a rule of another source is
	// named "<source>/<rule>".
	Source string
	Rules  *mcpv1alpha1.ArgumentRules
}

// Program is a compiled rule set: what the gateway applies to each call of
// one version of a tool. It is safe for concurrent use.
type Program struct {
	fixed []fixedArg
	rules []rule
}

// Weight is about how many bytes the compiled rules hold in memory: what a
// cache of programs counts against its bounds.
func (p *Program) Weight() uint64 {
	if p == nil {
		return 0
	}
	var w uint64
	for _, r := range p.rules {
		w += r.weight
	}
	return w
}

type fixedArg struct {
	name  string
	value any
}

type rule struct {
	name, message string
	prg           cel.Program
	// weight is about the bytes the compiled rule holds (ruleWeight).
	weight uint64
	// loops says the rule has a comprehension: only a loop looks at the
	// deadline, so only such a rule is given one.
	loops bool
	// bound and fast are set when the rule's cost can be bounded: fast
	// evaluates it without tracking its cost, on arguments within the
	// bound's size.
	bound *costBound
	fast  interpreter.InterpretableV2
}

// Fixed are the names of the arguments the gateway sets, which agents
// neither see nor may send.
func (p *Program) Fixed() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.fixed))
	for i, f := range p.fixed {
		out[i] = f.name
	}
	return out
}

// Empty reports whether the program neither sets an argument nor has a
// rule: calls pass through it unchanged.
func (p *Program) Empty() bool { return p == nil || (len(p.fixed) == 0 && len(p.rules) == 0) }

// Problem is one reason a rule set cannot be honoured.
type Problem struct {
	// What names the fixed argument or rule: `rule "to-domain"`,
	// `fixed argument "table"`.
	What string
	// Why it cannot be honoured. It never holds a fixed argument's value.
	Why string
}

// InvalidError says why a rule set cannot be honoured: every problem
// found, in the order of the layers and their lists.
type InvalidError struct {
	Problems []Problem
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.What + ": " + p.Why
	}
	return strings.Join(parts, "; ")
}

// Compile compiles the layers of rules of a tool whose server-side input
// schema is schema (the normalised JSON Schema the importer stored; nil when
// none is known). It fails with an InvalidError listing every rule that
// does not compile and every fixed argument that is not valid JSON, is not
// a top-level property of the schema, does not fit the property's type or
// enum, or is set by two layers.
func Compile(schema []byte, layers ...Layer) (*Program, error) {
	var props map[string]json.RawMessage
	p := &Program{}
	var problems []Problem
	fixedBy := map[string]bool{}
	for _, l := range layers {
		if l.Rules == nil {
			continue
		}
		for _, f := range l.Rules.Fixed {
			if props == nil {
				props = properties(schema)
			}
			what := fmt.Sprintf("fixed argument %q", f.Name)
			if l.Source != "" {
				what += " of " + l.Source
			}
			v, why := fixedValue(f, props, fixedBy[f.Name])
			if why != "" {
				problems = append(problems, Problem{What: what, Why: why})
				continue
			}
			fixedBy[f.Name] = true
			p.fixed = append(p.fixed, fixedArg{name: f.Name, value: v})
		}
		for _, r := range l.Rules.Rules {
			e, err := env()
			if err != nil {
				return nil, fmt.Errorf("building the CEL environment: %w", err)
			}
			name := qualified(l.Source, r.Name)
			c, why := compileRule(e, r.Expression)
			if why != "" {
				problems = append(problems, Problem{What: fmt.Sprintf("rule %q", name), Why: why})
				continue
			}
			c.name, c.message = name, r.Message
			p.rules = append(p.rules, c)
		}
	}
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return p, nil
}

func qualified(source, name string) string {
	if source == "" {
		return name
	}
	return source + "/" + name
}

// compileRule compiles one expression, with the cost limit its program
// carries and, when its cost can be bounded, the program that runs it
// without tracking (bound.go); or says why it does not compile.
func compileRule(e *cel.Env, expr string) (rule, string) {
	parsed, iss := e.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return rule{}, "does not compile: " + iss.Err().Error()
	}
	// Every regular expression is checked before anything compiles it:
	// checking the rule compiles its patterns (limits.go).
	pats, why := checkPatterns(parsed)
	if why != "" {
		return rule{}, why
	}
	ast, iss := e.Check(parsed)
	if iss != nil && iss.Err() != nil {
		return rule{}, "does not compile: " + iss.Err().Error()
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return rule{}, "does not compile: it evaluates to " + t.String() + ", not a bool"
	}
	cost := &ruleCost{patterns: pats}
	prg, err := e.Program(ast,
		cel.CostTracking(cost),
		cel.CostTrackerOptions(interpreter.OverloadCostTracker(overloadDistinct, cost.distinct)),
		cel.CostLimit(RuleCostLimit),
		cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return rule{}, "does not compile: " + err.Error()
	}
	r := rule{prg: prg, weight: ruleWeight(expr, pats), loops: hasLoop(ast.NativeRep().Expr())}
	if b := boundOf(ast, pats); b != nil {
		// A rule the untracked planner cannot plan still runs under
		// its limit.
		if fast, err := planUntracked(ast); err == nil {
			r.bound, r.fast = b, fast
		}
	}
	return r, ""
}

// fixedValue decodes a fixed argument's value, or says why it cannot be
// honoured. The value itself never appears in what it says: a reader of
// the condition need not be one of the McpTool.
func fixedValue(f mcpv1alpha1.FixedArgument, props map[string]json.RawMessage, taken bool) (any, string) {
	if taken {
		return nil, "an earlier rule set already fixes this argument"
	}
	v, err := decodeJSON([]byte(f.Value))
	if err != nil {
		return nil, "the value is not a JSON value (a string needs its quotes: '\"text\"')"
	}
	prop, ok := props[f.Name]
	if !ok {
		return nil, "the tool's input schema has no top-level argument of this name"
	}
	if why := fits(v, prop); why != "" {
		return nil, why
	}
	return v, ""
}

// properties are the top-level properties of a JSON Schema, by name.
func properties(schema []byte) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) > 0 {
		// The importer stored a normalised schema; one that does not
		// decode has no properties to fix.
		_ = json.Unmarshal(schema, &s)
	}
	return s.Properties
}

// fits says why v does not fit a property's schema (its type and enum), or
// "" when it does.
func fits(v any, prop json.RawMessage) string {
	var s struct {
		Type json.RawMessage   `json:"type"`
		Enum []json.RawMessage `json:"enum"`
	}
	if err := json.Unmarshal(prop, &s); err != nil {
		return ""
	}
	if len(s.Type) > 0 {
		var allowed []string
		var one string
		if json.Unmarshal(s.Type, &one) == nil {
			allowed = []string{one}
		} else {
			_ = json.Unmarshal(s.Type, &allowed)
		}
		if len(allowed) > 0 && !typeIn(v, allowed) {
			return "the value is not of the argument's type (" + strings.Join(allowed, " or ") + ")"
		}
	}
	if len(s.Enum) > 0 {
		want, _ := json.Marshal(v)
		for _, e := range s.Enum {
			ev, err := decodeJSON(e)
			if err != nil {
				continue
			}
			got, _ := json.Marshal(ev)
			if bytes.Equal(got, want) {
				return ""
			}
		}
		return "the value is not one the argument's enum allows"
	}
	return ""
}

func typeIn(v any, allowed []string) bool {
	for _, t := range allowed {
		switch x := v.(type) {
		case string:
			if t == "string" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case nil:
			if t == "null" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case map[string]any:
			if t == "object" {
				return true
			}
		case json.Number:
			if t == "number" {
				return true
			}
			if _, err := x.Int64(); err == nil && t == "integer" {
				return true
			}
		}
	}
	return false
}

// decodeJSON decodes one JSON value, keeping numbers as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the value")
	}
	return v, nil
}

// Refusal kinds.
const (
	// FixedArgumentSent: the call sent an argument the gateway sets.
	FixedArgumentSent = "FixedArgumentSent"
	// RuleFailed: a rule evaluated to false.
	RuleFailed = "ArgumentRuleFailed"
	// RuleNotEvaluated: a rule could not be evaluated on the arguments (an
	// argument it reads is missing or of another type, or it ran out of
	// its cost limit); the call is refused, as if the rule said false.
	RuleNotEvaluated = "ArgumentRuleNotEvaluated"
)

// Refusal says why a call's arguments are refused. It never holds a value
// of the arguments: Name and Message come from the rule set.
type Refusal struct {
	// Kind is one of FixedArgumentSent, RuleFailed, RuleNotEvaluated.
	Kind string
	// Name is the fixed argument's or the rule's name.
	Name string
	// Message is the rule's message, for the agent; empty when it has none.
	Message string
	// CostExceeded says a RuleNotEvaluated rule ran out of RuleCostLimit.
	CostExceeded bool
	// Interrupted says a RuleNotEvaluated rule was stopped at
	// EvalDeadline, or because the call ended.
	Interrupted bool
	// TooLarge says no rule ran: the arguments nest deeper than
	// MaxArgumentDepth or hold more than MaxArgumentValues values. Name
	// is then the first rule's.
	TooLarge bool
}

// Text is what the agent is told.
func (r *Refusal) Text() string {
	switch r.Kind {
	case FixedArgumentSent:
		return fmt.Sprintf("the argument %q is set by the platform and may not be sent", r.Name)
	case RuleFailed:
		msg := fmt.Sprintf("the arguments break the rule %q", r.Name)
		if r.Message != "" {
			msg += ": " + r.Message
		}
		return msg
	}
	msg := fmt.Sprintf("the rule %q could not be evaluated on these arguments", r.Name)
	switch {
	case r.TooLarge:
		msg += fmt.Sprintf(": rules run only on arguments nested at most %d levels deep and holding at most %d values", MaxArgumentDepth, MaxArgumentValues)
	case r.CostExceeded:
		msg += " within its cost limit"
	case r.Interrupted:
		msg += " within its time limit"
	}
	if r.Message != "" {
		msg += " (" + r.Message + ")"
	}
	return msg
}

// Apply returns the arguments as they are sent upstream: args with the
// fixed arguments set, once every rule allowed them; or the refusal of the
// first fixed argument sent or the first rule that does not allow them.
// args is not changed.
func (p *Program) Apply(args map[string]any) (map[string]any, *Refusal) {
	return p.apply(context.Background(), args, true)
}

// ApplyContext is Apply, whose rules stop when ctx ends as well as at
// EvalDeadline: a rule stopped so refuses the call as RuleNotEvaluated.
func (p *Program) ApplyContext(ctx context.Context, args map[string]any) (map[string]any, *Refusal) {
	return p.apply(ctx, args, true)
}

// apply is ApplyContext; untrackedAllowed false runs every rule under its
// cost limit, which tests compare with.
func (p *Program) apply(parent context.Context, args map[string]any, untrackedAllowed bool) (map[string]any, *Refusal) {
	if p.Empty() {
		return args, nil
	}
	for _, f := range p.fixed {
		if _, sent := args[f.name]; sent {
			return nil, &Refusal{Kind: FixedArgumentSent, Name: f.name}
		}
	}
	out := args
	if len(p.fixed) > 0 {
		out = make(map[string]any, len(args)+len(p.fixed))
		for k, v := range args {
			out[k] = v
		}
		for _, f := range p.fixed {
			out[f.name] = f.value
		}
	}
	if len(p.rules) == 0 {
		return out, nil
	}
	// No rule runs on arguments larger than the costs assume (limits.go).
	if tooLarge(out) {
		r := &p.rules[0]
		return nil, &Refusal{Kind: RuleNotEvaluated, Name: r.name, Message: r.message, TooLarge: true}
	}
	var deadline context.Context // made for the first rule that loops
	act := &argsActivation{args: celValue(out)}
	for i := range p.rules {
		r := &p.rules[i]
		var ctx context.Context
		if r.loops {
			if deadline == nil {
				var cancel context.CancelFunc
				deadline, cancel = context.WithTimeout(parent, EvalDeadline)
				defer cancel()
			}
			ctx = deadline
		}
		var val ref.Val
		var err error
		switch {
		case r.fast != nil && untrackedAllowed && r.bound.sizeFor(out) <= r.bound.maxSize:
			val, err = evalUntracked(ctx, r.fast, act)
		case ctx != nil:
			val, _, err = r.prg.ContextEval(ctx, act)
		default:
			val, _, err = r.prg.Eval(act)
		}
		if err != nil {
			var cancelled interpreter.EvalCancelledError
			exceeded := errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded
			interrupted := errors.Is(err, interpreter.InterruptError{})
			return nil, &Refusal{Kind: RuleNotEvaluated, Name: r.name, Message: r.message, CostExceeded: exceeded, Interrupted: interrupted}
		}
		ok, isBool := val.Value().(bool)
		if !isBool {
			return nil, &Refusal{Kind: RuleNotEvaluated, Name: r.name, Message: r.message}
		}
		if !ok {
			return nil, &Refusal{Kind: RuleFailed, Name: r.name, Message: r.message}
		}
	}
	return out, nil
}

// argsActivation gives a rule its one variable.
type argsActivation struct {
	args ref.Val
}

func (a *argsActivation) ResolveName(name string) (any, bool) {
	if name == Variable {
		return a.args, true
	}
	return nil, false
}

func (a *argsActivation) Parent() interpreter.Activation { return nil }

// evalUntracked evaluates a rule's untracked program as cel.Program.Eval
// evaluates one: an error value or a panic is an error.
func evalUntracked(ctx context.Context, prg interpreter.InterpretableV2, act interpreter.Activation) (val ref.Val, err error) {
	defer func() {
		if r := recover(); r != nil {
			val, err = nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	frame, err := interpreter.NewExecutionFrame(act)
	if err != nil {
		return nil, err
	}
	defer frame.Close()
	if ctx != nil {
		if err := frame.SetContext(ctx, interruptEvery); err != nil {
			return nil, err
		}
	}
	val = prg.Exec(frame)
	if types.IsError(val) {
		return nil, val.(*types.Err)
	}
	return val, nil
}

// celValue gives a decoded JSON value to CEL: as CEL values throughout, so
// that no rule converts an argument again each time it reads it, and a
// number as an int when it is one that fits, a double otherwise.
func celValue(v any) ref.Val {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[ref.Val]ref.Val, len(x))
		for k, e := range x {
			m[types.String(k)] = celValue(e)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	case []any:
		l := make([]ref.Val, len(x))
		for i, e := range x {
			l[i] = celValue(e)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, l)
	case string:
		return types.String(x)
	case bool:
		return types.Bool(x)
	case nil:
		return types.NullValue
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return types.Int(i)
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return types.Double(f)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}
