package argrules

import (
	"encoding/json"
	"math"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// Tracking a rule's cost is most of what evaluating it costs: CEL observes
// every step to add it up. Yet most rules can be seen, before they run, not
// to reach the limit on a call's arguments: a rule that compares sizes, or
// checks each recipient's domain, spends a few units per element it reads.
// For such a rule, Compile derives an upper bound on what it can spend as a
// function of the largest size of a value it can reach (a string's length
// in bytes, a list's or map's number of elements), and the largest such
// size for which the bound stays within RuleCostLimit. A call whose
// arguments stay within that size runs the rule without tracking: it could
// not have been stopped. Any other call, and any rule outside what the bound
// understands, runs under the cost limit as before.
//
// The bound is deliberately coarse and covers only a small set of
// operations whose runtime cost (interpreter.CostTracker, with the
// Kubernetes library's and the strings extension's call costs) is known:
//
//   - the argument map, its members, comprehension variables, literals;
//   - size, logical operators, the conditional, arithmetic on numbers and
//     comparisons of any kind, at most 1 unit, or a tenth of a unit per
//     byte of a string compared;
//   - indexing, membership (at most the list's size);
//   - startsWith, endsWith, lowerAscii, upperAscii, trim (linear in a
//     string's size), contains and matches (product of two sizes);
//   - comprehensions (all, exists, exists_one and their two-variable
//     forms) whose accumulator is a bool or an int: their loop runs at
//     most once per element of a value the rule reached.
//
// None of these makes a value larger than the largest value it was given,
// so every value a covered rule sees is at most as large as the largest
// value in the arguments it reads or the largest literal it holds. Each
// evaluation of an expression node is charged twice its own cost, and a
// loop body as many times as its range has elements plus one.

// callClass is how a covered function's cost grows with the size s of
// its arguments.
type callClass int

const (
	callConstant  callClass = iota // at most 1
	callLinear                     // at most 3(s+1)
	callQuadratic                  // at most 3(s+1)²
	// callTraversal is at most 3(s+1) where s is at least the weight of
	// every value the rule reaches (weightOf): equality and membership
	// read as far into nested values as they reach.
	callTraversal
	// callRegex is at most 3(s+1)², or what limits.go charges a program
	// of the call's pattern on an input of s bytes if that is more.
	callRegex
)

// coveredCalls are the overloads the bound covers, by overload ID.
var coveredCalls = func() map[string]callClass {
	m := map[string]callClass{}
	for _, id := range []string{
		overloads.Conditional, overloads.LogicalAnd, overloads.LogicalOr, overloads.LogicalNot,
		overloads.NotStrictlyFalse,
		overloads.Size, overloads.SizeString, overloads.SizeBytes, overloads.SizeList, overloads.SizeMap,
		overloads.SizeStringInst, overloads.SizeBytesInst, overloads.SizeListInst, overloads.SizeMapInst,
		overloads.AddInt64, overloads.AddUint64, overloads.AddDouble,
		overloads.SubtractInt64, overloads.SubtractUint64, overloads.SubtractDouble,
		overloads.MultiplyInt64, overloads.MultiplyUint64, overloads.MultiplyDouble,
		overloads.DivideInt64, overloads.DivideUint64, overloads.DivideDouble,
		overloads.ModuloInt64, overloads.ModuloUint64,
		overloads.NegateInt64, overloads.NegateDouble,
		overloads.IndexList, overloads.IndexMap, overloads.InMap,
		// Indexing an optional value, which the checker lists beside
		// indexing a dyn one; no covered operation makes an optional.
		"optional_list_index_int", "optional_map_index_value",
	} {
		m[id] = callConstant
	}
	for _, id := range []string{
		overloads.Equals, overloads.NotEquals, overloads.InList,
	} {
		m[id] = callTraversal
	}
	for _, id := range []string{
		overloads.StartsWithString, overloads.EndsWithString,
		"string_lower_ascii", "string_upper_ascii", "string_trim",
	} {
		m[id] = callLinear
	}
	m[overloads.ContainsString] = callQuadratic
	for _, id := range []string{overloads.Matches, overloads.MatchesString} {
		m[id] = callRegex
	}
	return m
}()

// comparisonPrefixes name the ordering overloads (less_int64,
// greater_equals_string, ...): at most a tenth of a unit per byte of the
// shorter operand, which callLinear covers.
var comparisonPrefixes = []string{"less_", "greater_"}

func classOf(id string) (callClass, bool) {
	if c, ok := coveredCalls[id]; ok {
		return c, true
	}
	for _, p := range comparisonPrefixes {
		if strings.HasPrefix(id, p) {
			return callLinear, true
		}
	}
	return 0, false
}

// costBound is what Compile learnt of a rule's cost.
type costBound struct {
	// maxSize is the largest size of a reachable value for which the rule
	// cannot exceed RuleCostLimit.
	maxSize uint64
	// keys are the arguments the rule reads (it reads no other), unless
	// allKeys: the rule uses the argument map as a value.
	keys    []string
	allKeys bool
	// literalSize is the largest size of a literal of the rule.
	literalSize uint64
	// traverses says the rule compares values (callTraversal): the size
	// it is run at is then at least the weight of what it reads, plus
	// literalWeight, the weight of its literals together.
	traverses     bool
	literalWeight uint64
	an            *analysis
}

// costAt is the bound on what the rule spends when no value it sees is
// larger than size.
func (b *costBound) costAt(size uint64) float64 {
	return b.an.cost(b.an.a.Expr(), float64(size), 1)
}

// analysis walks a checked rule.
type analysis struct {
	a             *ast.AST
	keys          map[string]bool
	allKeys       bool
	literalSize   uint64
	literalWeight uint64
	traverses     bool
	covered       bool
	// patterns are the rule's regular expressions and their programs'
	// sizes (checkPatterns).
	patterns patterns
}

// boundOf returns what bounds the rule's cost, or nil when the bound does
// not cover the rule (or allows no size at all).
func boundOf(checked *cel.Ast, pats patterns) *costBound {
	an := &analysis{a: checked.NativeRep(), keys: map[string]bool{}, covered: true, patterns: pats}
	an.scan(an.a.Expr(), nil)
	if !an.covered {
		return nil
	}
	// cost(s) grows with s; find the largest s it allows by doubling, then
	// bisecting.
	b := &costBound{allKeys: an.allKeys, literalSize: an.literalSize, traverses: an.traverses, literalWeight: an.literalWeight, an: an}
	fits := func(s uint64) bool { return b.costAt(s) <= RuleCostLimit }
	if !fits(1) {
		return nil
	}
	const capSize = 1 << 40
	lo := uint64(1)
	for lo < capSize && fits(lo*2) {
		lo *= 2
	}
	if lo < capSize {
		// lo fits and 2·lo does not.
		hi := lo * 2
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	b.maxSize = lo
	if !an.allKeys {
		for k := range an.keys {
			b.keys = append(b.keys, k)
		}
	}
	return b
}

// scan checks that every node is covered and records the arguments read
// and the literals' sizes. scope holds the comprehension variables in
// scope.
func (an *analysis) scan(e ast.Expr, scope []string) {
	if !an.covered {
		return
	}
	switch e.Kind() {
	case ast.LiteralKind:
		an.literal(sizeOfLiteral(e))
	case ast.IdentKind:
		name := e.AsIdent()
		switch {
		case inScope(scope, name):
		case name == Variable:
			// The map itself is a value the rule sees.
			an.allKeys = true
		default:
			an.covered = false
		}
	case ast.SelectKind:
		sel := e.AsSelect()
		op := sel.Operand()
		if op.Kind() == ast.IdentKind && op.AsIdent() == Variable && !inScope(scope, Variable) {
			an.keys[sel.FieldName()] = true
			return
		}
		if sel.IsTestOnly() {
			// has() on anything but the argument map depends on how the
			// environment treats a presence test on a non-map; keep it
			// under the limit.
			an.covered = false
			return
		}
		an.scan(op, scope)
	case ast.CallKind:
		call := e.AsCall()
		ids := an.a.GetOverloadIDs(e.ID())
		if len(ids) == 0 {
			an.covered = false
			return
		}
		for _, id := range ids {
			c, ok := classOf(id)
			if !ok {
				an.covered = false
				return
			}
			if c == callTraversal {
				an.traverses = true
			}
		}
		if call.IsMemberFunction() {
			an.scan(call.Target(), scope)
		}
		for _, arg := range call.Args() {
			an.scan(arg, scope)
		}
	case ast.ListKind:
		l := e.AsList()
		if len(l.OptionalIndices()) > 0 {
			an.covered = false
			return
		}
		an.literal(uint64(l.Size()))
		for _, el := range l.Elements() {
			an.scan(el, scope)
		}
	case ast.MapKind:
		m := e.AsMap()
		an.literal(uint64(m.Size()))
		for _, en := range m.Entries() {
			entry := en.AsMapEntry()
			if entry.IsOptional() {
				an.covered = false
				return
			}
			an.scan(entry.Key(), scope)
			an.scan(entry.Value(), scope)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		vars := []string{c.IterVar(), c.AccuVar()}
		if c.HasIterVar2() {
			vars = append(vars, c.IterVar2())
		}
		for _, v := range vars {
			if v == Variable {
				an.covered = false
				return
			}
		}
		// An accumulator that is not a bool or an int could grow with
		// each step (map, filter, bind): not covered.
		switch an.a.GetType(c.AccuInit().ID()).Kind() {
		case types.BoolKind, types.IntKind:
		default:
			an.covered = false
			return
		}
		an.scan(c.IterRange(), scope)
		an.scan(c.AccuInit(), scope)
		inner := append(append([]string{}, scope...), vars...)
		an.scan(c.LoopCondition(), inner)
		an.scan(c.LoopStep(), inner)
		an.scan(c.Result(), inner)
	default:
		an.covered = false
	}
}

func (an *analysis) literal(size uint64) {
	if size > an.literalSize {
		an.literalSize = size
	}
	an.literalWeight += size
}

func inScope(scope []string, name string) bool {
	for _, v := range scope {
		if v == name {
			return true
		}
	}
	return false
}

func sizeOfLiteral(e ast.Expr) uint64 {
	switch v := e.AsLiteral().(type) {
	case types.String:
		return uint64(len(v))
	case types.Bytes:
		return uint64(len(v))
	}
	return 1
}

// cost bounds what evaluating e spends, each evaluation of it counted
// times times, when no value it sees is larger than s. It is only called
// on a covered rule.
func (an *analysis) cost(e ast.Expr, s, times float64) float64 {
	own := 1.0
	var sum float64
	switch e.Kind() {
	case ast.SelectKind:
		sum = an.cost(e.AsSelect().Operand(), s, times)
	case ast.CallKind:
		call := e.AsCall()
		for _, id := range an.a.GetOverloadIDs(e.ID()) {
			c, _ := classOf(id)
			switch c {
			case callLinear:
				own = math.Max(own, 3*(s+1))
			case callQuadratic:
				own = math.Max(own, 3*(s+1)*(s+1))
			case callTraversal:
				own = math.Max(own, 3*(s+1))
			case callRegex:
				own = math.Max(own, 3*(s+1)*(s+1))
				if p, ok := patternArg(call); ok {
					if lit, ok := literalString(p); ok {
						own = math.Max(own, float64(regexCost(an.patterns[lit], uint64(s))))
					}
				}
			}
		}
		if call.IsMemberFunction() {
			sum += an.cost(call.Target(), s, times)
		}
		for _, arg := range call.Args() {
			sum += an.cost(arg, s, times)
		}
	case ast.ListKind:
		own = 40
		for _, el := range e.AsList().Elements() {
			sum += an.cost(el, s, times)
		}
	case ast.MapKind:
		own = 40
		for _, en := range e.AsMap().Entries() {
			entry := en.AsMapEntry()
			sum += an.cost(entry.Key(), s, times) + an.cost(entry.Value(), s, times)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		loop := times * (s + 1)
		sum = an.cost(c.IterRange(), s, times) + an.cost(c.AccuInit(), s, times) +
			an.cost(c.LoopCondition(), s, loop) + an.cost(c.LoopStep(), s, loop) +
			an.cost(c.Result(), s, times)
	}
	total := sum + 2*own*times
	if total > math.MaxFloat64/4 || math.IsInf(total, 0) {
		return math.MaxFloat64 / 4
	}
	return total
}

// unbounded stands for a size the bound does not know.
const unbounded = math.MaxUint64

// sizeOf is the largest size of v or a value inside it: a string's length
// in bytes (CEL counts code points, never more), a list's or map's number
// of elements, a map key's length; 1 for a number, a bool or null.
func sizeOf(v any) uint64 {
	switch x := v.(type) {
	case string:
		return max(uint64(len(x)), 1)
	case bool, nil, json.Number:
		return 1
	case []any:
		n := max(uint64(len(x)), 1)
		for _, e := range x {
			n = max(n, sizeOf(e))
		}
		return n
	case map[string]any:
		n := max(uint64(len(x)), 1)
		for k, e := range x {
			n = max(n, uint64(len(k)), sizeOf(e))
		}
		return n
	}
	return unbounded
}

// sizeFor is the largest size of a value the rule can reach in args.
func (b *costBound) sizeFor(args map[string]any) uint64 {
	n := max(b.literalSize, uint64(len(args)), 1)
	if b.allKeys {
		n = max(n, sizeOf(args))
		if b.traverses {
			n = max(n, saturatingAdd(weightOf(args), b.literalWeight))
		}
		return n
	}
	w := b.literalWeight
	for _, k := range b.keys {
		if v, ok := args[k]; ok {
			n = max(n, uint64(len(k)), sizeOf(v))
			w = saturatingAdd(w, weightOf(v))
		}
	}
	if b.traverses {
		n = max(n, w)
	}
	return n
}

// untracked is an interpreter for the programs of covered rules: the
// environment's functions, planned as cel.Program plans them (constant
// folding and regular expressions compiled once, which the environment's
// cel.OptOptimize asks for), without the cost observer.
var untracked = sync.OnceValues(func() (interpreter.Interpreter, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	disp := interpreter.NewDispatcher()
	for _, fn := range e.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		if err := disp.Add(bindings...); err != nil {
			return nil, err
		}
	}
	attrs := interpreter.NewAttributeFactory(e.Container, e.CELTypeAdapter(), e.CELTypeProvider())
	return interpreter.NewInterpreter(disp, e.Container, e.CELTypeProvider(), e.CELTypeAdapter(), attrs), nil
})

// planUntracked plans a covered rule without cost tracking.
func planUntracked(checked *cel.Ast) (interpreter.InterpretableV2, error) {
	in, err := untracked()
	if err != nil {
		return nil, err
	}
	return in.NewInterpretable(checked.NativeRep(),
		interpreter.InterruptableEval(),
		interpreter.Optimize(),
		interpreter.CompileRegexConstants(interpreter.MatchesRegexOptimization))
}
