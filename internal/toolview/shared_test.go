package toolview

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
)

func sharedServer(generation int64, entries ...mcpv1alpha1.SharedToolRules) *mcpv1alpha1.McpSharedServer {
	return &mcpv1alpha1.McpSharedServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs", UID: "ss-1", Generation: generation},
		Spec:       mcpv1alpha1.McpSharedServerSpec{ArgumentRules: entries},
	}
}

// A consumer's rules are named by their source, apply only to the tool
// they name, and refuse what they do not allow.
func TestSharedRulesNameTheirSourceAndApplyToTheirTool(t *testing.T) {
	ss := sharedServer(1, mcpv1alpha1.SharedToolRules{Tool: "send", Rules: []mcpv1alpha1.ArgumentRule{
		{Name: "internal-only", Expression: `args.to.endsWith('@example.com')`, Message: "internal mail only"},
	}})
	p, err := SharedRules(ss, "send")
	if err != nil {
		t.Fatal(err)
	}
	const value = "zq-outsider@elsewhere.net"
	_, refused := p.Apply(map[string]any{"to": value})
	if refused == nil || refused.Kind != argrules.RuleFailed || refused.Name != "mcpsharedserver/docs/internal-only" {
		t.Fatalf("refusal = %+v", refused)
	}
	if strings.Contains(refused.Text(), value) {
		t.Errorf("the refusal echoes the argument: %s", refused.Text())
	}
	if _, refused := p.Apply(map[string]any{"to": "a@example.com"}); refused != nil {
		t.Errorf("refused an allowed call: %+v", refused)
	}
	other, err := SharedRules(ss, "read")
	if err != nil || !other.Empty() {
		t.Errorf("rules for a tool the object does not name: %v, %v", other, err)
	}
}

// Every tool whose rules do not compile is a problem naming the tool and
// the rule; a tool whose rules compile is none.
func TestSharedRulesProblemsNameToolAndRule(t *testing.T) {
	ss := sharedServer(1,
		mcpv1alpha1.SharedToolRules{Tool: "send", Rules: []mcpv1alpha1.ArgumentRule{{Name: "ok", Expression: "true"}}},
		mcpv1alpha1.SharedToolRules{Tool: "read", Rules: []mcpv1alpha1.ArgumentRule{
			{Name: "half", Expression: "args.x <"},
			{Name: "not-bool", Expression: "1 + 1"},
		}},
	)
	problems, err := SharedRulesProblems(ss)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 {
		t.Fatalf("problems = %q, want one, for read", problems)
	}
	for _, want := range []string{`tool "read"`, `rule "mcpsharedserver/docs/half": does not compile`, `rule "mcpsharedserver/docs/not-bool"`} {
		if !strings.Contains(problems[0], want) {
			t.Errorf("problem %q does not say %s", problems[0], want)
		}
	}
	if _, err := SharedRules(ss, "read"); err == nil {
		t.Error("rules that do not compile compiled")
	}
	if p, _ := SharedRulesProblems(sharedServer(1)); p != nil {
		t.Errorf("problems without rules: %q", p)
	}
}

// The cache compiles a version once, and a new generation again.
func TestSharedCacheCompilesOncePerGeneration(t *testing.T) {
	rules := mcpv1alpha1.SharedToolRules{Tool: "send", Rules: []mcpv1alpha1.ArgumentRule{{Name: "ok", Expression: "true"}}}
	var c SharedCache
	first, err := c.Get(sharedServer(1, rules), "send")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Get(sharedServer(1, rules), "send")
	if again != first {
		t.Error("the same generation was compiled again")
	}
	rules.Rules = []mcpv1alpha1.ArgumentRule{{Name: "ok", Expression: "args.x <"}}
	if _, err := c.Get(sharedServer(2, rules), "send"); err == nil {
		t.Error("a new generation was served from the old one's rules")
	}
	if len(c.m) != 1 {
		t.Errorf("the cache keeps %d entries, want only the newest generation's", len(c.m))
	}
}
