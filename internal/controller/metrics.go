package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// observeProbe records a handshake's duration and, when it completed, the
// contact (at every one, whether or not status shows it) or, when it
// failed, its reason (a fixed condition reason: bounded cardinality).
func observeProbe(srv *mcpv1alpha1.McpServer, d time.Duration, err error, now time.Time) {
	if err == nil {
		metrics.ProbeDuration.WithLabelValues("success").Observe(d.Seconds())
		metrics.LastContact.WithLabelValues(srv.Namespace, srv.Name).Set(float64(now.UnixMilli()) / 1e3)
		return
	}
	metrics.ProbeDuration.WithLabelValues("failure").Observe(d.Seconds())
	reason, _ := failureReason(err)
	if unauthenticatedButUp(srv, err) {
		reason = mcpv1alpha1.ReasonUnauthenticated
	}
	metrics.ProbeFailures.WithLabelValues(reason).Inc()
}

// observeImport records an import's duration; failureReason is empty on
// success.
func observeImport(d time.Duration, failureReason string) {
	if failureReason == "" {
		metrics.ImportDuration.WithLabelValues("success").Observe(d.Seconds())
		return
	}
	metrics.ImportDuration.WithLabelValues("failure").Observe(d.Seconds())
	metrics.ImportFailures.WithLabelValues(failureReason).Inc()
}

// setToolGauges publishes a server's tool counts.
func setToolGauges(srv *mcpv1alpha1.McpServer) {
	t := srv.Status.Tools
	if t == nil {
		return
	}
	for state, n := range map[string]int32{"imported": t.Imported, "enabled": t.Enabled, "skipped": t.Skipped, "removed": t.Removed} {
		metrics.Tools.WithLabelValues(srv.Namespace, srv.Name, state).Set(float64(n))
	}
}

// forgetServerGauges drops a deleted server's series.
func forgetServerGauges(namespace, name string) {
	metrics.Tools.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "server": name})
	metrics.LastContact.DeleteLabelValues(namespace, name)
}

// observeDrift counts a definition recorded with findings, once per
// category (fixed words: bounded cardinality).
func observeDrift(namespace string, categories []mcpv1alpha1.DriftCategory) {
	for _, c := range categories {
		metrics.ToolDrift.WithLabelValues(namespace, string(c)).Inc()
	}
}
