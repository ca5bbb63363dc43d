package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/tenancy"
)

// A spec above the administrator's caps runs under the caps, and says so
// in Capped; once the spec is within them, Capped goes.
func TestLimitsCapTheSpecAndSaySo(t *testing.T) {
	r := &McpServerReconciler{Caps: tenancy.Caps{MaxCatalogBytes: 1 << 20, MaxOperationTimeout: 10 * time.Second, MinHealthInterval: time.Minute}}
	srv := &mcpv1alpha1.McpServer{}
	srv.Generation = 3
	srv.Spec.OperationTimeout = &metav1.Duration{Duration: 5 * time.Minute}
	srv.Spec.HealthCheck.Interval = &metav1.Duration{Duration: 5 * time.Second}
	srv.Spec.Import.MaxTools = 100
	sc := &serverScope{server: srv, now: time.Now()}
	if err := r.reconcileLimits(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	want := tenancy.Limits{MaxCatalogBytes: 1 << 20, MaxTools: 100, OperationTimeout: 10 * time.Second, HealthInterval: time.Minute}
	if sc.limits != want {
		t.Errorf("limits %+v, want %+v", sc.limits, want)
	}
	if sc.interval() != time.Minute {
		t.Errorf("probed every %s, want the shortest interval allowed", sc.interval())
	}
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCapped)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != mcpv1alpha1.ReasonCappedByAdministrator || c.ObservedGeneration != 3 {
		t.Fatalf("Capped = %+v", c)
	}
	for _, field := range []string{"spec.import.maxCatalogBytes asks for 16777216", "spec.operationTimeout", "spec.healthCheck.interval"} {
		if !strings.Contains(c.Message, field) {
			t.Errorf("message %q does not name %s", c.Message, field)
		}
	}
	ep := withLimits(mcp.Endpoint{Name: "x"}, sc.limits)
	if ep.MaxCatalogBytes != 1<<20 || ep.MaxTools != 100 || ep.Timeout != 10*time.Second {
		t.Errorf("endpoint %+v does not carry the limits", ep)
	}

	// Within the caps: the spec's own values, and no Capped.
	srv.Spec.OperationTimeout.Duration = time.Second
	srv.Spec.HealthCheck.Interval.Duration = time.Hour
	srv.Spec.Import.MaxCatalogBytes = 1 << 16
	if err := r.reconcileLimits(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCapped) != nil {
		t.Error("Capped stays on a spec within the caps")
	}
	if sc.limits.MaxCatalogBytes != 1<<16 || sc.limits.OperationTimeout != time.Second {
		t.Errorf("limits %+v", sc.limits)
	}
}
