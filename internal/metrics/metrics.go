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
	// GatewayCalls counts gateway tool calls by tool, outcome (Succeeded,
	// ToolError, Failed, Denied) and reason (a denial reason or an error
	// kind; empty on success). namespace, server and tool name an McpTool
	// object, and only once RBAC let the caller call it: a call refused
	// before that carries them empty, so that no caller can mint series by
	// sending names.
	GatewayCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_calls_total",
		Help: "Tool calls through the gateway, by tool, outcome and reason.",
	}, []string{"namespace", "server", "tool", "outcome", "reason"})

	// GatewayRefusals counts every refusal by reason, including requests
	// refused before they named a tool (Unauthenticated, RateLimited).
	GatewayRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_refusals_total",
		Help: "Requests and tool calls the gateway refused, by reason.",
	}, []string{"reason"})

	// GatewayResultFindings counts what result inspection found in the
	// results of tool calls, by the caller's namespace, the kind found
	// (HiddenCharacters, InstructionLike, Secret, TooLarge) and the action
	// taken for the result (Annotate, Redact, Refuse); a result with
	// findings of several kinds counts once for each.
	GatewayResultFindings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_result_findings_total",
		Help: "Tool results in which the gateway's inspection found something, by namespace, kind and the action taken.",
	}, []string{"namespace", "kind", "action"})

	// GatewayReadMarkWrites counts the writes of McpReadMarks, by the
	// caller's namespace: a caller's mark is written when it rises or its
	// expiry must be extended (at most once per class and half window), never
	// per call.
	GatewayReadMarkWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_read_mark_writes_total",
		Help: "Writes of callers' read marks for the write-down rule, by namespace.",
	}, []string{"namespace"})

	// GatewayBudgetRefusals counts requests refused because the caller's
	// ServiceAccount or namespace was over a gateway budget, by the
	// caller's namespace (authenticated, never what a caller sent), the
	// budget's scope (ServiceAccount, Namespace) and reason (RateLimited,
	// ConcurrencyLimited).
	GatewayBudgetRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_budget_refusals_total",
		Help: "Requests the gateway refused because a ServiceAccount or namespace was over its budget, by namespace, scope and reason.",
	}, []string{"namespace", "scope", "reason"})

	// GatewayAuditAggregated counts denials not written as records of
	// their own because an identical one (caller, tool, reason) was
	// written within the aggregation window, by reason; a later record
	// carries their number.
	GatewayAuditAggregated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_audit_aggregated_total",
		Help: "Gateway denials aggregated into a later audit record instead of written on their own, by reason.",
	}, []string{"reason"})

	// GatewayCallDuration observes the gateway's own share of each call
	// sent upstream: the time from receiving tools/call to answering it,
	// less the upstream call.
	GatewayCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_catalog_gateway_call_duration_seconds",
		Help:    "Time the gateway adds to a tool call (decision, audit, credential), excluding the upstream call.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"namespace", "server", "tool"})

	// GatewayUpstreamDuration observes the upstream tools/call operation
	// (handshake included) of each call sent.
	GatewayUpstreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "mcp_catalog_gateway_upstream_duration_seconds",
		Help: "Duration of the upstream MCP tools/call operation of gateway calls.",
		// The MCP semantic conventions' boundaries.
		Buckets: []float64{.01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60, 120, 300},
	}, []string{"namespace", "server", "tool"})

	// GatewayApprovalEvents counts what the gateway did with McpCallApprovals:
	// requested (created one), used (an approved one let its call through).
	// Each happens once per object, on whichever replica did it.
	GatewayApprovalEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_approvals_total",
		Help: "McpCallApprovals the gateway created (requested) and used (used).",
	}, []string{"event"})

	// GatewayApprovals reports McpCallApprovals by state (pending,
	// approved, denied, used, expired) as the last sweep found them.
	GatewayApprovals = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_gateway_approvals",
		Help: "McpCallApprovals by state, as of the gateway's last approval sweep.",
	}, []string{"state"})

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

	// ToolDrift counts tool definitions the importer recorded with findings
	// (status.drift of an McpTool), by namespace and category: a changed
	// definition, or a first one with hidden characters or
	// instruction-like text. Categories are fixed words.
	ToolDrift = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_tool_drift_total",
		Help: "Tool definitions recorded with drift findings, by namespace and category.",
	}, []string{"namespace", "category"})

	// Tools reports each server's tools by state (imported, enabled,
	// skipped, removed). Labelled by namespace and McpServer name, which
	// the cluster's operators chose, not the remote server.
	Tools = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_tools",
		Help: "Tools of each McpServer, by state.",
	}, []string{"namespace", "server", "state"})

	// LastContact is when each McpServer last completed an operation with
	// the operator, probe or import, updated at every one. The status field
	// lastContactTime is refreshed at a bounded rate instead (see
	// docs/architecture.md); this is the exact figure.
	LastContact = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_server_last_contact_timestamp_seconds",
		Help: "Unix time of each McpServer's last completed probe or import.",
	}, []string{"namespace", "server"})

	// GatewayLastContact is when a tool call through this gateway replica
	// last had an answer from each McpServer (a tool error is an answer
	// too), updated at every one. The gateway writes no McpServer status:
	// the controller owns it, and this gauge is the call side's record.
	// Each replica reports its own calls; take the max across them.
	GatewayLastContact = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_gateway_server_last_contact_timestamp_seconds",
		Help: "Unix time of each McpServer's last answer to a tool call through this gateway replica.",
	}, []string{"namespace", "server"})

	// Notifications counts webhook notifications by event type and
	// result: delivered, retried (a try failed and another follows),
	// failed (given up), dropped (the queue was full) and limited (the
	// event's namespace was over its rate).
	Notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_notifications_total",
		Help: "Webhook notifications, by event type and result (delivered, retried, failed, dropped, limited).",
	}, []string{"type", "result"})

	// ToolListeners is how many streams the controllers keep open to
	// McpServers that announce changes of their tools (docs/adr/028).
	ToolListeners = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mcp_catalog_tool_listeners",
		Help: "Streams open to McpServers that announce changes of their tools.",
	})

	// ToolListenersRefused counts servers not listened to because the
	// process-wide or per-namespace bound on listeners was reached.
	ToolListenersRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_catalog_tool_listeners_refused_total",
		Help: "Times a server was not listened to because the listener bounds were reached.",
	})

	// ToolListChanges counts the imports that servers' change
	// notifications triggered (after debouncing and rate limiting).
	ToolListChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_catalog_tool_list_change_imports_total",
		Help: "Imports triggered by McpServers announcing that their tools changed.",
	})

	// GatewayToolListWatchers is how many initialize-era sessions and
	// 2026-07-28 listen streams this gateway replica tells when what their
	// caller may see changes, by kind (session, listen).
	GatewayToolListWatchers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_gateway_tool_list_watchers",
		Help: "Agent sessions and listen streams this gateway replica tells of tool list changes, by kind.",
	}, []string{"kind"})

	// GatewayAgentWaits is how many calls on this gateway replica wait for
	// their agents' answers to a server's request for input, by kind
	// (parked: a 2026-07-28 agent's round; stream: an agent without a
	// session, asked on its call's answer).
	GatewayAgentWaits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_gateway_agent_waits",
		Help: "Calls on this gateway replica waiting for their agents' answers to a server's request for input, by kind.",
	}, []string{"kind"})

	// GatewayToolListWatchersRefused counts sessions and listen streams
	// not told of changes because a bound on them was reached.
	GatewayToolListWatchersRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_tool_list_watchers_refused_total",
		Help: "Agent sessions and listen streams not told of tool list changes because a bound was reached.",
	})

	// GatewayToolListNotifications counts notifications/tools/list_changed
	// to agents by result: sent, failed (not written), coalesced (one was
	// still being written to the same session).
	GatewayToolListNotifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_gateway_tool_list_notifications_total",
		Help: "Tool list change notifications to agents, by result (sent, failed, coalesced).",
	}, []string{"result"})

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
	return []prometheus.Collector{
		GatewayCalls, GatewayRefusals, GatewayBudgetRefusals, GatewayResultFindings, GatewayReadMarkWrites, GatewayCallDuration, GatewayUpstreamDuration, GatewayApprovalEvents, GatewayApprovals, GatewayLastContact,
		ProbeDuration, ProbeFailures, ImportDuration, ImportFailures, ToolDrift, Tools, LastContact, GatewayAuditFailures, GatewayAuditAggregated, Notifications, State,
		ToolListeners, ToolListenersRefused, ToolListChanges,
		GatewayToolListWatchers, GatewayToolListWatchersRefused, GatewayToolListNotifications,
		GatewayAgentWaits,
	}
}

func init() {
	crmetrics.Registry.MustRegister(Collectors()...)
}
