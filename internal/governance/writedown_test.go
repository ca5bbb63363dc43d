package governance

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func TestWriteDownOf(t *testing.T) {
	const ns = "team-a"
	caller := Caller{Namespace: ns, ServiceAccount: "bot"}
	policy := func(sa string, r *mcpv1alpha1.WriteDownRule) mcpv1alpha1.McpAccessPolicy {
		return mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{sa}, MaxDataClass: mcpv1alpha1.DataClassRestricted, WriteDown: r},
		}
	}
	window := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for _, tc := range []struct {
		name     string
		policies []mcpv1alpha1.McpAccessPolicy
		want     WriteDown
		ok       bool
	}{
		{"no policy", nil, WriteDown{}, false},
		{"a policy without the rule", []mcpv1alpha1.McpAccessPolicy{policy("bot", nil)}, WriteDown{}, false},
		{"another caller's rule", []mcpv1alpha1.McpAccessPolicy{policy("other", &mcpv1alpha1.WriteDownRule{})}, WriteDown{}, false},
		{"the defaults", []mcpv1alpha1.McpAccessPolicy{policy("bot", &mcpv1alpha1.WriteDownRule{})},
			WriteDown{Action: mcpv1alpha1.WriteDownRefuse, Window: time.Hour, From: mcpv1alpha1.DataClassInternal}, true},
		{"an unknown action refuses, an unknown class counts from Internal", []mcpv1alpha1.McpAccessPolicy{policy("bot", &mcpv1alpha1.WriteDownRule{Action: "Allow", FromDataClass: "Secret"})},
			WriteDown{Action: mcpv1alpha1.WriteDownRefuse, Window: time.Hour, From: mcpv1alpha1.DataClassInternal}, true},
		{"the strictest of two", []mcpv1alpha1.McpAccessPolicy{
			policy("bot", &mcpv1alpha1.WriteDownRule{Action: mcpv1alpha1.WriteDownRequireApproval, Window: window(3 * time.Hour), FromDataClass: mcpv1alpha1.DataClassConfidential}),
			policy("*", &mcpv1alpha1.WriteDownRule{Action: mcpv1alpha1.WriteDownRefuse, Window: window(time.Minute), FromDataClass: mcpv1alpha1.DataClassInternal}),
		}, WriteDown{Action: mcpv1alpha1.WriteDownRefuse, Window: 3 * time.Hour, From: mcpv1alpha1.DataClassInternal}, true},
		{"approval when every rule asks for it", []mcpv1alpha1.McpAccessPolicy{
			policy("bot", &mcpv1alpha1.WriteDownRule{Action: mcpv1alpha1.WriteDownRequireApproval, FromDataClass: mcpv1alpha1.DataClassRestricted}),
		}, WriteDown{Action: mcpv1alpha1.WriteDownRequireApproval, Window: time.Hour, From: mcpv1alpha1.DataClassRestricted}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := WriteDownOf(tc.policies, caller)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("WriteDownOf = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHoldsBack(t *testing.T) {
	closed := Effects{Reviewed: true, ReadOnly: true}
	for _, tc := range []struct {
		mark, class mcpv1alpha1.DataClass
		e           Effects
		want        bool
	}{
		{mcpv1alpha1.DataClassConfidential, mcpv1alpha1.DataClassConfidential, closed, false},
		{mcpv1alpha1.DataClassConfidential, mcpv1alpha1.DataClassRestricted, closed, false},
		{mcpv1alpha1.DataClassConfidential, mcpv1alpha1.DataClassInternal, closed, true},
		{mcpv1alpha1.DataClassConfidential, mcpv1alpha1.DataClassRestricted, Unreviewed, true},
		{mcpv1alpha1.DataClassInternal, mcpv1alpha1.DataClassPublic, closed, true},
	} {
		if got := HoldsBack(tc.mark, tc.class, tc.e); got != tc.want {
			t.Errorf("HoldsBack(%s, %s, open-world %v) = %v, want %v", tc.mark, tc.class, tc.e.OpenWorld, got, tc.want)
		}
	}
}

// TestRaiseMarkWritesOnlyWhenTheMarkRises proves the write amplification
// bound: a caller that keeps reading is written when its class rises and
// once per class and half window, never per read; and every read is held back for at
// least the window.
func TestRaiseMarkWritesOnlyWhenTheMarkRises(t *testing.T) {
	w := WriteDown{Action: mcpv1alpha1.WriteDownRefuse, Window: time.Hour, From: mcpv1alpha1.DataClassInternal}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	m := &mcpv1alpha1.McpReadMark{}
	if w.RaiseMark(&m.Spec, mcpv1alpha1.DataClassPublic, "docs", t0) {
		t.Fatal("a Public result raised the mark")
	}
	if !w.RaiseMark(&m.Spec, mcpv1alpha1.DataClassConfidential, "crm", t0) {
		t.Fatal("the first Confidential read wrote nothing")
	}
	writes := 1
	// A read every minute for three hours, of Confidential and Internal.
	for i := 1; i <= 180; i++ {
		now := t0.Add(time.Duration(i) * time.Minute)
		class := mcpv1alpha1.DataClassConfidential
		if i%2 == 0 {
			class = mcpv1alpha1.DataClassInternal
		}
		if w.RaiseMark(&m.Spec, class, "crm", now) {
			writes++
		}
		hw, ok := w.HighWater(m, now.Add(w.Window-time.Nanosecond))
		if !ok || hw.DataClass.Rank() < class.Rank() {
			t.Fatalf("minute %d: the mark does not hold a window after the read: %+v, %v", i, hw, ok)
		}
	}
	// Six half windows, two classes read, and the first write.
	if writes > 2*6+1 {
		t.Fatalf("%d writes for three hours of reads; want at most one per class and half window", writes)
	}
	last := t0.Add(180 * time.Minute)
	if _, ok := w.HighWater(m, last.Add(w.Window+w.Window/2+2*time.Second)); ok {
		t.Fatal("the mark still holds one and a half windows after the last read")
	}
	if !w.RaiseMark(&m.Spec, mcpv1alpha1.DataClassRestricted, "vault", last) {
		t.Fatal("a higher class did not raise the mark")
	}
	hw, _ := w.HighWater(m, last)
	if hw.DataClass != mcpv1alpha1.DataClassRestricted || hw.Tool != "vault" || !hw.ReadAt.Time.Equal(last) {
		t.Fatalf("high water %+v", hw)
	}
	if len(m.Spec.Marks) > 4 {
		t.Fatalf("%d marks", len(m.Spec.Marks))
	}
}

func TestHighWaterCountsOnlyTheRulesClasses(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	m := &mcpv1alpha1.McpReadMark{Spec: mcpv1alpha1.McpReadMarkSpec{Marks: []mcpv1alpha1.ReadMark{
		{DataClass: mcpv1alpha1.DataClassInternal, Tool: "a", ExpiresAt: metav1.NewTime(now.Add(time.Hour))},
		{DataClass: mcpv1alpha1.DataClassRestricted, Tool: "b", ExpiresAt: metav1.NewTime(now)},
	}}}
	w := WriteDown{Window: time.Hour, From: mcpv1alpha1.DataClassInternal}
	if hw, ok := w.HighWater(m, now); !ok || hw.Tool != "a" {
		t.Fatalf("HighWater = %+v, %v; want the Internal mark (the Restricted one has passed)", hw, ok)
	}
	w.From = mcpv1alpha1.DataClassConfidential
	if _, ok := w.HighWater(m, now); ok {
		t.Fatal("a class the rule does not count held")
	}
	if _, ok := w.HighWater(nil, now); ok {
		t.Fatal("no mark held")
	}
	if n := ReadMarkName("system:serviceaccount:team-a:bot"); len(n) != len("caller-")+40 || n != ReadMarkName("system:serviceaccount:team-a:bot") {
		t.Fatalf("ReadMarkName = %q", n)
	}
}
