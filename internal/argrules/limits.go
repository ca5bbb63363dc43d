package argrules

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp/syntax"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/library"
)

// What a rule may take of the process that compiles and applies it. CEL's
// cost limit alone does not bound it: CEL charges a regular expression by
// the length of its text, not by the program it compiles to, and an
// equality of two lists by their lengths, not by what is nested in them.
// So a 3,601-character pattern compiled to 600,000 instructions and
// hundreds of MiB, and a comparison of nested lists ran for seconds at a
// fiftieth of the limit. Here every rule is held to limits on what it
// compiles to, on the arguments it runs on, and on what it spends:
//
//   - a regular expression (matches, find, findAll) must be a string
//     literal of at most MaxPatternLength bytes, and the rule's patterns
//     together compile to at most MaxRegexInstructions instructions;
//   - matching is charged by the program's instructions times the
//     input's length (what RE2's matcher steps through), and equality,
//     membership and the set functions by the values they traverse;
//   - a rule runs only on arguments within MaxArgumentDepth levels and
//     MaxArgumentValues values;
//   - the rules of one call stop at EvalDeadline, whatever they spent.

const (
	// MaxPatternLength bounds the text of one regular expression, in
	// bytes.
	MaxPatternLength = 1024
	// MaxRegexInstructions bounds the compiled programs of a rule's
	// regular expressions together, in instructions of Go's regexp
	// (regexp/syntax.Prog): what matching steps through for each byte of
	// the input, and what a compiled pattern holds in memory (a few
	// dozen bytes each).
	MaxRegexInstructions = 4096
	// MaxArgumentDepth bounds how deep the arguments a rule runs on
	// nest: the argument map is level 1.
	MaxArgumentDepth = 32
	// MaxArgumentValues bounds how many values (the argument map, every
	// list, map, string, number, bool and null in it) the arguments a rule
	// runs on hold.
	MaxArgumentValues = 20_000
	// EvalDeadline bounds the time one Apply spends on its rules; a rule
	// still running then is stopped and the call refused. The cost limit
	// should stop any rule first: this is what holds if it does not.
	EvalDeadline = 250 * time.Millisecond
	// interruptEvery is how many loop steps a rule takes between looks at
	// its deadline.
	interruptEvery = 64
	// regexCostDivisor: matching is charged one unit per ten instruction
	// steps (an instruction of the program at one byte of the input), as
	// CEL charges a tenth of a unit per byte a string operation reads.
	regexCostDivisor = 10
)

// regexFunctions take a regular expression as their argument at
// patternArg(call): matches (as a function and as a method) and the
// Kubernetes library's find and findAll.
var regexFunctions = map[string]bool{overloads.Matches: true, "find": true, "findAll": true}

// patternArg is the argument that holds the pattern of a regex function.
func patternArg(call ast.CallExpr) (ast.Expr, bool) {
	a := call.Args()
	switch {
	case call.IsMemberFunction() && len(a) >= 1:
		return a[0], true
	case !call.IsMemberFunction() && len(a) >= 2:
		return a[1], true
	}
	return nil, false
}

// patterns are the regular expressions of a rule, each with the number of
// instructions it compiles to.
type patterns map[string]int

// checkPatterns finds every regular expression of a checked rule and
// says why it is refused ("" when none is): one that is not a string
// literal, is longer than MaxPatternLength, or does not parse, or
// patterns whose programs together exceed MaxRegexInstructions. It
// compiles no pattern that is too large: the size is estimated from the
// parsed pattern first, and a pattern is compiled only within the bound.
func checkPatterns(checked *cel.Ast) (patterns, string) {
	found := patterns{}
	total := 0
	var why string
	var visit func(e ast.Expr)
	visit = func(e ast.Expr) {
		if why != "" {
			return
		}
		if e.Kind() == ast.CallKind {
			call := e.AsCall()
			if regexFunctions[call.FunctionName()] {
				arg, ok := patternArg(call)
				if !ok {
					return
				}
				lit, isLit := literalString(arg)
				if !isLit {
					why = fmt.Sprintf("the pattern of %s must be a string literal, so that it is checked before the rule runs", call.FunctionName())
					return
				}
				if _, seen := found[lit]; !seen {
					n, w := patternSize(lit, MaxRegexInstructions-total)
					if w != "" {
						why = w
						return
					}
					found[lit] = n
					total += n
				}
			}
		}
		for _, c := range children(e) {
			visit(c)
		}
	}
	visit(checked.NativeRep().Expr())
	if why != "" {
		return nil, why
	}
	return found, ""
}

