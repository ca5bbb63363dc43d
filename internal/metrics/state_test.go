package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

func TestTheOldestWaitingCallIsReportedPerNamespace(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mk := func(ns string, age time.Duration, decision mcpv1alpha1.CallDecision, expiresIn time.Duration) mcpv1alpha1.McpCallApproval {
		return mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-x", CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec: mcpv1alpha1.McpCallApprovalSpec{Decision: decision, ExpiresAt: metav1.NewTime(now.Add(expiresIn))}}
	}
	spent := func(ns string, age time.Duration) mcpv1alpha1.McpCallApproval {
		a := mk(ns, age, mcpv1alpha1.CallPending, time.Minute)
		a.Name = governance.SpentAnswerPrefix + "0a1b"
		return a
	}
	items := []mcpv1alpha1.McpCallApproval{
		mk("agents", 2*time.Minute, mcpv1alpha1.CallPending, 10*time.Minute),
		mk("agents", 9*time.Minute, mcpv1alpha1.CallPending, 5*time.Minute),
		// Decided or expired: nobody is waiting on these.
		mk("agents", 30*time.Minute, mcpv1alpha1.CallApproved, 5*time.Minute),
		mk("agents", 40*time.Minute, mcpv1alpha1.CallPending, -time.Minute),
		mk("ops", time.Minute, "", 10*time.Minute),
		mk("quiet", time.Hour, mcpv1alpha1.CallDenied, time.Minute),
		// The mark of a spent ClientElicitation answer whose "used" was
		// not recorded: the call already ran.
		spent("ops", 20*time.Minute),
	}
	ch := make(chan prometheus.Metric, 16)
	collectPending(ch, items, now)
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		name := "pending"
		if m.Desc() == approvalOldestPendingDesc {
			name = "oldest"
		}
		got[name+"/"+pb.GetLabel()[0].GetValue()] = pb.GetGauge().GetValue()
	}
	want := map[string]float64{"pending/agents": 2, "oldest/agents": 540, "pending/ops": 1, "oldest/ops": 60}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
