package argrules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// compileErr compiles one rule and returns why it is refused, or "".
func compileErr(t *testing.T, expr string) string {
	t.Helper()
	_, err := Compile(nil, Layer{Rules: rules(nil, mcpv1alpha1.ArgumentRule{Name: "r", Expression: expr})})
	if err == nil {
		return ""
	}
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].What != `rule "r"` {
		t.Fatalf("%s: error %v, want one problem of rule r", expr, err)
	}
	return inv.Problems[0].Why
}

// The attack of a 3,600-byte pattern, (?:a?){1000} three hundred times:
// legal RE2 that compiled to 600,000 instructions and hundreds of MiB
// per rule. It is refused for its length, and the same pattern short
// enough to pass the length bound is refused for its program, before
// either is compiled.
func TestAPatternThatCompilesToAHugeProgramIsRefused(t *testing.T) {
	for _, n := range []int{300, 80, 3} {
		pattern := strings.Repeat(`(?:a?){1000}`, n)
		for _, expr := range []string{
			`args.s.matches('` + pattern + `')`,
			`matches(args.s, '` + pattern + `')`,
			`args.s.find('` + pattern + `') == ''`,
			`args.s.findAll('` + pattern + `').size() == 0`,
			// Two patterns under the bound apart, over it together.
			`args.s.matches('` + strings.Repeat(`(?:a?){1000}`, 2) + `') || args.s.matches('(?:b?){1000}')`,
		} {
			if n < 3 && !strings.Contains(expr, "||") {
				continue
			}
			why := compileErr(t, expr)
			if !strings.Contains(why, "regular expression") {
				t.Errorf("pattern of %d bytes in %.40s...: refusal %q, want one about its regular expression", len(pattern), expr, why)
			}
		}
	}
	// A pattern of the size people write compiles.
	if why := compileErr(t, `args.to.all(r, r.matches('^[a-z0-9._%+-]{1,64}@[a-z0-9.-]{1,255}\\.[a-z]{2,24}$'))`); why != "" {
		t.Errorf("an address pattern is refused: %s", why)
	}
}

// A pattern that is not a literal could be anything at run time: it is
// refused.
func TestAPatternMustBeAStringLiteral(t *testing.T) {
	for _, expr := range []string{
		`args.s.matches(args.p)`,
		`args.s.matches('^' + args.p)`,
		`matches(args.s, args.p)`,
		`args.s.find(args.p) == ''`,
		`args.to.all(p, args.s.findAll(p).size() == 0)`,
	} {
		if why := compileErr(t, expr); !strings.Contains(why, "must be a string literal") {
			t.Errorf("%s: refusal %q, want one saying the pattern must be a literal", expr, why)
		}
	}
}

// Matching is charged by the program times the input: a pattern of 2,002
// instructions on a 512-byte argument is a million steps, and is stopped
// at its cost limit (CEL charged it 156 units, by the pattern's length).
func TestMatchingIsChargedByTheProgramAndTheInput(t *testing.T) {
	p := compileOne(t, `args.s.matches('(?:a?){1000}b')`)
	_, refused := p.Apply(map[string]any{"s": strings.Repeat("a", 512)})
	if refused == nil || refused.Kind != RuleNotEvaluated || !refused.CostExceeded {
		t.Fatalf("refusal %+v, want RuleNotEvaluated with CostExceeded", refused)
	}
	// The same pattern on a short argument is cheap enough.
	if _, refused := p.Apply(map[string]any{"s": "aab"}); refused != nil {
		t.Fatalf("a short argument is refused: %+v", refused)
	}
}

// nestedList is a list nested depth levels deep, two elements at each
// level, whose every leaf is leaf.
func nestedList(depth int, leaf any) any {
	v := leaf
	for range depth {
		v = []any{v, v}
	}
	return v
}

// recipients are n deeply nested lists, equal but for a last element:
// comparing two reads all of both.
func recipients(n, depth int) map[string]any {
	list := make([]any, n)
	for i := range list {
		list[i] = []any{nestedList(depth, "x"), fmt.Sprint(i)}
	}
	return map[string]any{"to": list}
}

