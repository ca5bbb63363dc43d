package governance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func TestEffectiveTightensAndNeverLoosens(t *testing.T) {
	server := func(class mcpv1alpha1.DataClass, approval *bool) *mcpv1alpha1.McpServer {
		return &mcpv1alpha1.McpServer{Spec: mcpv1alpha1.McpServerSpec{DataClass: class, ApprovalRequired: approval}}
	}
	tool := func(class mcpv1alpha1.DataClass, approval *bool) *mcpv1alpha1.McpTool {
		return &mcpv1alpha1.McpTool{Spec: mcpv1alpha1.McpToolSpec{DataClass: class, ApprovalRequired: approval}}
	}
	for _, tc := range []struct {
		name     string
		srv      *mcpv1alpha1.McpServer
		tool     *mcpv1alpha1.McpTool
		class    mcpv1alpha1.DataClass
		approval bool
	}{
		{"no server: strictest", nil, tool(mcpv1alpha1.DataClassPublic, nil), mcpv1alpha1.DataClassRestricted, true},
		{"server's class and default approval", server(mcpv1alpha1.DataClassInternal, nil), tool("", nil), mcpv1alpha1.DataClassInternal, true},
		{"server's explicit false", server(mcpv1alpha1.DataClassInternal, ptr(false)), tool("", nil), mcpv1alpha1.DataClassInternal, false},
		{"tool raises the class", server(mcpv1alpha1.DataClassInternal, ptr(false)), tool(mcpv1alpha1.DataClassConfidential, nil), mcpv1alpha1.DataClassConfidential, false},
		{"tool cannot lower the class", server(mcpv1alpha1.DataClassConfidential, ptr(false)), tool(mcpv1alpha1.DataClassPublic, nil), mcpv1alpha1.DataClassConfidential, false},
		{"tool requires approval", server(mcpv1alpha1.DataClassPublic, ptr(false)), tool("", ptr(true)), mcpv1alpha1.DataClassPublic, true},
		{"tool's false does not loosen", server(mcpv1alpha1.DataClassPublic, ptr(true)), tool("", ptr(false)), mcpv1alpha1.DataClassPublic, true},
		{"unknown class ranks as Restricted", server("Secret", ptr(false)), tool("", nil), mcpv1alpha1.DataClassRestricted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, approval := Effective(tc.srv, tc.tool)
			if class != tc.class || approval != tc.approval {
				t.Fatalf("Effective = (%s, %t), want (%s, %t)", class, approval, tc.class, tc.approval)
			}
		})
	}
}

func TestUnapproved(t *testing.T) {
	const a, b = "sha256:aa", "sha256:bb"
	tool := func(approved, current string) *mcpv1alpha1.McpTool {
		return &mcpv1alpha1.McpTool{Spec: mcpv1alpha1.McpToolSpec{ApprovedDefinitionHash: approved}, Status: mcpv1alpha1.McpToolStatus{DefinitionHash: current}}
	}
	for _, tc := range []struct {
		approved, current, want string
	}{
		{"", a, mcpv1alpha1.ReasonDefinitionNotApproved},
		{"", "", mcpv1alpha1.ReasonDefinitionNotApproved},
		{a, b, mcpv1alpha1.ReasonDefinitionChanged},
		{a, "", mcpv1alpha1.ReasonDefinitionChanged},
		{a, a, ""},
	} {
		if got := Unapproved(tool(tc.approved, tc.current)); got != tc.want {
			t.Errorf("Unapproved(approved %q, current %q) = %q, want %q", tc.approved, tc.current, got, tc.want)
		}
	}
}

func TestRecordedIsTheStrictestWhereStatusSaysNothing(t *testing.T) {
	tool := func(class mcpv1alpha1.DataClass, approval *bool) *mcpv1alpha1.McpTool {
		return &mcpv1alpha1.McpTool{Status: mcpv1alpha1.McpToolStatus{EffectiveDataClass: class, EffectiveApprovalRequired: approval}}
	}
	for _, tc := range []struct {
		name     string
		tool     *mcpv1alpha1.McpTool
		class    mcpv1alpha1.DataClass
		approval bool
	}{
		{"not yet reconciled", tool("", nil), mcpv1alpha1.DataClassRestricted, true},
		{"as recorded", tool(mcpv1alpha1.DataClassInternal, ptr(false)), mcpv1alpha1.DataClassInternal, false},
		{"approval recorded as required", tool(mcpv1alpha1.DataClassPublic, ptr(true)), mcpv1alpha1.DataClassPublic, true},
		{"an unknown class ranks as Restricted", tool("Secret", ptr(false)), mcpv1alpha1.DataClassRestricted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, approval := Recorded(tc.tool)
			if class != tc.class || approval != tc.approval {
				t.Fatalf("Recorded = (%s, %t), want (%s, %t)", class, approval, tc.class, tc.approval)
			}
		})
	}
}

func TestWithinCeiling(t *testing.T) {
	if !WithinCeiling(mcpv1alpha1.DataClassInternal, mcpv1alpha1.DataClassInternal) {
		t.Error("a class equal to the ceiling is within it")
	}
	if WithinCeiling(mcpv1alpha1.DataClassConfidential, mcpv1alpha1.DataClassInternal) {
		t.Error("a class above the ceiling is within it")
	}
	if WithinCeiling("", mcpv1alpha1.DataClassConfidential) {
		t.Error("a tool without a class must count as Restricted")
	}
}

func TestCollectableKeepsWhatAPersonDecided(t *testing.T) {
	spec := func(manager string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:enabled":{}}}`)}
	}
	status := metav1.ManagedFieldsEntry{Manager: "kubectl", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		tool mcpv1alpha1.McpTool
		want bool
	}{
		{"imported only", mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{spec(FieldManagerImporter)}}}, true},
		{"enabled", mcpv1alpha1.McpTool{Spec: mcpv1alpha1.McpToolSpec{Enabled: true}}, false},
		{"declared in Git", mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{spec(FieldManagerImporter), spec("argocd-controller")}}}, false},
		{"a status write is no declaration", mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{status}}}, true},
		{"being deleted", mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, false},
	} {
		if got := Collectable(&tc.tool); got != tc.want {
			t.Errorf("%s: Collectable = %t, want %t", tc.name, got, tc.want)
		}
	}
}

func TestOutsideServerShardComparesTheLabelPresentOrAbsent(t *testing.T) {
	labelled := func(labels map[string]string) metav1.ObjectMeta { return metav1.ObjectMeta{Labels: labels} }
	a, b, empty := map[string]string{mcpv1alpha1.LabelShardKey: "a"}, map[string]string{mcpv1alpha1.LabelShardKey: "b"}, map[string]string{mcpv1alpha1.LabelShardKey: ""}
	for _, tc := range []struct {
		name      string
		srv, tool map[string]string
		outside   bool
	}{
		{"neither sharded", nil, nil, false},
		{"same shard", a, a, false},
		{"another shard", a, b, true},
		{"a sharded tool of an unsharded server", nil, b, true},
		{"an unsharded tool of a sharded server", a, nil, true},
		{"an empty label is a shard of its own", nil, empty, true},
	} {
		srv := &mcpv1alpha1.McpServer{ObjectMeta: labelled(tc.srv)}
		tool := &mcpv1alpha1.McpTool{ObjectMeta: labelled(tc.tool)}
		if got := OutsideServerShard(srv, tool); got != tc.outside {
			t.Errorf("%s: OutsideServerShard = %t, want %t", tc.name, got, tc.outside)
		}
	}
}
