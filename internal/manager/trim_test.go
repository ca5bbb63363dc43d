package manager

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// A gateway process caches the definition of a tool it can list, and not
// that of a tool nobody can be offered: not enabled, not approved, or not
// Ready for its current generation.
func TestGatewayCacheKeepsOnlyListableDefinitions(t *testing.T) {
	const hash = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tool := func(change func(*mcpv1alpha1.McpTool)) *mcpv1alpha1.McpTool {
		tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs.echo", Generation: 2}}
		tl.Spec.Enabled, tl.Spec.ApprovedDefinitionHash = true, hash
		tl.Status.LocalName, tl.Status.DefinitionHash = "mcp_docs_echo", hash
		tl.Status.Title, tl.Status.Description = "Echo", "Says it back."
		tl.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)}
		tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: "Ready"}}
		if change != nil {
			change(tl)
		}
		return tl
	}
	for name, c := range map[string]struct {
		tool *mcpv1alpha1.McpTool
		keep bool
	}{
		"listable":          {tool(nil), true},
		"disabled":          {tool(func(t *mcpv1alpha1.McpTool) { t.Spec.Enabled = false }), false},
		"not approved":      {tool(func(t *mcpv1alpha1.McpTool) { t.Spec.ApprovedDefinitionHash = "" }), false},
		"Ready for old gen": {tool(func(t *mcpv1alpha1.McpTool) { t.Status.Conditions[0].ObservedGeneration = 1 }), false},
	} {
		out, err := trimForGateway(c.tool)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*mcpv1alpha1.McpTool)
		kept := got.Status.InputSchema != nil && got.Status.Description != ""
		if kept != c.keep {
			t.Errorf("%s: definition kept %t, want %t", name, kept, c.keep)
		}
		if got.Status.DefinitionHash != hash || got.Status.LocalName == "" {
			t.Errorf("%s: the hash or name the gate decides from was dropped", name)
		}
	}
}
