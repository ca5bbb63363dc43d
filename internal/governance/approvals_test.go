package governance

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func TestCallStateOnlyLetsAnUnexpiredUndecidedApprovalBeDecided(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	later, earlier := metav1.NewTime(now.Add(time.Minute)), metav1.NewTime(now.Add(-time.Minute))
	for _, c := range []struct {
		name     string
		decision mcpv1alpha1.CallDecision
		expires  metav1.Time
		consumed bool
		want     string
	}{
		{"undecided", "", later, false, CallStatePending},
		{"explicitly pending", mcpv1alpha1.CallPending, later, false, CallStatePending},
		{"approved", mcpv1alpha1.CallApproved, later, false, CallStateApproved},
		{"denied", mcpv1alpha1.CallDenied, later, false, CallStateDenied},
		{"approved and used", mcpv1alpha1.CallApproved, later, true, CallStateUsed},
		{"used, then expired", mcpv1alpha1.CallApproved, earlier, true, CallStateUsed},
		{"pending past its expiry", mcpv1alpha1.CallPending, earlier, false, CallStateExpired},
		{"approved, never used, expired", mcpv1alpha1.CallApproved, earlier, false, CallStateExpired},
		{"expiring exactly now", mcpv1alpha1.CallPending, metav1.NewTime(now), false, CallStateExpired},
	} {
		a := &mcpv1alpha1.McpCallApproval{Spec: mcpv1alpha1.McpCallApprovalSpec{Decision: c.decision, ExpiresAt: c.expires}}
		if c.consumed {
			a.Status.ConsumedAt = &metav1.Time{Time: now.Add(-time.Second)}
		}
		if got := CallState(a, now); got != c.want {
			t.Errorf("%s: CallState = %s, want %s", c.name, got, c.want)
		}
	}
}
