package gateway

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// allowList authorises calls of the McpTools it names, in any namespace.
type allowList map[string]bool

func (a allowList) CanCall(_ context.Context, _ *Identity, _, tool string) (bool, error) {
	return a[tool], nil
}

// The tool list and the call path ask one decision, so the list offers
// exactly the tools a call is allowed, whatever step refuses the others.
func TestListOffersExactlyWhatACallIsAllowed(t *testing.T) {
	const ns = "team"
	tool := func(name string, enabled, ready bool, class mcpv1alpha1.DataClass, local string) *mcpv1alpha1.McpTool {
		t := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
			Spec:       mcpv1alpha1.McpToolSpec{Enabled: enabled, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, ApprovedDefinitionHash: hashA},
		}
		t.Status.LocalName, t.Status.EffectiveDataClass, t.Status.DefinitionHash = local, class, hashA
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: status, ObservedGeneration: 1, Reason: "X", LastTransitionTime: metav1.Now()}}
		return t
	}
	objects := []client.Object{
		tool("docs.public", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_public"),
		tool("docs.internal", true, true, mcpv1alpha1.DataClassInternal, "mcp_docs_internal"),
		tool("docs.confidential", true, true, mcpv1alpha1.DataClassConfidential, "mcp_docs_confidential"),
		tool("docs.disabled", false, true, mcpv1alpha1.DataClassPublic, "mcp_docs_disabled"),
		tool("docs.not-ready", true, false, mcpv1alpha1.DataClassPublic, "mcp_docs_not_ready"),
		tool("docs.forbidden", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_forbidden"),
		tool("docs.unnamed", true, true, mcpv1alpha1.DataClassPublic, ""),
		// Ready still True, as the tool controller left it, but an import
		// wrote a definition nobody approved, or nobody approved any.
		withDefinition(tool("docs.drifted", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_drifted"), hashB),
		withApproval(tool("docs.unapproved", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_unapproved"), ""),
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
	o.Authz = allowList{"docs.public": true, "docs.internal": true, "docs.confidential": true, "docs.disabled": true, "docs.not-ready": true, "docs.unnamed": true, "docs.drifted": true, "docs.unapproved": true}
	var audit bytes.Buffer
	o.Audit = NewJSONLines(&audit)
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}
	ctx := context.Background()

	visible, err := g.visibleTools(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var listed, callable []string
	for _, v := range visible {
		listed = append(listed, v.Name)
	}
	for _, obj := range objects {
		tl, ok := obj.(*mcpv1alpha1.McpTool)
		if !ok {
			continue
		}
		if g.gateCall(ctx, Record{}, id, tl) == nil {
			callable = append(callable, tl.Name)
		}
	}
	sort.Strings(listed)
	sort.Strings(callable)
	want := []string{"docs.internal", "docs.public"}
	if !slices.Equal(listed, want) || !slices.Equal(callable, want) {
		t.Fatalf("listed %v and callable %v, want both %v", listed, callable, want)
	}
}

// A caller RBAC does not let call a tool is told the same thing whatever the
// tool's state, and the same as for a tool that does not exist; only a
// caller RBAC allows learns that the tool is disabled.
func TestRefusalsBeforeRBACSayNothingAboutTheTool(t *testing.T) {
	const ns = "team"
	tool := func(name string, enabled bool) *mcpv1alpha1.McpTool {
		t := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
			Spec:       mcpv1alpha1.McpToolSpec{Enabled: enabled, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}},
		}
		t.Status.LocalName, t.Status.EffectiveDataClass = "mcp_"+name, mcpv1alpha1.DataClassPublic
		t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		return t
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).Build()
	o.Authz = allowList{"allowed-disabled": true}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}
	ctx := context.Background()
	textOf := func(r *sdk.CallToolResult) string {
		if r == nil || len(r.Content) != 1 {
			t.Fatalf("result %+v, want one refusal text", r)
		}
		return r.Content[0].(*sdk.TextContent).Text
	}
	forbiddenReady := textOf(g.gateCall(ctx, Record{}, id, tool("forbidden-ready", true)))
	forbiddenDisabled := textOf(g.gateCall(ctx, Record{}, id, tool("forbidden-disabled", false)))
	if forbiddenReady != forbiddenDisabled || !strings.HasSuffix(forbiddenReady, unknownTool) {
		t.Errorf("forbidden tools answered %q and %q, want both the uniform %q", forbiddenReady, forbiddenDisabled, unknownTool)
	}
	other := tool("allowed-disabled", true)
	other.Namespace = "elsewhere"
	if got := textOf(g.gateCall(ctx, Record{}, id, other)); got != forbiddenReady {
		t.Errorf("another namespace's tool answered %q, want %q", got, forbiddenReady)
	}
	allowedDisabled := textOf(g.gateCall(ctx, Record{}, id, tool("allowed-disabled", false)))
	if !strings.Contains(allowedDisabled, "disabled") {
		t.Errorf("a caller RBAC allows was told %q, want that the tool is disabled", allowedDisabled)
	}
}
