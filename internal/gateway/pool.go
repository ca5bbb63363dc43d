package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// A gateway pool (docs/adr/036-gateway-pools.md) is a gateway run for a
// list of namespaces (Options.Namespaces, the manager's watch namespaces):
// its cache holds the objects of those namespaces only, so it can decide
// for no other. A caller of another namespace is refused before any work,
// and a shared server whose owner's namespace the pool does not serve is
// reported, never read.

// misdirectedErrorCode is the JSON-RPC error code of a request refused
// because this gateway does not serve the caller's namespace.
const misdirectedErrorCode = -32021

// ErrOwnerNotServed is the error of reading a shared server whose owner's
// namespace this gateway does not serve.
var ErrOwnerNotServed = errors.New("gateway: the shared server's namespace is not served by this gateway")

// ownerNotServed names the McpSharedServer and the namespace it points to.
type ownerNotServed struct {
	namespace, shared, owner string
}

func (e *ownerNotServed) Error() string {
	return fmt.Sprintf("McpSharedServer %s/%s names a server in namespace %s, which this gateway does not serve", e.namespace, e.shared, e.owner)
}

func (e *ownerNotServed) Unwrap() error { return ErrOwnerNotServed }

// serves reports whether this gateway serves namespace: every namespace
// when it was given none.
func (g *Gateway) serves(namespace string) bool {
	return len(g.Namespaces) == 0 || slices.Contains(g.Namespaces, namespace)
}

// ownerServed is nil when this gateway serves the namespace of the server
// ss names, and otherwise an *ownerNotServed, logged once per
// McpSharedServer.
func (g *Gateway) ownerServed(ctx context.Context, ss *mcpv1alpha1.McpSharedServer) error {
	if g.serves(ss.Spec.Server.Namespace) {
		return nil
	}
	err := &ownerNotServed{namespace: ss.Namespace, shared: ss.Name, owner: ss.Spec.Server.Namespace}
	if g.unservedOwners.report(ss.Namespace, ss.Name, ss.Spec.Server.Namespace) {
		logging.FromContext(ctx, logging.Gateway).Error(err, "a shared server is not offered: add its namespace to this gateway pool's namespaces",
			"namespace", ss.Namespace, "sharedServer", ss.Name, "serverNamespace", ss.Spec.Server.Namespace)
	}
	return err
}

// served refuses, right after authentication and before the budgets or
// any read, a caller whose namespace this gateway does not serve: 421
// Misdirected Request, counted and audited. The answer names the caller's
// namespace, never the namespaces this gateway serves.
func (g *Gateway) served(next http.Handler) http.Handler {
	if len(g.Namespaces) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context()))
		if id == nil || g.serves(id.Namespace) {
			next.ServeHTTP(w, r)
			return
		}
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedNamespaceNotServed).Inc()
		g.writeDenial(r.Context(), audit.Record{
			Time: g.now(), CallID: audit.NewCallID(), Phase: audit.PhaseDenied, Decision: "Denied",
			Caller: id.Username, Namespace: id.Namespace, Reason: audit.RefusedNamespaceNotServed,
		})
		body, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"error": map[string]any{
				"code":    misdirectedErrorCode,
				"message": fmt.Sprintf("this gateway does not serve namespace %q; use the gateway of that namespace's pool", id.Namespace),
				"data":    map[string]any{"reason": audit.RefusedNamespaceNotServed},
			},
		})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_, _ = w.Write(body)
	})
}
