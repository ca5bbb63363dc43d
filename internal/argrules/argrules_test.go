package argrules

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

const mailSchema = `{"type":"object","properties":{
	"to":{"type":"array","items":{"type":"string"}},
	"subject":{"type":"string"},
	"priority":{"type":"integer","enum":[1,2,3]},
	"tenant":{"type":"string"},
	"dryRun":{"type":"boolean"}
},"required":["to","tenant"]}`

func rules(fixed []mcpv1alpha1.FixedArgument, rs ...mcpv1alpha1.ArgumentRule) *mcpv1alpha1.ArgumentRules {
	return &mcpv1alpha1.ArgumentRules{Fixed: fixed, Rules: rs}
}

func mustCompile(t *testing.T, layers ...Layer) *Program {
	t.Helper()
	p, err := Compile([]byte(mailSchema), layers...)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

func args(t *testing.T, js string) map[string]any {
	t.Helper()
	v, err := decodeJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func TestApplySetsFixedArgumentsAndKeepsTheCallersMap(t *testing.T) {
	p := mustCompile(t, Layer{Rules: rules([]mcpv1alpha1.FixedArgument{{Name: "tenant", Value: `"acme"`}, {Name: "priority", Value: `2`}})})
	in := args(t, `{"to":["a@example.com"]}`)
	out, refused := p.Apply(in)
	if refused != nil {
		t.Fatalf("refused: %+v", refused)
	}
	b, _ := json.Marshal(out)
	if string(b) != `{"priority":2,"tenant":"acme","to":["a@example.com"]}` {
		t.Errorf("upstream arguments = %s", b)
	}
	if _, set := in["tenant"]; set {
		t.Error("Apply changed the caller's arguments")
	}
	if got := strings.Join(p.Fixed(), ","); got != "tenant,priority" {
		t.Errorf("Fixed() = %s", got)
	}
}

func TestApplyRefusesAFixedArgumentTheCallSends(t *testing.T) {
	p := mustCompile(t, Layer{Rules: rules([]mcpv1alpha1.FixedArgument{{Name: "tenant", Value: `"acme"`}})})
	for _, sent := range []string{`{"tenant":"acme"}`, `{"tenant":"other"}`, `{"tenant":null}`} {
		_, refused := p.Apply(args(t, sent))
		if refused == nil || refused.Kind != FixedArgumentSent || refused.Name != "tenant" {
			t.Errorf("%s: refusal = %+v, want FixedArgumentSent naming tenant", sent, refused)
		}
	}
}

func TestApplyEvaluatesEveryRuleOnTheUpstreamArguments(t *testing.T) {
	p := mustCompile(t, Layer{Rules: rules(
		[]mcpv1alpha1.FixedArgument{{Name: "tenant", Value: `"acme"`}},
		mcpv1alpha1.ArgumentRule{Name: "to-domain", Expression: `args.to.all(r, r.endsWith('@example.com'))`, Message: "recipients must be in example.com"},
		mcpv1alpha1.ArgumentRule{Name: "sees-fixed", Expression: `args.tenant == 'acme'`},
		mcpv1alpha1.ArgumentRule{Name: "priority", Expression: `!has(args.priority) || args.priority <= 2`},
		mcpv1alpha1.ArgumentRule{Name: "dry-run", Expression: `has(args.dryRun) ? args.dryRun : true`},
	)})
	cases := []struct {
		args     string
		kind     string
		rule     string
		contains string
	}{
		{args: `{"to":["a@example.com","b@example.com"]}`},
		{args: `{"to":["a@example.com"],"priority":2,"dryRun":true}`},
		{args: `{"to":["a@example.com","x@evil.test"]}`, kind: RuleFailed, rule: "to-domain", contains: "recipients must be in example.com"},
		{args: `{"to":["a@example.com"],"priority":3}`, kind: RuleFailed, rule: "priority"},
		{args: `{"to":["a@example.com"],"priority":2.5}`, kind: RuleFailed, rule: "priority"},
		{args: `{"to":["a@example.com"],"dryRun":false}`, kind: RuleFailed, rule: "dry-run"},
		// A missing argument the rule reads, or one of another type: not
		// evaluated, and refused.
		{args: `{}`, kind: RuleNotEvaluated, rule: "to-domain"},
		{args: `{"to":"a@example.com"}`, kind: RuleNotEvaluated, rule: "to-domain"},
		{args: `{"to":["a@example.com"],"dryRun":"yes"}`, kind: RuleNotEvaluated, rule: "dry-run"},
	}
	for _, c := range cases {
		_, refused := p.Apply(args(t, c.args))
		switch {
		case c.kind == "" && refused != nil:
			t.Errorf("%s: refused %+v", c.args, refused)
		case c.kind != "" && (refused == nil || refused.Kind != c.kind || refused.Name != c.rule):
			t.Errorf("%s: refusal = %+v, want %s of %s", c.args, refused, c.kind, c.rule)
		case refused != nil && !strings.Contains(refused.Text(), c.contains):
			t.Errorf("%s: text %q lacks %q", c.args, refused.Text(), c.contains)
		}
	}
}

func TestRefusalTextNamesTheRuleAndNeverTheArguments(t *testing.T) {
	secretish := "x-7f3a9c-do-not-echo@evil.test"
	p := mustCompile(t, Layer{Rules: rules(nil,
		mcpv1alpha1.ArgumentRule{Name: "to-domain", Expression: `args.to.all(r, r.endsWith('@example.com'))`, Message: "recipients must be in example.com"},
		mcpv1alpha1.ArgumentRule{Name: "subject-int", Expression: `int(args.subject) > 0`},
	)})
	for _, a := range []string{`{"to":["` + secretish + `"]}`, `{"to":[],"subject":"` + secretish + `"}`} {
		_, refused := p.Apply(args(t, a))
		if refused == nil {
			t.Fatalf("%s was allowed", a)
		}
		text := refused.Text()
		if strings.Contains(text, "do-not-echo") || strings.Contains(refused.Message, "do-not-echo") {
			t.Errorf("the refusal echoes an argument: %q", text)
		}
		if !strings.Contains(text, `"`+refused.Name+`"`) {
			t.Errorf("the refusal does not name its rule: %q", text)
		}
	}
}

func TestARuleThatSpendsMoreThanItsCostLimitRefusesTheCall(t *testing.T) {
	p := mustCompile(t, Layer{Rules: rules(nil, mcpv1alpha1.ArgumentRule{
		Name:       "quadratic",
		Expression: `args.to.all(a, args.to.all(b, a.size() + b.size() >= 0))`,
	})})
	small := args(t, `{"to":["a","b","c"]}`)
	if _, refused := p.Apply(small); refused != nil {
		t.Fatalf("a small call was refused: %+v", refused)
	}
	many := make([]any, 1000)
	for i := range many {
		many[i] = "a@example.com"
	}
	_, refused := p.Apply(map[string]any{"to": many})
	if refused == nil || refused.Kind != RuleNotEvaluated || !refused.CostExceeded {
		t.Fatalf("refusal = %+v, want RuleNotEvaluated with CostExceeded", refused)
	}
	if !strings.Contains(refused.Text(), "cost limit") {
		t.Errorf("text %q does not say the cost limit ran out", refused.Text())
	}
}

func TestCompileReportsEveryProblemWithoutTheFixedValues(t *testing.T) {
	_, err := Compile([]byte(mailSchema), Layer{Rules: rules(
		[]mcpv1alpha1.FixedArgument{
			{Name: "tenant", Value: `acme-secret-value`},      // not JSON: a string needs its quotes
			{Name: "nope", Value: `"v"`},                      // not in the schema
			{Name: "subject", Value: `42`},                    // not a string
			{Name: "priority", Value: `7`},                    // not in the enum
			{Name: "dryRun", Value: `true`},                   // fine
			{Name: "to", Value: `["a@example.com"] trailing`}, // trailing data
		},
		mcpv1alpha1.ArgumentRule{Name: "syntax", Expression: `args.to.all(r, `},
		mcpv1alpha1.ArgumentRule{Name: "not-bool", Expression: `args.to.size()`},
		mcpv1alpha1.ArgumentRule{Name: "undeclared", Expression: `request.user == 'x'`},
		mcpv1alpha1.ArgumentRule{Name: "fine", Expression: `true`},
	)})
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v, want an InvalidError", err)
	}
	want := []string{
		`fixed argument "tenant"`, `fixed argument "nope"`, `fixed argument "subject"`, `fixed argument "priority"`, `fixed argument "to"`,
		`rule "syntax"`, `rule "not-bool"`, `rule "undeclared"`,
	}
	if len(inv.Problems) != len(want) {
		t.Fatalf("problems = %v, want one for each of %v", inv.Problems, want)
	}
	for i, w := range want {
		if inv.Problems[i].What != w {
			t.Errorf("problem %d is %q, want %q", i, inv.Problems[i].What, w)
		}
	}
	if strings.Contains(err.Error(), "acme-secret-value") {
		t.Errorf("the error shows a fixed value: %v", err)
	}
}

func TestALaterLayerAddsRulesAndCannotRefixAnArgument(t *testing.T) {
	owner := Layer{Rules: rules([]mcpv1alpha1.FixedArgument{{Name: "tenant", Value: `"acme"`}},
		mcpv1alpha1.ArgumentRule{Name: "to-domain", Expression: `args.to.all(r, r.endsWith('@example.com'))`})}
	consumer := Layer{Source: "team-a/grant", Rules: rules(nil,
		mcpv1alpha1.ArgumentRule{Name: "one-recipient", Expression: `args.to.size() == 1`})}
	p := mustCompile(t, owner, consumer)
	if _, refused := p.Apply(args(t, `{"to":["a@example.com"]}`)); refused != nil {
		t.Fatalf("refused: %+v", refused)
	}
	// The owner's rule still applies under the consumer's.
	if _, refused := p.Apply(args(t, `{"to":["a@evil.test"]}`)); refused == nil || refused.Name != "to-domain" {
		t.Errorf("owner's rule: refusal = %+v", refused)
	}
	if _, refused := p.Apply(args(t, `{"to":["a@example.com","b@example.com"]}`)); refused == nil || refused.Name != "team-a/grant/one-recipient" {
		t.Errorf("consumer's rule: refusal = %+v", refused)
	}
	refix := Layer{Source: "team-a/grant", Rules: rules([]mcpv1alpha1.FixedArgument{{Name: "tenant", Value: `"other"`}})}
	_, err := Compile([]byte(mailSchema), owner, refix)
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || !strings.Contains(inv.Problems[0].What, "team-a/grant") {
		t.Errorf("a second layer fixing the owner's argument: err = %v", err)
	}
}

func TestAnEmptyProgramPassesCallsThrough(t *testing.T) {
	p := mustCompile(t)
	in := args(t, `{"to":["x"]}`)
	out, refused := p.Apply(in)
	if refused != nil || len(out) != 1 {
		t.Errorf("Apply = %v, %+v", out, refused)
	}
	if !p.Empty() || !(*Program)(nil).Empty() {
		t.Error("a program without rules is not Empty")
	}
}

func TestNumbersReachRulesAsCELNumbers(t *testing.T) {
	p := mustCompile(t, Layer{Rules: rules(nil,
		mcpv1alpha1.ArgumentRule{Name: "int", Expression: `args.n == 9007199254740993 && type(args.n) == int`},
		mcpv1alpha1.ArgumentRule{Name: "double", Expression: `args.f > 1.25 && type(args.f) == double`},
		mcpv1alpha1.ArgumentRule{Name: "nested", Expression: `args.o.list[0] == 1`},
	)})
	in := args(t, `{"n":9007199254740993,"f":1.5,"o":{"list":[1]}}`)
	out, refused := p.Apply(in)
	if refused != nil {
		t.Fatalf("refused: %+v", refused)
	}
	// What goes upstream keeps the number as written.
	b, _ := json.Marshal(out)
	if !strings.Contains(string(b), `"n":9007199254740993`) {
		t.Errorf("upstream = %s", b)
	}
}

func FuzzCompile(f *testing.F) {
	f.Add(`args.to.all(r, r.endsWith('@example.com'))`, `"acme"`)
	f.Add(`has(args.x) && args.x.matches('^[a-z]+$')`, `[1,2]`)
	f.Add(`size(args) < 3`, `{"a":null}`)
	f.Add(`((((((((((args))))))))))`, `tru`)
	f.Add(`args.to.exists(a, a.lowerAscii().contains('a') && a.size() < 3)`, `"x"`)
	f.Add(`args.o.k.all(x, x > 1) || 'a' in args.to`, `null`)
	f.Fuzz(func(t *testing.T, expr, value string) {
		p, err := Compile([]byte(mailSchema), Layer{Rules: rules(
			[]mcpv1alpha1.FixedArgument{{Name: "subject", Value: value}},
			mcpv1alpha1.ArgumentRule{Name: "r", Expression: expr},
		)})
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 {
				t.Fatalf("Compile failed without an InvalidError: %v", err)
			}
			if value != "" && len(value) > 3 && strings.Contains(inv.Error(), value) && !strings.Contains(expr, value) {
				t.Fatalf("the error shows the fixed value: %v", err)
			}
			return
		}
		// Whatever compiles is applied without a panic, within its cost
		// limit, to arguments of every shape, with the verdict of
		// evaluating it under its cost limit.
		for _, a := range []string{`{}`, `{"to":["a"],"subject":1}`, `{"to":[[[]]],"x":{"y":null}}`, `{"to":["a@example.com","é"],"n":12,"o":{"k":[1.5]}}`} {
			v, _ := decodeJSON([]byte(a))
			out, refused := p.Apply(v.(map[string]any))
			wantOut, wantRefused := p.apply(context.Background(), v.(map[string]any), false)
			if !reflect.DeepEqual(refused, wantRefused) || !reflect.DeepEqual(out, wantOut) {
				t.Fatalf("%s on %s: %v %+v, tracked evaluation gives %v %+v", expr, a, out, refused, wantOut, wantRefused)
			}
		}
	})
}
