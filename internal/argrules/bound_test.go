package argrules

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// coveredRules are rules whose cost the bound covers: they run untracked
// on arguments within their bound's size.
var coveredRules = []string{
	`args.to.all(r, r.endsWith('@example.com'))`,
	`args.to.size() + (has(args.cc) ? args.cc.size() : 0) <= 10`,
	`!has(args.cc) || args.cc.all(r, r.endsWith('@example.com'))`,
	`args.subject.size() <= 200 && !args.subject.lowerAscii().contains('password')`,
	`args.body.size() <= 65536`,
	`args.n > 10 && args.n < 1000`,
	`args.n == 9007199254740993`,
	`args.tags.exists(t, t == 'urgent')`,
	`args.tags.exists_one(t, t.startsWith('x'))`,
	`'admin' in args.tags`,
	`args.o.all(k, k.size() < 5)`,
	`args.o.all(k, v, v != null)`,
	`args.subject.matches('^[a-z ]+$')`,
	`args.subject.upperAscii().trim() != 'X'`,
	`args.to[0].endsWith('.org')`,
	`args.o['k'] == 1`,
	`size(args) < 6`,
	`args.all(k, k != 'secret')`,
	`args.to.all(a, args.to.all(b, a.contains(b) || b.contains(a) || true))`,
	`[1, 2, 3].exists(x, x == args.n)`,
	`{'a': 1, 'b': 2}.exists(k, k == args.subject)`,
	`has(args.cc) ? args.cc.size() > 0 : true`,
	`-args.n < 0 || args.n % 2 == 0`,
	`args.subject < 'm' || args.subject >= 'x'`,
	`args.n / 2 * 3 - 1 > 0`,
	`args.f * 2.0 > 1.0`,
	`args.o.k.size() > 1 && args.o.k[0] == 'a'`,
	`args.to.exists(a, args.tags.exists(b, a == b))`,
	`!(args.to.size() > 3) || args.subject != ''`,
}

// uncoveredRules always run under their cost limit.
var uncoveredRules = []string{
	`args.to.map(x, x + '!').size() > 0`,
	`args.subject + args.subject != ''`,
	`has(args.o.k)`,
	`type(args.n) == int`,
	`args.to.filter(x, true).size() >= 0`,
	`args.subject.replace('a', 'aa').size() > 0`,
	`args.to.all(args, args.size() > 0)`,
	`args.?subject.orValue('') != 'x'`,
}

