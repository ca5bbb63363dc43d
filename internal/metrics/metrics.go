// Package metrics defines the operator's Prometheus metrics, registered with
// controller-runtime's registry so the manager's metrics endpoint serves
// them. Every label has a small, fixed set of values: no URLs, tool
// arguments, names from remote servers or secrets.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// GatewayCalls counts gateway tool calls by outcome (Succeeded,
	// ToolError, Failed, Denied) and reason (a denial reason or an error
	// kind; empty on success).
	GatewayCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_calls_total",
		Help: "Tool calls through the gateway, by outcome and reason.",
	}, []string{"outcome", "reason"})

	// ProbeDuration observes health probes by result (success, failure).
	ProbeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_catalog_probe_duration_seconds",
		Help:    "Duration of MCP health probes.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20},
	}, []string{"result"})

	// ProbeFailures counts failed health probes by condition reason.
	ProbeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_probe_failures_total",
		Help: "Failed MCP health probes, by reason.",
	}, []string{"reason"})

	// ImportDuration observes catalog imports by result.
	ImportDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_catalog_import_duration_seconds",
		Help:    "Duration of catalog imports (MCP operation and McpTool writes).",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"result"})

	// ImportFailures counts failed imports by condition reason.
	ImportFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_import_failures_total",
		Help: "Failed catalog imports, by reason.",
	}, []string{"reason"})

	// Tools reports each server's tools by state (imported, enabled,
	// skipped, removed). Labelled by namespace and McpServer name, which
	// the cluster's operators chose, not the remote server.
	Tools = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_tools",
		Help: "Tools of each McpServer, by state.",
	}, []string{"namespace", "server", "state"})

	// GatewayAuditFailures counts audit records the gateway could not write,
	// by phase (before: the call was refused; after: the call had happened;
	// denied: a refusal went unrecorded).
	GatewayAuditFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_audit_failures_total",
		Help: "Gateway audit records that could not be written, by phase.",
	}, []string{"phase"})
)

// Collectors are every collector the operator adds to controller-runtime's
// registry; the monitoring tests check alert rules and dashboards against
// the names they describe.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{GatewayCalls, ProbeDuration, ProbeFailures, ImportDuration, ImportFailures, Tools, GatewayAuditFailures, State}
}

func init() {
	crmetrics.Registry.MustRegister(Collectors()...)
}
