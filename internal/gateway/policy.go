package gateway

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Denial reasons, in the order the gate checks them. They appear in audit
// records, Events, metrics and the message the agent gets.
const (
	DenyNotServable       = "NotServable"
	DenyForbidden         = "Forbidden"
	DenyAboveCeiling      = "AboveDataClassCeiling"
	DenyApprovalDeclined  = "ApprovalDeclined"
	DenyApprovalNoChannel = "ApprovalUnavailable"
	// DenyApprovalPending records a call not made because it waits for a
	// person's decision on an McpCallApproval.
	DenyApprovalPending = "ApprovalPending"
	DenyAuditFailed     = "AuditUnavailable"
)

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

// ceilingFor is the highest data class the caller may use: the highest
// maxDataClass among the policies of its namespace that name it, and Public
// when none does.
func ceilingFor(id *Identity, policies []mcpv1alpha1.McpAccessPolicy) mcpv1alpha1.DataClass {
	ceiling := mcpv1alpha1.DataClassPublic
	for _, p := range policies {
		if p.Namespace != id.Namespace || !p.Spec.MaxDataClass.Valid() {
			continue
		}
		for _, sa := range p.Spec.ServiceAccounts {
			if sa == "*" || sa == id.ServiceAccount {
				ceiling = mcpv1alpha1.MaxDataClass(ceiling, p.Spec.MaxDataClass)
			}
		}
	}
	return ceiling
}

// approvalModeFor is how the caller's calls are approved: ClientElicitation
// when a policy of its namespace naming it opts in, and Person otherwise.
func approvalModeFor(id *Identity, policies []mcpv1alpha1.McpAccessPolicy) mcpv1alpha1.ApprovalMode {
	for _, p := range policies {
		if p.Namespace != id.Namespace || p.Spec.ApprovalMode != mcpv1alpha1.ApprovalClientElicitation {
			continue
		}
		for _, sa := range p.Spec.ServiceAccounts {
			if sa == "*" || sa == id.ServiceAccount {
				return mcpv1alpha1.ApprovalClientElicitation
			}
		}
	}
	return mcpv1alpha1.ApprovalPerson
}
