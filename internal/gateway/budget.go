package gateway

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// budgeted serves a request only within its caller's budgets. It runs
// right after authentication: a refused request has cost a token review
// (cached) and nothing else. Every method spends the rate budgets; only a
// POST, which carries the work (a list, a call), holds a place in the
// concurrency budgets while it is served, so that an open event stream
// (GET, or a 2026-07-28 subscriptions/listen, bounded on its own in
// changes.go) does not hold one for as long as it is open.
func (g *Gateway) budgeted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context()))
		if id == nil {
			next.ServeHTTP(w, r)
			return
		}
		release, over := g.budgets.Admit(id, r.Method == http.MethodPost && !listenRequest(r))
		if over != nil {
			g.refuseOverBudget(r.Context(), w, id, over)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// refuseOverBudget answers 429 with Retry-After and, as the transport
// allows for a request the server cannot accept, a JSON-RPC error
// response without an id; it counts the refusal and audits it.
func (g *Gateway) refuseOverBudget(ctx context.Context, w http.ResponseWriter, id *authn.Identity, over *budget.OverBudget) {
	metrics.GatewayRefusals.WithLabelValues(over.Reason).Inc()
	metrics.GatewayBudgetRefusals.WithLabelValues(id.Namespace, over.Scope, over.Reason).Inc()
	rec := audit.Record{
		Time: g.now(), CallID: audit.NewCallID(), Phase: audit.PhaseDenied, Decision: "Denied",
		Caller: id.Username, Namespace: id.Namespace, Reason: over.Reason, Detail: over.Scope,
	}
	g.writeDenial(ctx, rec)
	secs := max(1, int(math.Ceil(over.Wait.Seconds())))
	what := "request"
	if over.Reason == audit.RefusedBytesLimited {
		what = "answered-bytes"
	}
	msg := "the caller's ServiceAccount is over its " + what + " budget at the gateway; retry later"
	if !id.IsServiceAccount() {
		// A person has the budget of a ServiceAccount of their own.
		msg = "the caller is over its " + what + " budget at the gateway; retry later"
	}
	if over.Scope == budget.BudgetNamespace {
		msg = "the caller's namespace is over its " + what + " budget at the gateway; retry later"
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"error": map[string]any{
			"code":    budget.ErrorCode,
			"message": msg,
			"data":    map[string]any{"reason": over.Reason, "scope": over.Scope, "retryAfterSeconds": secs},
		},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}
