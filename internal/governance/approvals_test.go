package governance

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
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

// A seal verifies under the key it was made with (current or previous),
// for the object it was made for only; the marks of spent answers never
// await a person.
func TestSealValidAndAwaitsPerson(t *testing.T) {
	key, other := []byte(strings.Repeat("k", 32)), []byte(strings.Repeat("o", 32))
	a := &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "call-1"},
		Spec: mcpv1alpha1.McpCallApprovalSpec{Tool: "docs.echo", Server: "docs", Caller: "bot", ArgumentsHash: "sha256:ab", DefinitionHash: "sha256:d",
			ExpiresAt: metav1.NewTime(time.Unix(1_900_000_000, 0))}}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("agents\x00call-1\x00docs.echo\x00docs\x00bot\x00sha256:ab\x00sha256:d\x001900000000"))
	a.Spec.Seal = base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	if !SealValid(a, other, key) || SealValid(a, other) || SealValid(a) || SealValid(a, nil) {
		t.Error("a seal verifies under the wrong keys, or not under its own")
	}
	moved := a.DeepCopy()
	moved.Namespace = "elsewhere"
	bad := a.DeepCopy()
	bad.Spec.Seal = "%%%"
	if SealValid(moved, key) || SealValid(bad, key) {
		t.Error("a seal verifies for another object, or garbage verifies")
	}
	now := time.Unix(1_800_000_000, 0)
	if !AwaitsPerson(a, now) {
		t.Error("a pending call does not await a person")
	}
	spent := a.DeepCopy()
	spent.Name = SpentAnswerPrefix + "0a1b"
	if AwaitsPerson(spent, now) {
		t.Error("a spent ClientElicitation answer awaits a person")
	}
}