// duplicateRules are rules that no recipient is listed twice, written as
// people write them: each compares every recipient with every other.
var duplicateRules = []string{
	`args.to.all(x, args.to.exists_one(y, y == x))`,
	`args.to.all(x, args.to.filter(y, y == x).size() == 1)`,
	`args.to.all(x, args.to.filter(y, x in [y]).size() == 1)`,
	`args.to.distinct().size() == args.to.size()`,
	`sets.equivalent(args.to, args.to.distinct())`,
}

// The attack of a "no duplicate recipients" rule over deeply nested
// equal lists, which CEL charged by the lists' lengths (a fiftieth of the
// limit) while it ran for seconds: comparisons are charged by what they
// read. Arguments as large as the gateway decodes (100,000 values) run no
// rule at all; arguments within the rules' bounds are stopped at the cost
// limit.
func TestComparingNestedValuesIsChargedByWhatItReads(t *testing.T) {
	huge := recipients(100, 9) // 100 recipients of 1,025 values each
	within := recipients(18, 9)
	if tooLarge(within) {
		t.Fatal("the smaller call is beyond the argument bounds")
	}
	for _, expr := range duplicateRules {
		p := compileOne(t, expr)
		_, refused := p.Apply(huge)
		if refused == nil || refused.Kind != RuleNotEvaluated || !(refused.TooLarge || refused.CostExceeded) {
			t.Errorf("%s on 100,000 values: refusal %+v, want RuleNotEvaluated for size or cost", expr, refused)
		}
		for _, tracked := range []bool{false, true} {
			_, refused = p.apply(context.Background(), within, !tracked)
			if refused == nil || refused.Kind != RuleNotEvaluated || !refused.CostExceeded {
				t.Errorf("%s on %d values (tracked %v): refusal %+v, want RuleNotEvaluated with CostExceeded", expr, 18*1025, tracked, refused)
			}
		}
		// A call of a few plain recipients passes.
		if _, refused := p.Apply(args(t, `{"to":["a@example.com","b@example.com"]}`)); refused != nil {
			t.Errorf("%s: plain recipients refused: %+v", expr, refused)
		}
	}
}

// Arguments nested too deep or holding too many values run no rule.
func TestArgumentsBeyondTheBoundsRunNoRule(t *testing.T) {
	p := compileOne(t, `true`)
	chain := func(depth int) any {
		var v any = "x"
		for range depth {
			v = []any{v}
		}
		return v
	}
	// The argument map is the first level, the leaf the last.
	deep := map[string]any{"to": chain(MaxArgumentDepth - 2)}
	if _, refused := p.Apply(deep); refused != nil {
		t.Fatalf("arguments %d levels deep refused: %+v", MaxArgumentDepth, refused)
	}
	deeper := map[string]any{"to": chain(MaxArgumentDepth - 1)}
	wide := map[string]any{"to": make([]any, MaxArgumentValues)}
	for name, a := range map[string]map[string]any{"deeper": deeper, "wider": wide} {
		_, refused := p.Apply(a)
		if refused == nil || refused.Kind != RuleNotEvaluated || !refused.TooLarge || refused.Name != "r" {
			t.Errorf("%s: refusal %+v, want RuleNotEvaluated with TooLarge naming the rule", name, refused)
		}
		if !strings.Contains(refused.Text(), fmt.Sprint(MaxArgumentValues)) {
			t.Errorf("%s: the agent is told %q", name, refused.Text())
		}
	}
}

// A rule stops when its call ends: evaluated with a context already
// done, a rule that loops is stopped, tracked or not.
func TestARuleStopsWhenItsCallEnds(t *testing.T) {
	p := compileOne(t, `args.to.all(a, a.size() > 0)`)
	list := make([]any, 10*interruptEvery)
	for i := range list {
		list[i] = "a"
	}
	call := map[string]any{"to": list}
	if _, refused := p.Apply(call); refused != nil {
		t.Fatalf("refused: %+v", refused)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, untracked := range []bool{true, false} {
		_, refused := p.apply(ctx, call, untracked)
		if refused == nil || refused.Kind != RuleNotEvaluated || !refused.Interrupted {
			t.Errorf("untracked %v: refusal %+v, want RuleNotEvaluated with Interrupted", untracked, refused)
		}
	}
}
