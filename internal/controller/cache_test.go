package controller

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// Trimming an McpTool for the cache must not change what declaredElsewhere
// (and so collectable) decides from its managed fields.
func TestTrimForCacheKeepsEveryDeclarationOfSpec(t *testing.T) {
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: sub, Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	schema := `{"f:inputSchema":{"f:properties":{"f:a":{},"f:b":{}}},"f:conditions":{}}`
	for _, tc := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
	}{
		{"the operator's own managers only", []metav1.ManagedFieldsEntry{
			entry(governance.FieldManagerImporter, "", `{"f:spec":{"f:remoteName":{}}}`),
			entry(governance.FieldManagerImporter, "status", `{"f:status":`+schema+`}`),
			entry(governance.FieldManagerToolStatus, "status", `{"f:status":{"f:localName":{}}}`)}},
		{"declared in Git", []metav1.ManagedFieldsEntry{
			entry(governance.FieldManagerImporter, "", `{"f:spec":{"f:remoteName":{}}}`),
			entry("argocd-controller", "", `{"f:metadata":{"f:labels":{}},"f:spec":{"f:enabled":{}}}`)}},
		{"labelled with kubectl, spec untouched", []metav1.ManagedFieldsEntry{
			entry(governance.FieldManagerImporter, "", `{"f:spec":{"f:remoteName":{}}}`),
			entry("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)}},
		{"someone wrote only status", []metav1.ManagedFieldsEntry{
			entry(governance.FieldManagerImporter, "", `{"f:spec":{"f:remoteName":{}}}`),
			entry("someone", "status", `{"f:status":{"f:spec":{}}}`)}},
		{"no entry without fields", []metav1.ManagedFieldsEntry{{Manager: "kubectl-edit"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.fields}}
			want := governance.DeclaredElsewhere(tool)
			out, err := TrimForCache(tool)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*mcpv1alpha1.McpTool)
			if got := governance.DeclaredElsewhere(trimmed); got != want {
				t.Errorf("declaredElsewhere after trimming = %v, before = %v", got, want)
			}
			if len(trimmed.ManagedFields) > 1 {
				t.Errorf("kept %d managed-fields entries, want at most the one declaration", len(trimmed.ManagedFields))
			}
			for _, mf := range trimmed.ManagedFields {
				if mf.FieldsV1.GetRawString() != `{"f:spec":{}}` {
					t.Errorf("kept field set %s, want only the mark that spec is declared", mf.FieldsV1.GetRawString())
				}
			}
		})
	}
}

func TestTrimForCacheDropsWhatNothingReads(t *testing.T) {
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{
			annotationLastApplied:                   `{"apiVersion":"mcp.catalog.dev/v1alpha1"}`,
			mcpv1alpha1.AnnotationRequestedImportAt: "now",
			"argocd.argoproj.io/tracking-id":        "app:mcp.catalog.dev/McpServer:ns/name",
		},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd-controller", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
	}}
	out, err := TrimForCache(srv)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*mcpv1alpha1.McpServer)
	if got.ManagedFields != nil {
		t.Errorf("an McpServer kept its managed fields: %v", got.ManagedFields)
	}
	if _, ok := got.Annotations[annotationLastApplied]; ok {
		t.Error("the last-applied configuration was kept")
	}
	if got.Annotations[mcpv1alpha1.AnnotationRequestedImportAt] != "now" || len(got.Annotations) != 2 {
		t.Errorf("annotations the controllers read were dropped: %v", got.Annotations)
	}

	// A tombstone has no metadata of its own and passes unchanged.
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/name", Obj: srv}
	if out, err := TrimForCache(tomb); err != nil || out != tomb {
		t.Errorf("TrimForCache(tombstone) = %v, %v; want it unchanged", out, err)
	}
}

// Without the gateway in the process, nothing reads a cached tool's
// definition texts; the hash, which the controllers compare, stays. With
// it, only the approved definition's text goes.
func TestTrimForControllersDropsDefinitionTextsOnly(t *testing.T) {
	tool := func() *mcpv1alpha1.McpTool {
		tl := &mcpv1alpha1.McpTool{}
		tl.Status.DefinitionHash = "sha256:01"
		tl.Status.Title, tl.Status.Description = "Title", "Description"
		tl.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)}
		tl.Status.Hints = &mcpv1alpha1.ToolHints{Title: "hint"}
		tl.Status.ApprovedDefinition = &mcpv1alpha1.ToolDefinition{Hash: "sha256:00"}
		tl.Status.Drift = &mcpv1alpha1.DefinitionDrift{ToHash: "sha256:01", Categories: []mcpv1alpha1.DriftCategory{"TextChanged"}, Details: []string{"TextChanged description: changed"}}
		tl.Status.LocalName = "mcp_s_t"
		return tl
	}
	out, err := TrimForControllers(tool())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*mcpv1alpha1.McpTool).Status
	if got.Title != "" || got.Description != "" || got.InputSchema != nil || got.Hints != nil || got.ApprovedDefinition != nil {
		t.Errorf("definition texts kept: %+v", got)
	}
	if got.DefinitionHash != "sha256:01" || got.LocalName != "mcp_s_t" {
		t.Errorf("what the controllers read was dropped: hash %q, local name %q", got.DefinitionHash, got.LocalName)
	}

	out, err = TrimForCache(tool())
	if err != nil {
		t.Fatal(err)
	}
	kept := out.(*mcpv1alpha1.McpTool).Status
	if kept.InputSchema == nil || kept.Description == "" {
		t.Errorf("the gateway's cache lost a definition: %+v", kept)
	}
	if kept.ApprovedDefinition != nil || kept.Drift.Details != nil {
		t.Errorf("the gateway's cache kept the approved definition's text or the drift details, which only people read: %+v", kept)
	}
	if len(kept.Drift.Categories) != 1 {
		t.Errorf("the cache lost the drift categories, which notifications carry: %+v", kept.Drift)
	}
}
