package governance

import (
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Where a call approval stands, as people are shown it.
const (
	CallStatePending  = string(mcpv1alpha1.CallPending)
	CallStateApproved = string(mcpv1alpha1.CallApproved)
	CallStateDenied   = string(mcpv1alpha1.CallDenied)
	// CallStateUsed: approved, and its call was made.
	CallStateUsed = "Used"
	// CallStateExpired: it lapsed without being used; the agent's next call
	// asks again.
	CallStateExpired = "Expired"
)

// CallState is where a McpCallApproval stands at now: Used once its call
// was made, Expired once it lapsed unused, and otherwise Pending, Approved
// or Denied as decided. Only a Pending approval can still be decided.
func CallState(a *mcpv1alpha1.McpCallApproval, now time.Time) string {
	switch {
	case a.Status.ConsumedAt != nil:
		return CallStateUsed
	case !now.Before(a.Spec.ExpiresAt.Time):
		return CallStateExpired
	case a.Spec.Decision == "" || a.Spec.Decision == mcpv1alpha1.CallPending:
		return CallStatePending
	}
	return string(a.Spec.Decision)
}
