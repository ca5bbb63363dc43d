// Package logging is the one way the operator's code gets a logger: the
// logger controller-runtime put in the context (with the reconciled
// object's keys, when there is one), named for the component that logs,
// so that a person can follow one component's lines with a filter on the
// logger name instead of on message prefixes.
package logging

import (
	"context"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Component names, one per part of the operator that logs.
const (
	// Controllers names what the controllers log outside one component:
	// the outcome of an McpServer's reconcile, a failed mapping of events.
	Controllers = "controllers"
	// Importer imports McpServer catalogs into McpTools.
	Importer = "importer"
	// Prober probes McpServers' health.
	Prober = "prober"
	// ToolStatus decides and writes McpTool status.
	ToolStatus = "tool-status"
	// Profiles validates McpDelegationProfiles.
	Profiles = "profiles"
	// Policies validates McpAccessPolicies.
	Policies = "policies"
	// Credentials reads what an object references: Secrets and CA bundles.
	Credentials = "credentials"
	// Gateway serves tools to agents.
	Gateway = "gateway"
	// Sweeper deletes expired McpCallApprovals.
	Sweeper = "sweeper"
	// Notify delivers notifications to a webhook.
	Notify = "notify"
	// Manager assembles and runs the operator.
	Manager = "manager"
)

// FromContext returns the context's logger named for component.
func FromContext(ctx context.Context, component string) logr.Logger {
	return logf.FromContext(ctx).WithName(component)
}

// Verbosity levels. Errors and state changes a person acts on are logged at
// the default level; the outcome of every reconcile at Debug, so that one
// object can be followed with -v=1 (--zap-log-level=debug) without a flood
// at the default level.
const (
	Debug = 1
	Trace = 2
)
