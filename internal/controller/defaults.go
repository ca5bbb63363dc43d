package controller

import (
	"time"

	"k8s.io/utils/clock"
)

// Defaults of the reconcilers' settings, in one place: the manager's
// options and flags start from these, and a zero setting means these. The
// health interval's default belongs to the API
// (mcpv1alpha1.DefaultHealthCheckInterval), since the API server applies it.
const (
	// DefaultMaxConcurrentServers bounds how many servers are imported or
	// probed at once.
	DefaultMaxConcurrentServers = 16
	// DefaultApplyConcurrency bounds the parallel McpTool writes of one
	// import.
	DefaultApplyConcurrency = 8
	// DefaultCredentialRetryInterval is how soon a server whose Secret is
	// missing is looked at again. Secrets are not watched (the operator may
	// only get them, see docs/adr/003-secret-access.md), so this is how a
	// Secret created after its server is picked up without anyone's help.
	DefaultCredentialRetryInterval = 15 * time.Second
	// DefaultCatalogBudgetRetry is how soon an import that found its bytes
	// of the catalog budget taken is tried again.
	DefaultCatalogBudgetRetry = 2 * time.Second
)

// realOr is c, or the real clock when c is nil: a reconciler whose Clock
// is not set keeps real time.
func realOr(c clock.PassiveClock) clock.PassiveClock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}
