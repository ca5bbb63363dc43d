package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// observeProbe records a probe's duration and, when it failed, its reason
// (a fixed condition reason: bounded cardinality).
func observeProbe(srv *mcpv1alpha1.McpServer, d time.Duration, err error) {
	if err == nil {
		metrics.ProbeDuration.WithLabelValues("success").Observe(d.Seconds())
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

// forgetToolGauges drops a deleted server's series.
func forgetToolGauges(namespace, name string) {
	metrics.Tools.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "server": name})
	metrics.LastContact.DeleteLabelValues(namespace, name)
}

// observeContact records a completed operation's time, at every one.
func observeContact(srv *mcpv1alpha1.McpServer, now time.Time) {
	metrics.LastContact.WithLabelValues(srv.Namespace, srv.Name).Set(float64(now.UnixMilli()) / 1e3)
}
