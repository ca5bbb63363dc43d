package controller

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/tenancy"
)

// reconcileLimits decides what the server's imports and probes run under:
// its spec's budgets and health interval, within the administrator's caps
// (docs/adr/024-tenant-fairness.md). A spec that asks for more is not
// refused, since a lower budget or a longer interval only makes each
// operation cheaper; the allowed value is used and the Capped condition
// names every field it replaced. It never fails.
func (r *McpServerReconciler) reconcileLimits(_ context.Context, sc *serverScope) error {
	srv := sc.server
	asked := askedLimits(srv)
	if sc.healthInterval > 0 {
		asked.HealthInterval = sc.healthInterval
	}
	limits, capped := r.Caps.Apply(asked)
	sc.limits = limits
	if len(capped) == 0 {
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionCapped)
		return nil
	}
	parts := make([]string, len(capped))
	for i, c := range capped {
		parts[i] = c.String()
	}
	setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionCapped, metav1.ConditionTrue, mcpv1alpha1.ReasonCappedByAdministrator,
		strings.Join(parts, "; ")+"; the allowed values are used", sc.now)
	return nil
}

// askedLimits is what the spec asks for, with the defaults of fields an
// object stored before they had defaults lacks.
func askedLimits(srv *mcpv1alpha1.McpServer) tenancy.Limits {
	l := tenancy.Limits{
		MaxCatalogBytes:  srv.Spec.Import.MaxCatalogBytes,
		MaxTools:         srv.Spec.Import.MaxTools,
		OperationTimeout: mcp.DefaultTimeout,
		HealthInterval:   healthInterval(srv),
	}
	if l.MaxCatalogBytes <= 0 {
		l.MaxCatalogBytes = mcp.DefaultMaxCatalogBytes
	}
	if l.MaxTools <= 0 {
		l.MaxTools = mcp.DefaultMaxTools
	}
	if t := srv.Spec.OperationTimeout; t != nil && t.Duration > 0 {
		l.OperationTimeout = t.Duration
	}
	return l
}

// withLimits is ep under the limits: the budgets the MCP client enforces.
func withLimits(ep mcp.Endpoint, l tenancy.Limits) mcp.Endpoint {
	ep.MaxCatalogBytes = l.MaxCatalogBytes
	ep.MaxTools = int(l.MaxTools)
	ep.Timeout = l.OperationTimeout
	return ep
}
