package gateway

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// IndexListable is the field index of McpTools that may be listed to
// someone (Listable); its one value is "true".
const IndexListable = "gateway.mcp.catalog.dev/listable"

// Listable reports whether any caller could be offered t, judged from t
// alone: enabled, Ready for its current generation, its definition the
// approved one, and named. verdictFor refuses every other tool before it
// reads anything else.
func Listable(t *mcpv1alpha1.McpTool) bool {
	return servable(t) && governance.Unapproved(t) == "" && t.Status.LocalName != ""
}

// IndexTools registers IndexListable with indexer (the cache the gateway
// reads from); set Options.ServableIndex when it is.
func IndexTools(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &mcpv1alpha1.McpTool{}, IndexListable, listableValue)
}

func listableValue(o client.Object) []string {
	if t, ok := o.(*mcpv1alpha1.McpTool); ok && Listable(t) {
		return []string{"true"}
	}
	return nil
}

// servable is part of the gate's first step: the tool is enabled and its
// controller found it Ready (imported, approved, server Ready) for the
// current generation.
func servable(t *mcpv1alpha1.McpTool) bool {
	if !t.Spec.Enabled {
		return false
	}
	c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == t.Generation
}
