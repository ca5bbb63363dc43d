package gateway

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
)

// deny records and reports a refusal. Nothing is sent upstream. detail
// refines the reason (for NotServable, the tool's Ready reason).
func (g *Gateway) deny(ctx context.Context, rec audit.Record, t *mcpv1alpha1.McpTool, reason, detail, message string) *sdk.CallToolResult {
	rec.Phase, rec.Decision, rec.Reason, rec.Detail, rec.Time = audit.PhaseDenied, "Denied", reason, detail, g.now()
	g.writeDenial(ctx, rec)
	obs := obsOf(ctx)
	if t != nil && reason != audit.DenyForbidden && reason != audit.DenyNotShared {
		// RBAC let the caller call this tool: its name is no longer
		// just what the caller sent.
		obs.of(t)
	}
	obs.end(audit.OutcomeDenied, reason)
	// A namespace the owner did not grant, or whose RBAC does not allow
	// the call, writes nothing in the owner's namespace: the Event would
	// be its to write as often as it calls.
	foreign := t != nil && t.Namespace != rec.Namespace && (reason == audit.DenyForbidden || reason == audit.DenyNotShared)
	if t != nil && !foreign {
		g.Recorder.Eventf(t, nil, corev1.EventTypeWarning, EventCallRefused, eventAction, "a call by %s was refused: %s", rec.Caller, reason)
	}
	return refusal(message)
}

func refusal(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "Refused by the MCP catalog gateway: " + msg}}}
}

// unknownTool is the one answer to every call refused before RBAC allowed
// it: no such tool, another namespace's tool, or RBAC says no. It says
// nothing about which, nor about the tool's state; the audit record and
// the log hold the reason.
const unknownTool = "there is no tool of this name that the caller may call (RBAC verb \"call\" on mcptools)"
