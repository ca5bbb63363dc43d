package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/logging"
)

// reconcileProbe runs the health probe when it is due (or requested) and
// sets Reachable. A successful probe records the contact; a failed one
// records only the condition, and stalls when only a spec change cures it.
func (r *McpServerReconciler) reconcileProbe(ctx context.Context, sc *serverScope) error {
	sc.probeChecked = true
	srv := sc.server
	requested := pendingRequest(srv.Annotations[mcpv1alpha1.AnnotationRequestedProbeAt], srv.Status.LastHandledProbeAt)
	forced := requested != ""
	// An import's handshake in this reconcile counts as the scheduled probe.
	if !forced && (!sc.plan.ProbeDue || sc.outcome.Probed != nil) {
		return nil
	}
	start := time.Now()
	res, err := r.MCP.Probe(ctx, sc.endpoint)
	sc.now = realOr(r.Clock).Now()
	if forced {
		srv.Status.LastHandledProbeAt = requested
	}
	took := time.Since(start)
	recordHandshake(sc, res, err, took, forced, !forced)
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
	logging.FromContext(ctx, logging.Prober).V(logging.Debug).Info("probed", "took", took.Round(time.Millisecond),
		"requested", forced, "reachable", c.Status, "reason", c.Reason)
	if err != nil && c.Status == metav1.ConditionFalse {
		return classifyOperation(err, c.Reason, c.Message)
	}
	return nil
}