// randomValue is a JSON value as the gateway decodes one: nested maps and
// lists, strings with and without non-ASCII text, numbers as written
// (some beyond an int64, some not integers), bools and nulls.
func randomValue(r *rand.Rand, depth int) any {
	k := r.Intn(10)
	if depth > 3 && k >= 7 {
		k = r.Intn(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return json.Number([]string{"0", "-7", "11", "9007199254740993", "18446744073709551616", "1.5", "-2.25e3", "1e400", "999"}[r.Intn(9)])
	case 3, 4, 5:
		return randomString(r)
	case 6:
		return []string{"urgent", "admin", "secret", "xray", "a@example.com", "b@example.org"}[r.Intn(6)]
	case 7:
		l := make([]any, r.Intn(6))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return l
	default:
		m := map[string]any{}
		for i := r.Intn(5); i > 0; i-- {
			m[randomKey(r)] = randomValue(r, depth+1)
		}
		return m
	}
}

func randomString(r *rand.Rand) string {
	parts := []string{"a", "Z", "x", "@example.com", ".org", "password", "PassWord", "é", "日本", "🙂", " ", "", "urgent"}
	var b strings.Builder
	for i := r.Intn(8); i > 0; i-- {
		b.WriteString(parts[r.Intn(len(parts))])
	}
	return b.String()
}

func randomKey(r *rand.Rand) string {
	return []string{"to", "cc", "subject", "body", "n", "f", "o", "tags", "k", "secret", "ключ"}[r.Intn(11)]
}

// randomArguments are a call's arguments: the keys rules read, each
// present or missing, of the expected type or another.
func randomArguments(r *rand.Rand) map[string]any {
	m := map[string]any{}
	for i := r.Intn(8); i > 0; i-- {
		key := randomKey(r)
		switch {
		case r.Intn(3) > 0 && (key == "to" || key == "cc" || key == "tags"):
			l := make([]any, r.Intn(6))
			for i := range l {
				l[i] = []string{"a@example.com", "b@example.com", "c@example.org", "urgent", "xray", randomString(r)}[r.Intn(6)]
			}
			m[key] = l
		case r.Intn(3) > 0 && (key == "n" || key == "f"):
			m[key] = json.Number([]string{"0", "42", "999", "1000", "9007199254740993", "2.5", "-1", "1e400"}[r.Intn(8)])
		default:
			m[key] = randomValue(r, 0)
		}
	}
	return m
}

func compileOne(t *testing.T, expr string) *Program {
	t.Helper()
	p, err := Compile(nil, Layer{Rules: rules(nil, mcpv1alpha1.ArgumentRule{Name: "r", Expression: expr, Message: "m"})})
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return p
}

// TestUntrackedEvaluationGivesTheTrackedVerdicts: Apply, which runs
// covered rules without tracking when it may, refuses and passes exactly
// the calls that evaluating every rule under its cost limit does, with
// the same refusal, over many shapes of arguments.
func TestUntrackedEvaluationGivesTheTrackedVerdicts(t *testing.T) {
	r := rand.New(rand.NewSource(30))
	calls := make([]map[string]any, 400)
	for i := range calls {
		calls[i] = randomArguments(r)
	}
	// Shapes the rules were written for, so that their true branches run.
	for _, js := range []string{
		`{"to":["a@example.com","b@example.com"],"cc":["c@example.com"],"subject":"hello","body":"text","n":42,"f":1.5,"o":{"k":"ab"},"tags":["urgent","admin"]}`,
		`{"to":["x@example.org"],"subject":"Your PASSWORD","tags":["xray","admin"],"n":9007199254740993,"o":{"k":["a","b"]}}`,
		`{"to":[],"subject":"zzz","n":1000,"o":{},"tags":[]}`,
		`{"to":["🙂@example.com"],"subject":"日本語のテキスト","n":-3}`,
		`{}`,
	} {
		calls = append(calls, args(t, js))
	}
	// A value no JSON decoder gives has no known size; it is still
	// evaluated, under the limit.
	calls = append(calls, map[string]any{"n": float64(2), "to": []any{"a@example.com"}})

	for _, expr := range append(append([]string{}, coveredRules...), uncoveredRules...) {
		p := compileOne(t, expr)
		untracked := 0
		for _, call := range calls {
			gotOut, gotRefusal := p.apply(context.Background(), call, true)
			wantOut, wantRefusal := p.apply(context.Background(), call, false)
			if !reflect.DeepEqual(gotRefusal, wantRefusal) {
				t.Fatalf("%s on %v: refusal %+v, tracked evaluation gives %+v", expr, call, gotRefusal, wantRefusal)
			}
			if !reflect.DeepEqual(gotOut, wantOut) {
				t.Fatalf("%s on %v: arguments %v, tracked evaluation gives %v", expr, call, gotOut, wantOut)
			}
			if ru := p.rules[0]; ru.fast != nil && ru.bound.sizeFor(call) <= ru.bound.maxSize {
				untracked++
			}
		}
		covered := p.rules[0].fast != nil
		if want := contains(coveredRules, expr); covered != want {
			t.Errorf("%s: covered = %v, want %v", expr, covered, want)
		}
		if covered && untracked < len(calls)/2 {
			t.Errorf("%s: evaluated untracked on %d of %d calls", expr, untracked, len(calls))
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// TestTheBoundIsAboveWhatARuleSpends: on every call, what a covered rule
// spends under cost tracking is at most its bound at the size of the
// arguments it reads: so a call it runs untracked could not have been
// stopped.
func TestTheBoundIsAboveWhatARuleSpends(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	calls := make([]map[string]any, 300)
	for i := range calls {
		calls[i] = randomArguments(r)
	}
	for _, expr := range coveredRules {
		p := compileOne(t, expr)
		ru := p.rules[0]
		for _, call := range append(calls, edgeArguments(ru.bound.maxSize)) {
			_, det, err := ru.prg.Eval(&argsActivation{args: celValue(call)})
			if det == nil || det.ActualCost() == nil {
				t.Fatalf("%s: no cost tracked (err %v)", expr, err)
			}
			spent := float64(*det.ActualCost())
			if bound := ru.bound.costAt(ru.bound.sizeFor(call)); spent > bound {
				t.Fatalf("%s on %v: spent %v, above its bound %v", expr, call, spent, bound)
			}
		}
	}
}

// edgeArguments are the largest arguments of the keys rules read that a
// bound of maxSize still runs untracked: every list maxSize long, every
// string maxSize bytes.
func edgeArguments(maxSize uint64) map[string]any {
	n := int(min(maxSize, 4096))
	str := strings.Repeat("a", n)
	list := make([]any, n)
	for i := range list {
		list[i] = str
	}
	return map[string]any{"to": list, "cc": list, "tags": list, "subject": str, "body": str, "n": json.Number("7")}
}

// TestAnAgentCannotOutgrowTheLimitOfACoveredRule: a covered rule whose
// cost grows with the cube of a list's length runs untracked on a small
// call; arguments made large enough to exceed its limit are evaluated under
// the limit and refused for it, and arguments at the largest size it runs
// untracked stay within the limit even under tracking.
func TestAnAgentCannotOutgrowTheLimitOfACoveredRule(t *testing.T) {
	expr := `args.to.all(a, args.to.all(b, args.to.all(c, a.size() + b.size() + c.size() >= 0)))`
	p := compileOne(t, expr)
	ru := p.rules[0]
	if ru.fast == nil {
		t.Fatal("the rule is not covered by the bound")
	}
	small := args(t, `{"to":["a","b","c"]}`)
	if ru.bound.sizeFor(small) > ru.bound.maxSize {
		t.Fatalf("a small call (size %d) is above the untracked size %d", ru.bound.sizeFor(small), ru.bound.maxSize)
	}
	if _, refused := p.Apply(small); refused != nil {
		t.Fatalf("small call refused: %+v", refused)
	}

	edge := edgeArguments(ru.bound.maxSize)
	_, det, err := ru.prg.Eval(&argsActivation{args: celValue(edge)})
	if err != nil || *det.ActualCost() > RuleCostLimit {
		t.Fatalf("at the untracked size %d the rule spends %d (err %v), above its limit", ru.bound.maxSize, *det.ActualCost(), err)
	}

	recipients := func(n int) map[string]any {
		list := make([]any, n)
		for i := range list {
			list[i] = fmt.Sprint(i)
		}
		return map[string]any{"to": list}
	}
	// Just above the untracked size, the verdict is the tracked one.
	above := recipients(int(ru.bound.maxSize) + 1)
	_, got := p.Apply(above)
	if _, want := p.apply(context.Background(), above, false); !reflect.DeepEqual(got, want) {
		t.Fatalf("above the untracked size: refusal %+v, want %+v", got, want)
	}
	for _, n := range []int{60, 500} {
		_, refused := p.Apply(recipients(n))
		if refused == nil || refused.Kind != RuleNotEvaluated || !refused.CostExceeded {
			t.Fatalf("%d recipients: refusal %+v, want RuleNotEvaluated with CostExceeded", n, refused)
		}
	}
}

// TestTheMailRulesRunUntracked: the five rules of the benchmark run
// without cost tracking on a call of its size.
func TestTheMailRulesRunUntracked(t *testing.T) {
	var rs []mcpv1alpha1.ArgumentRule
	for i, expr := range coveredRules[:5] {
		rs = append(rs, mcpv1alpha1.ArgumentRule{Name: fmt.Sprint(i), Expression: expr})
	}
	p, err := Compile(nil, Layer{Rules: rules(nil, rs...)})
	if err != nil {
		t.Fatal(err)
	}
	call := map[string]any{
		"from":    "agents@example.com",
		"to":      []any{"ana@example.com", "bo@example.com", "cy@example.com"},
		"cc":      []any{"team@example.com"},
		"subject": "Weekly report",
		"body":    strings.Repeat("All systems nominal. ", 50),
	}
	for _, ru := range p.rules {
		if ru.fast == nil || ru.bound.sizeFor(call) > ru.bound.maxSize {
			t.Errorf("rule %s runs under cost tracking", ru.name)
		}
	}
}
