package gateway

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func (g *Gateway) ceiling(ctx context.Context, id *Identity) (mcpv1alpha1.DataClass, error) {
	var policies mcpv1alpha1.McpAccessPolicyList
	if err := g.Reader.List(ctx, &policies, client.InNamespace(id.Namespace)); err != nil {
		return "", err
	}
	return ceilingFor(id, policies.Items), nil
}

// gate runs steps 1 to 3 in order and returns the first denial reason, or
// "" when the tool may be listed and called (approval aside).
func (g *Gateway) gate(ctx context.Context, id *Identity, t *mcpv1alpha1.McpTool, ceiling mcpv1alpha1.DataClass) (string, error) {
	if !servable(t) || t.Namespace != id.Namespace || t.Status.LocalName == "" {
		return DenyNotServable, nil
	}
	ok, err := g.Authz.CanCall(ctx, id, t.Namespace, t.Name)
	if err != nil {
		return "", err
	}
	if !ok {
		return DenyForbidden, nil
	}
	if !withinCeiling(t, ceiling) {
		return DenyAboveCeiling, nil
	}
	return "", nil
}
