package gateway

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// deny records and reports a refusal. Nothing is sent upstream. detail
// refines the reason (for NotServable, the tool's Ready reason).
func (g *Gateway) deny(ctx context.Context, rec Record, t *mcpv1alpha1.McpTool, reason, detail, message string) *sdk.CallToolResult {
	rec.Phase, rec.Decision, rec.Reason, rec.Detail, rec.Time = PhaseDenied, "Denied", reason, detail, g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a refusal could not be written", "reason", reason)
		metrics.GatewayAuditFailures.WithLabelValues(PhaseDenied).Inc()
	}
	obs := obsOf(ctx)
	if t != nil && reason != DenyForbidden {
		// RBAC let the caller call this tool: its name is no longer
		// just what the caller sent.
		obs.of(t)
	}
	obs.end(OutcomeDenied, reason)
	if t != nil {
		g.event(t, corev1.EventTypeWarning, EventCallRefused, "a call by %s was refused: %s", rec.Caller, reason)
	}
	return refusal(message)
}

func refusal(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "Refused by the MCP catalog gateway: " + msg}}}
}

// DetailNotInSession refines NotServable: the tool is callable now, but the
// session did not offer it when it began.
const DetailNotInSession = "NotInSession"

// detailOf refines a denial reason: for NotServable, why the definition is
// not the approved one, else the reason of the tool's Ready condition
// (Disabled, ServerNotReady, …), which the tool controller writes from a
// fixed vocabulary.
func detailOf(reason string, t *mcpv1alpha1.McpTool) string {
	if reason != DenyNotServable {
		return ""
	}
	if !t.Spec.Enabled {
		return mcpv1alpha1.ReasonDisabled
	}
	if why := governance.Unapproved(t); why != "" {
		return why
	}
	c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
	switch {
	case c == nil:
		return mcpv1alpha1.ReasonNotImported
	case c.ObservedGeneration != t.Generation:
		return mcpv1alpha1.ReasonProgressing
	case c.Status != metav1.ConditionTrue:
		return c.Reason
	}
	return ""
}

// unknownTool is the one answer to every call refused before RBAC allowed
// it: no such tool, another namespace's tool, or RBAC says no. It says
// nothing about which, nor about the tool's state; the audit record and
// the log hold the reason.
const unknownTool = "there is no tool of this name that the caller may call (RBAC verb \"call\" on mcptools)"

// message tells the agent why the call was refused. Only a caller RBAC lets
// call the tool is told more than unknownTool.
func (v verdict) message() string {
	switch v.reason {
	case DenyForbidden:
		return unknownTool
	case DenyAboveCeiling:
		return "the tool's data class is above the caller's ceiling (McpAccessPolicy)"
	}
	msg := "the tool is not servable now"
	switch v.detail {
	case mcpv1alpha1.ReasonDisabled:
		msg += ": it is disabled"
	case mcpv1alpha1.ReasonDefinitionChanged:
		msg += ": its definition changed since it was approved"
	case mcpv1alpha1.ReasonDefinitionNotApproved:
		msg += ": no definition of it is approved"
	case mcpv1alpha1.ReasonServerNotReady, mcpv1alpha1.ReasonServerNotFound:
		msg += ": its server is not Ready (unreachable, or not yet probed)"
	case mcpv1alpha1.ReasonRemovedFromServer:
		msg += ": its server no longer offers it"
	case "":
	default:
		msg += " (" + v.detail + ")"
	}
	return msg
}
