package gateway

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Denial reasons, in the order the stages of a call check them. They
// appear in audit records, Events, metrics and the message the agent gets.
const (
	DenyNotServable = "NotServable"
	DenyForbidden   = "Forbidden"
	// DenyNotShared refuses a shared tool whose server the owner does not
	// share with the caller's namespace now (or that does not exist, or
	// whose McpSharedServer cannot be honoured). The agent is told no
	// more than for Forbidden.
	DenyNotShared         = "NotShared"
	DenyAboveCeiling      = "AboveDataClassCeiling"
	DenyApprovalDeclined  = "ApprovalDeclined"
	DenyApprovalNoChannel = "ApprovalUnavailable"
	// DenyApprovalPending records a call not made because it waits for a
	// person's decision on an McpCallApproval.
	DenyApprovalPending = "ApprovalPending"
	DenyAuditFailed     = "AuditUnavailable"
)

// deny records and reports a refusal. Nothing is sent upstream. detail
// refines the reason (for NotServable, the tool's Ready reason).
func (g *Gateway) deny(ctx context.Context, rec Record, t *mcpv1alpha1.McpTool, reason, detail, message string) *sdk.CallToolResult {
	rec.Phase, rec.Decision, rec.Reason, rec.Detail, rec.Time = PhaseDenied, "Denied", reason, detail, g.now()
	g.writeDenial(ctx, rec)
	obs := obsOf(ctx)
	if t != nil && reason != DenyForbidden && reason != DenyNotShared {
		// RBAC let the caller call this tool: its name is no longer
		// just what the caller sent.
		obs.of(t)
	}
	obs.end(OutcomeDenied, reason)
	if t != nil {
		g.Recorder.Eventf(t, nil, corev1.EventTypeWarning, EventCallRefused, eventAction, "a call by %s was refused: %s", rec.Caller, reason)
	}
	return refusal(message)
}

func refusal(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "Refused by the MCP catalog gateway: " + msg}}}
}

// DetailAdmissionPolicyMissing refines ApprovalUnavailable: the
// admission policy that keeps a caller from deciding its own approval
// (Options.ApprovalPolicy), or a binding of it that denies, is missing.
const DetailAdmissionPolicyMissing = "AdmissionPolicyMissing"

// DetailNameTooLong refines NotServable: the name a shared tool would have
// in the caller's namespace (mcps_<McpSharedServer>_<tool>) is longer than
// toolname.MaxLocalNameLength, so it is not offered there.
const DetailNameTooLong = "NameTooLong"

// DetailNotInSession refines NotServable: the tool is callable now, but the
// session does not offer it yet (it was not told of the change yet, or is
// not told of changes).
const DetailNotInSession = "NotInSession"

// unknownTool is the one answer to every call refused before RBAC allowed
// it: no such tool, another namespace's tool, or RBAC says no. It says
// nothing about which, nor about the tool's state; the audit record and
// the log hold the reason.
const unknownTool = "there is no tool of this name that the caller may call (RBAC verb \"call\" on mcptools)"
