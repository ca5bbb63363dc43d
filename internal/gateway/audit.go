package gateway

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// auditBefore is the audit stage of a call: the last look before the call
// is committed, at its server (one gone since the decision refuses the
// call), and the record that it is about to be sent. No record, no call.
func (g *Gateway) auditBefore(ctx context.Context, id *authn.Identity, c *callScope) *sdk.CallToolResult {
	srv := &mcpv1alpha1.McpServer{}
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: c.key.Namespace, Name: c.tool.Spec.ServerRef.Name}, srv, readOnly); err != nil {
		return g.deny(ctx, c.rec, c.tool, audit.DenyNotServable, mcpv1alpha1.ReasonServerNotFound, "the tool's server no longer exists")
	}
	c.srv = srv
	c.rec.Decision, c.rec.Phase, c.rec.Time = "Allowed", audit.PhaseBefore, g.now()
	if err := g.Audit.Write(ctx, c.rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record could not be written; refusing the call", "tool", c.key.String())
		metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseBefore).Inc()
		c.obs.end(audit.OutcomeDenied, audit.DenyAuditFailed)
		g.Recorder.Eventf(c.tool, nil, corev1.EventTypeWarning, EventCallRefused, eventAction, "a call by %s was refused: the audit record could not be written", id.Username)
		return refusal("the call was refused because its audit record could not be written")
	}
	return nil
}