// children are the expressions directly inside e.
func children(e ast.Expr) []ast.Expr {
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		out := append([]ast.Expr{}, c.Args()...)
		if c.IsMemberFunction() {
			out = append(out, c.Target())
		}
		return out
	case ast.SelectKind:
		return []ast.Expr{e.AsSelect().Operand()}
	case ast.ListKind:
		return e.AsList().Elements()
	case ast.MapKind:
		var out []ast.Expr
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			out = append(out, me.Key(), me.Value())
		}
		return out
	case ast.StructKind:
		var out []ast.Expr
		for _, f := range e.AsStruct().Fields() {
			out = append(out, f.AsStructField().Value())
		}
		return out
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		return []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()}
	}
	return nil
}

func literalString(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// patternSize is the number of instructions pattern compiles to, as Go's
// regexp compiles it, or why it is refused: longer than MaxPatternLength,
// not a valid pattern, or more than budget instructions.
func patternSize(pattern string, budget int) (int, string) {
	if len(pattern) > MaxPatternLength {
		return 0, fmt.Sprintf("a regular expression is %d bytes long, more than the %d allowed", len(pattern), MaxPatternLength)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, "a regular expression does not parse: " + err.Error()
	}
	tooLarge := fmt.Sprintf("the rule's regular expressions compile to more than %d instructions", MaxRegexInstructions)
	// Parsing keeps repetitions as counts; compiling expands them. An
	// estimate of the expanded size keeps a pattern like (?:a?){1000}
	// repeated from being expanded at all.
	if estimate(re) > float64(budget)*2 {
		return 0, tooLarge
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, "a regular expression does not compile: " + err.Error()
	}
	if len(prog.Inst) > budget {
		return 0, tooLarge
	}
	return len(prog.Inst), ""
}

// estimate is about the number of instructions re compiles to, counting
// each repetition's body as many times as it can repeat; never below what
// the compiled program has, halved.
func estimate(re *syntax.Regexp) float64 {
	var n float64
	for _, s := range re.Sub {
		n += estimate(s)
	}
	switch re.Op {
	case syntax.OpLiteral:
		return float64(len(re.Rune)) + 1
	case syntax.OpRepeat:
		times := float64(max(re.Min, re.Max))
		if re.Max < 0 {
			times = float64(re.Min) + 1
		}
		return times * (n + 1)
	}
	return n + 1
}

// ruleCost is what a rule spends on a call, in CEL's units: the
// Kubernetes library's costs, with regular expressions charged by their
// programs and comparisons by the values they traverse.
type ruleCost struct {
	lib      library.CostEstimator
	patterns patterns
}

var _ interpreter.ActualCostEstimator = (*ruleCost)(nil)

// CallCost implements interpreter.ActualCostEstimator.
func (c *ruleCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	cost, ok := c.callCost(function, args)
	if !ok {
		return c.lib.CallCost(function, overloadID, args, result)
	}
	return &cost
}

func (c *ruleCost) callCost(function string, args []ref.Val) (uint64, bool) {
	switch function {
	case overloads.Matches, "find", "findAll":
		if len(args) < 2 {
			return 0, false
		}
		str, _ := args[0].(types.String)
		pat, _ := args[1].(types.String)
		insts, ok := c.patterns[string(pat)]
		if !ok {
			// Every pattern is a literal checked at compile time; any
			// other is charged at the most a rule may hold.
			insts = MaxRegexInstructions
		}
		return regexCost(insts, uint64(len(str))), true
	case operators.Equals, operators.NotEquals:
		if len(args) != 2 {
			return 0, false
		}
		a := traversal(args[0], RuleCostLimit+1)
		return 1 + traversal(args[1], a), true
	case operators.In:
		if len(args) != 2 {
			return 0, false
		}
		if l, ok := args[1].(traits.Lister); ok {
			return 1 + membership(args[0], l), true
		}
		return 1 + traversal(args[0], RuleCostLimit+1), true
	case "sets.contains", "sets.intersects", "sets.equivalent":
		if len(args) != 2 {
			return 0, false
		}
		a, _ := args[0].(traits.Lister)
		b, _ := args[1].(traits.Lister)
		if a == nil || b == nil {
			return 0, false
		}
		// Each element of one list is looked for in the other: both ways
		// for equivalent.
		cost := saturatingAdd(1, eachIn(b, a))
		if function == "sets.equivalent" {
			cost = saturatingAdd(cost, eachIn(a, b))
		}
		return cost, true
	case "indexOf", "lastIndexOf":
		if len(args) == 2 {
			if l, ok := args[0].(traits.Lister); ok {
				return 1 + membership(args[1], l), true
			}
		}
	case "distinct":
		if len(args) == 1 {
			if l, ok := args[0].(traits.Lister); ok {
				return saturatingAdd(1, eachIn(l, l)), true
			}
		}
	}
	return 0, false
}

// regexCost is what matching a program of insts instructions against an
// input of n bytes is charged.
func regexCost(insts int, n uint64) uint64 {
	steps := float64(insts) * float64(n+1)
	return uint64(math.Ceil(steps/regexCostDivisor)) + 1
}

// traversal is what reading v throughout costs, at most limit: one unit
// per value, and a tenth of a unit per byte of a string.
func traversal(v ref.Val, limit uint64) uint64 {
	var n uint64
	var walk func(v ref.Val)
	walk = func(v ref.Val) {
		if n > limit {
			return
		}
		n++
		switch x := v.(type) {
		case types.String:
			n += uint64(len(x)) / 10
		case types.Bytes:
			n += uint64(len(x)) / 10
		case traits.Mapper:
			// The arguments' maps and lists hold CEL values (celValue):
			// read without an iterator.
			if m, ok := x.Value().(map[ref.Val]ref.Val); ok {
				for k, e := range m {
					if n > limit {
						return
					}
					walk(k)
					walk(e)
				}
				return
			}
			for it := x.Iterator(); it.HasNext() == types.True && n <= limit; {
				k := it.Next()
				walk(k)
				walk(x.Get(k))
			}
		case traits.Lister:
			if l, ok := x.Value().([]ref.Val); ok {
				for _, e := range l {
					if n > limit {
						return
					}
					walk(e)
				}
				return
			}
			for it := x.Iterator(); it.HasNext() == types.True && n <= limit; {
				walk(it.Next())
			}
		}
	}
	walk(v)
	return min(n, limit)
}

// membership is what looking for v in l costs: each element compared with
// v, as far as the smaller of the two.
func membership(v ref.Val, l traits.Lister) uint64 {
	want := traversal(v, RuleCostLimit+1)
	var cost uint64 = 1
	for it := l.Iterator(); it.HasNext() == types.True && cost <= RuleCostLimit; {
		cost = saturatingAdd(cost, traversal(it.Next(), want))
	}
	return cost
}

// eachIn is what looking for each element of a in b costs.
func eachIn(a, b traits.Lister) uint64 {
	var cost uint64
	for it := a.Iterator(); it.HasNext() == types.True && cost <= RuleCostLimit; {
		cost = saturatingAdd(cost, membership(it.Next(), b))
	}
	return cost
}

func saturatingAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// tooLarge says whether args nest deeper than MaxArgumentDepth or hold
// more than MaxArgumentValues values.
func tooLarge(args map[string]any) bool {
	values := 0
	var over func(v any, depth int) bool
	over = func(v any, depth int) bool {
		values++
		if values > MaxArgumentValues || depth > MaxArgumentDepth {
			return true
		}
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				if over(e, depth+1) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if over(e, depth+1) {
					return true
				}
			}
		}
		return false
	}
	return over(args, 1)
}

