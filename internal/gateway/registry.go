package gateway

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/registry"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// RegistryPath is where the gateway serves the catalog each caller may
// call as a read-only MCP Registry (v0.1), for IDEs that let agents use
// only the servers a registry lists (docs/registry.md).
const RegistryPath = "/v0.1/"

// registryCatalog is registry out's catalog for the caller of r: the
// servers of exactly the tools a tools/list offers that caller, each with
// those tools, the highest data class among them and whether any of their
// calls needs a person's approval, as the gateway applies them.
func (g *Gateway) registryCatalog(r *http.Request) ([]registry.CallableServer, error) {
	ctx := r.Context()
	id := authn.IdentityOf(auth.TokenInfoFromContext(ctx))
	if id == nil {
		// The identify stage lets no request without one through.
		return nil, &registry.Refusal{Status: http.StatusUnauthorized, Message: "no caller"}
	}
	offers, verdicts, err := g.visibleVerdicts(ctx, id)
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "deciding the registry's servers failed")
		return nil, &registry.Refusal{Status: http.StatusServiceUnavailable, Message: undecidedMessage, Header: http.Header{"Retry-After": {"1"}}}
	}
	var order []string
	groups := map[string]*registry.CallableServer{}
	for i, o := range offers {
		name := toolname.Group(o.tool.Spec.ServerRef.Name)
		if o.shared != nil {
			// The prefix of the shared tools' names: mcps_<McpSharedServer>.
			name = strings.TrimSuffix(toolname.SharedLocalName(o.shared.Name, ""), "_")
		}
		gr, ok := groups[name]
		if !ok {
			srv, err := g.readServer(ctx, types.NamespacedName{Namespace: o.tool.Namespace, Name: o.tool.Spec.ServerRef.Name}, nil)
			if err != nil {
				// Gone since the decision: its tools are not callable.
				continue
			}
			entry := registry.Callable(srv, id.Namespace, name, nil)
			// What the gateway applies, from the tools' verdicts below.
			entry.DataClass, entry.ApprovalRequired = "", false
			gr = &entry
			groups[name] = gr
			order = append(order, name)
		}
		v := verdicts[i]
		gr.Tools = append(gr.Tools, o.localName())
		if v.class != "" && (gr.DataClass == "" || !governance.WithinCeiling(v.class, mcpv1alpha1.DataClass(gr.DataClass))) {
			gr.DataClass = string(v.class)
		}
		gr.ApprovalRequired = gr.ApprovalRequired || v.approval
	}
	out := make([]registry.CallableServer, 0, len(order))
	for _, name := range order {
		out = append(out, *groups[name])
	}
	return out, nil
}

// charged serves next and charges the bytes it answered to the caller's
// byte budgets.
func (g *Gateway) charged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		if id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context())); id != nil {
			g.budgets.Charge(id, cw.n)
		}
	})
}

// countingWriter counts the bytes of a response's body.
type countingWriter struct {
	http.ResponseWriter
	n int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}
