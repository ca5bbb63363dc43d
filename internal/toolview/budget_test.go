package toolview

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
)

// heavyRules are sixteen rules of about 4,000 bytes each: compiled, they
// hold about 10 MiB.
func heavyRules() []mcpv1alpha1.ArgumentRule {
	expr := `args.a == 'x'` + strings.Repeat(` || args.a == 'x'`, 234)
	rs := make([]mcpv1alpha1.ArgumentRule, 16)
	for i := range rs {
		rs[i] = mcpv1alpha1.ArgumentRule{Name: fmt.Sprintf("r%d", i), Expression: expr}
	}
	return rs
}

func heavyShared(ns, uid string, generation int64) *mcpv1alpha1.McpSharedServer {
	return &mcpv1alpha1.McpSharedServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: uid, UID: types.UID(uid), Generation: generation},
		Spec:       mcpv1alpha1.McpSharedServerSpec{ArgumentRules: []mcpv1alpha1.SharedToolRules{{Tool: "send", Rules: heavyRules()}}},
	}
}

// One namespace's McpSharedServers cannot make a cache hold more than
// MaxNamespaceWeight of compiled rules: the object that would take it past
// is refused without being compiled, saying why; another namespace is
// not affected; and once the first object is gone, a new version of the
// refused one compiles.
func TestANamespaceHoldsAtMostItsBoundOfCompiledRules(t *testing.T) {
	var c SharedCache
	if _, err := c.Get(heavyShared("team", "first", 1), "send"); err != nil {
		t.Fatal(err)
	}
	held := c.Weight("team")
	if held < 8<<20 || held > MaxNamespaceWeight {
		t.Fatalf("the first object's rules weigh %d, want about 10 MiB", held)
	}
	_, err := c.Get(heavyShared("team", "second", 1), "send")
	var inv *argrules.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "namespace team") {
		t.Fatalf("the second object: %v, want a refusal naming the namespace's bound", err)
	}
	if c.Weight("team") != held {
		t.Errorf("the refused object's rules are held: %d, was %d", c.Weight("team"), held)
	}
	problems, err := c.Problems(heavyShared("team", "second", 1))
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], `tool "send": argument rules:`) {
		t.Errorf("problems of the refused object: %q, %v", problems, err)
	}
	if _, err := c.Get(heavyShared("elsewhere", "third", 1), "send"); err != nil {
		t.Errorf("another namespace is refused: %v", err)
	}
	c.Forget(types.NamespacedName{Namespace: "team", Name: "first"})
	if c.Weight("team") != 0 {
		t.Errorf("a forgotten object's rules still count: %d", c.Weight("team"))
	}
	if _, err := c.Get(heavyShared("team", "second", 2), "send"); err != nil {
		t.Errorf("a new version of the refused object, with room: %v", err)
	}
}

// The same bound holds for McpTools' own rules.
func TestAToolsNamespaceHoldsAtMostItsBoundOfCompiledRules(t *testing.T) {
	tool := func(name string) *mcpv1alpha1.McpTool {
		return &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(name), Generation: 1},
			Spec:       mcpv1alpha1.McpToolSpec{ArgumentRules: &mcpv1alpha1.ArgumentRules{Rules: heavyRules()}},
		}
	}
	var c Cache
	if _, err := c.Get(tool("first")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Get(tool("second"))
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Rules == nil || !strings.Contains(err.Error(), "namespace team") {
		t.Fatalf("the second tool: %v, want its rules refused for the namespace's bound", err)
	}
	c.Forget(types.NamespacedName{Namespace: "team", Name: "first"})
	second := tool("second")
	second.Generation = 2
	if _, err := c.Get(second); err != nil {
		t.Errorf("a new version of the refused tool, with room: %v", err)
	}
}