// weightOf is the sum over the values of v of the largest size each has
// (a string's or key's bytes, 1 for any other value): at least what
// traversal charges for v or for any value inside it.
func weightOf(v any) uint64 {
	switch x := v.(type) {
	case string:
		return max(uint64(len(x)), 1)
	case bool, nil, json.Number:
		return 1
	case []any:
		n := uint64(1)
		for _, e := range x {
			n = saturatingAdd(n, weightOf(e))
		}
		return n
	case map[string]any:
		n := uint64(1)
		for k, e := range x {
			n = saturatingAdd(n, saturatingAdd(max(uint64(len(k)), 1), weightOf(e)))
		}
		return n
	}
	return unbounded
}

// overloadDistinct is the list library's distinct(), whose own cost
// tracker counts the list's elements but not what comparing them reads.
const overloadDistinct = "list_distinct"

func (c *ruleCost) distinct(args []ref.Val, _ ref.Val) *uint64 {
	cost, ok := c.callCost("distinct", args)
	if !ok {
		cost = 1
	}
	return &cost
}

// What compiled rules hold in memory, about: measured with
// BenchmarkCompiledRuleMemory (test/bench), rounded up.
const (
	weightPerExpressionByte = 160
	weightPerInstruction    = 96
)

// ruleWeight is about the bytes a compiled rule holds: its two planned
// programs grow with its expression's length, and its compiled patterns
// with their instructions.
func ruleWeight(expr string, pats patterns) uint64 {
	w := uint64(len(expr)) * weightPerExpressionByte
	for _, n := range pats {
		w += uint64(n) * weightPerInstruction
	}
	return w
}

// EstimateWeight is what Weight will be at least for the rules of layers
// once compiled: what a cache can check before it compiles them.
func EstimateWeight(layers ...Layer) uint64 {
	var w uint64
	for _, l := range layers {
		if l.Rules == nil {
			continue
		}
		for _, r := range l.Rules.Rules {
			w += uint64(len(r.Expression)) * weightPerExpressionByte
		}
	}
	return w
}

// hasLoop says whether e holds a comprehension.
func hasLoop(e ast.Expr) bool {
	if e.Kind() == ast.ComprehensionKind {
		return true
	}
	for _, c := range children(e) {
		if hasLoop(c) {
			return true
		}
	}
	return false
}
