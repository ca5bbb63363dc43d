package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// The gateway builds every tool's view itself: a spec that cannot be
// honoured keeps the tool from agents even while its Ready condition (a
// report another writer may have left behind) still says True, and the list
// and the call agree on it.
func TestNoToolWhoseSpecCannotBeHonouredIsListedOrCalled(t *testing.T) {
	const ns = "team"
	tool := func(name string, spec func(*mcpv1alpha1.McpToolSpec)) *mcpv1alpha1.McpTool {
		t := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: types.UID("uid-" + name)},
			Spec:       mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, ApprovedDefinitionHash: hashA},
		}
		spec(&t.Spec)
		t.Status.LocalName, t.Status.EffectiveDataClass, t.Status.DefinitionHash = "mcp_"+name, mcpv1alpha1.DataClassPublic, hashA
		t.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
		t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: metav1.Now()}}
		return t
	}
	rules := func(expr string) func(*mcpv1alpha1.McpToolSpec) {
		return func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{{Name: "r", Expression: expr}}}
		}
	}
	objects := []client.Object{
		server(ns, "docs", mcpv1alpha1.DataClassPublic, false),
		tool("plain", func(*mcpv1alpha1.McpToolSpec) {}),
		tool("good-rules", rules(`args.q.size() < 10`)),
		tool("bad-rules", rules(`args.q.size() <`)),
		tool("bad-fixed", func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Fixed: []mcpv1alpha1.FixedArgument{{Name: "absent", Value: `"x"`}}}
		}),
		tool("bad-text", func(s *mcpv1alpha1.McpToolSpec) {
			s.ReviewedText = &mcpv1alpha1.ReviewedText{Parameters: []mcpv1alpha1.ParameterText{{Name: "absent", Description: "d"}}}
		}),
		&mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
		},
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	o.Authz = allowList{"plain": true, "good-rules": true, "bad-rules": true, "bad-fixed": true, "bad-text": true}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}
	ctx := context.Background()
	visible, err := g.visibleTools(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var listed, callable []string
	for _, v := range visible {
		listed = append(listed, v.tool.Name)
	}
	details := map[string]string{}
	for _, obj := range objects {
		tl, ok := obj.(*mcpv1alpha1.McpTool)
		if !ok {
			continue
		}
		c := &callScope{key: client.ObjectKeyFromObject(tl), obs: &callObs{}}
		if g.decide(ctx, id, c) == nil {
			callable = append(callable, tl.Name)
		}
		ceiling, _ := g.ceiling(ctx, id)
		v, _ := g.verdictFor(ctx, id, toolOffer{tool: tl}, ceiling, nil)
		details[tl.Name] = v.detail
	}
	slices.Sort(listed)
	slices.Sort(callable)
	want := []string{"good-rules", "plain"}
	if !slices.Equal(listed, want) || !slices.Equal(callable, want) {
		t.Fatalf("listed %v and callable %v, want both %v", listed, callable, want)
	}
	for name, detail := range map[string]string{
		"bad-rules": mcpv1alpha1.ReasonArgumentRulesInvalid,
		"bad-fixed": mcpv1alpha1.ReasonArgumentRulesInvalid,
		"bad-text":  mcpv1alpha1.ReasonReviewedTextInvalid,
	} {
		if details[name] != detail {
			t.Errorf("%s refused with detail %q, want %q", name, details[name], detail)
		}
	}
}

// A consuming namespace's rules run after the owner's, on the arguments as
// sent upstream: they see the owner's fixed argument, the owner's rule
// refuses first, and the record's hash is that of what the server receives.
func TestConsumerRulesRunAfterTheOwnersOnTheArgumentsSentUpstream(t *testing.T) {
	tl := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "docs.search", Generation: 1, UID: "uid-search"},
		Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: "search",
			ArgumentRules: &mcpv1alpha1.ArgumentRules{
				Fixed: []mcpv1alpha1.FixedArgument{{Name: "space", Value: `"public"`}},
				Rules: []mcpv1alpha1.ArgumentRule{{Name: "no-drop", Expression: `!args.q.contains('drop')`}},
			}},
	}
	tl.Status.DefinitionHash = hashA
	tl.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"q":{"type":"string"},"space":{"type":"string"}}}`)}
	ss := &mcpv1alpha1.McpSharedServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs", UID: "uid-ss", Generation: 1},
		Spec: mcpv1alpha1.McpSharedServerSpec{ArgumentRules: []mcpv1alpha1.SharedToolRules{{Tool: "search", Rules: []mcpv1alpha1.ArgumentRule{
			// Would refuse every call if it did not see the owner's fixed space.
			{Name: "public-space", Expression: `args.space == 'public'`},
			{Name: "short", Expression: `args.q.size() <= 8`, Message: "short queries"},
			// Named like the owner's rule and allowing anything: it adds a
			// rule and replaces none.
			{Name: "no-drop", Expression: `true`},
		}}}},
	}
	g, err := New(completeOptions())
	if err != nil {
		t.Fatal(err)
	}
	run := func(args map[string]any) *callScope {
		c := &callScope{tool: tl, shared: ss, args: args, obs: &callObs{}}
		if res := g.applyRules(context.Background(), c); res != nil {
			c.args = nil
			c.rec.Detail = textOfResult(res)
		}
		return c
	}
	c := run(map[string]any{"q": "ok"})
	if c.args == nil || c.args["space"] != "public" {
		t.Fatalf("allowed call refused or not fixed: %+v, %s", c.args, c.rec.Detail)
	}
	if _, h, _ := arguments(map[string]any{"q": "ok", "space": "public"}); c.rec.ArgumentsHash != h {
		t.Errorf("hash %s is not that of the arguments sent upstream", c.rec.ArgumentsHash)
	}
	for args, rule := range map[string]string{"drop": `"no-drop"`, "far-too-long": `"mcpsharedserver/docs/short": short queries`} {
		c := run(map[string]any{"q": args})
		if c.args != nil || !strings.Contains(c.rec.Detail, rule) {
			t.Errorf("q=%s: want a refusal naming %s, got %q", args, rule, c.rec.Detail)
		}
	}
}
