package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// annotationLastApplied is what `kubectl apply` (client-side) leaves on an
// object: a full copy of it, which nothing in the operator reads.
const annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// declaredSpec is the whole of a managed-fields entry the cache keeps: the
// only thing read from managed fields is whether a manager holds spec.
var declaredSpec = metav1.NewFieldsV1(`{"f:spec":{}}`)

// TrimForCache is the informers' transform: it drops what no controller
// and no gateway handler reads before an object is cached, which is most of
// an McpTool's size at scale (managed fields list every key of the input
// schema, twice). An McpTool keeps one small entry per manager that
// declared spec fields, which is all governance.DeclaredElsewhere reads; everything
// else loses its managed fields. McpTools lose the approved definition's
// text and the drift details too, which only people read (kubectl mcp diff, from the API
// server); the importer keeps it from the live tool its writes return.
// Nothing is ever applied from a cached object, so no write depends on
// what is dropped.
func TrimForCache(in any) (any, error) {
	return trim(in, false)
}

// TrimForControllers is TrimForCache for a process that does not serve the
// gateway: McpTools also lose the definition texts (title, description,
// input schema, hints), which only the gateway serves. The controllers read the definition hash; the one write that
// writes a definition (toolStatus.writeDefinition) does so on the tool
// its apply answered with, which is complete.
func TrimForControllers(in any) (any, error) {
	return trim(in, true)
}

func trim(in any, definitions bool) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		// A tombstone or something else without metadata: kept as is.
		return in, nil
	}
	if a := obj.GetAnnotations(); a[annotationLastApplied] != "" {
		delete(a, annotationLastApplied)
		obj.SetAnnotations(a)
	}
	if t, ok := in.(*mcpv1alpha1.McpTool); ok {
		obj.SetManagedFields(specDeclarations(obj.GetManagedFields()))
		t.Status.ApprovedDefinition = nil
		if t.Status.Drift != nil {
			// The categories go into drift notifications; the details
			// only people read.
			t.Status.Drift.Details = nil
		}
		if definitions {
			t.Status.Title, t.Status.Description = "", ""
			t.Status.InputSchema, t.Status.OutputSchema, t.Status.Hints = nil, nil, nil
		}
		return in, nil
	}
	obj.SetManagedFields(nil)
	return in, nil
}

// specDeclarations keeps, of an McpTool's managed fields, one entry without
// its field set for each manager that declared spec fields and is not one
// of the operator's own controllers.
func specDeclarations(mfs []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, mf := range mfs {
		if !governance.DeclaresSpec(mf) {
			continue
		}
		out = append(out, metav1.ManagedFieldsEntry{
			Manager:    mf.Manager,
			Operation:  mf.Operation,
			APIVersion: mf.APIVersion,
			FieldsType: mf.FieldsType,
			FieldsV1:   declaredSpec,
		})
	}
	return out
}
