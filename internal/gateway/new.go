package gateway

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/registry"
)

// ErrMissingOption is returned by New when a required option is not set.
var ErrMissingOption = errors.New("gateway: a required option is not set")

// New builds a Gateway and the HTTP handler serving MCP at Path. Every
// request is authenticated; a session is bound to the identity that opened
// it.
//
// Two protocol eras are served on the one endpoint. The go-sdk serves the
// stateless 2026-07-28 revision only from a stateless handler, and
// server-to-client requests (the initialize era's elicitation, which
// approval needs) only from a stateful one, so a request is routed by the
// MCP-Protocol-Version header it carries: 2026-07-28 and later go to the
// stateless handler, everything else (initialize, and requests of a session)
// to the stateful one. Approval works in both: by default a call that
// needs it creates an McpCallApproval a person decides, and the agent is
// told with a URL elicitation (the -32042 error in 2025-11-25, an
// input-required result in 2026-07-28) and retries; with the
// ClientElicitation opt-in the client's user is asked, on the session or
// through an input-required result with signed request state.
func New(o Options) (*Gateway, error) {
	for _, req := range []struct {
		name    string
		missing bool
	}{
		{"Reader", o.Reader == nil}, {"Authn", o.Authn == nil}, {"Authz", o.Authz == nil},
		{"Upstreams", o.Upstreams == nil}, {"MCP", o.MCP == nil}, {"Audit", o.Audit == nil}, {"Recorder", o.Recorder == nil},
	} {
		if req.missing {
			return nil, fmt.Errorf("%w: %s", ErrMissingOption, req.name)
		}
	}
	g := &Gateway{Options: o}
	g.Reader = newBoundedReader(o.Reader, readTimeout, o.Informers)
	g.approvalKeys = o.ApprovalKeys
	if g.approvalKeys == nil {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		g.approvalKeys = approvals.StaticKeys{Current: key}
	}
	g.identifier = authn.NewIdentifier(o.Authn, o.OAuth, o.UnauthenticatedRate, o.UnauthenticatedBurst, o.Clock)
	g.budgets = budget.NewBudgeter(o.Budgets, o.Clock)
	g.denials = audit.NewDenials(o.DenialWindow)
	g.listPrefix, g.eraListPrefix = g.buildListPrefix(), g.buildEraListPrefix()
	g.initialized = g.buildInitialized()
	g.discovered = g.buildDiscovered()
	g.inflight = budget.NewInFlight(o.MaxRequestBytesInFlight, g.maxRequestBytes())
	g.textResultPrefix = g.buildTextResultPrefix()
	g.lists.maxBytes = o.ListCacheBytes
	if g.lists.maxBytes <= 0 {
		g.lists.maxBytes = DefaultListCacheBytes
	}
	g.approver = approvals.NewApprover(g.approvalKeys)
	g.changes = newChanges()
	g.admission = approvals.NewAdmissionGuard(o.Approvals, o.ApprovalPolicy)
	if o.TracerProvider != nil {
		g.tracer = o.TracerProvider.Tracer(instrumentationName)
	}
	logger := slog.New(slog.DiscardHandler)
	stateful := sdk.NewStreamableHTTPHandler(g.serverFor, &sdk.StreamableHTTPOptions{
		SessionTimeout:               10 * time.Minute,
		PropagateRequestCancellation: true,
		Logger:                       logger,
	})
	stateless := sdk.NewStreamableHTTPHandler(g.serverFor, &sdk.StreamableHTTPOptions{
		Stateless: true,
		// A stateless request has exactly one answer and the gateway sends
		// nothing before it (a question for the agent is an input-required
		// result or an error, not a request on the stream), so the answer
		// is one application/json body: no event framing to write or for
		// the agent to parse.
		JSONResponse:                 true,
		PropagateRequestCancellation: true,
		Logger:                       logger,
	})
	sdkPath := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Stateless || modernRequest(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	route := g.front(sdkPath)
	mux := http.NewServeMux()
	mcpEndpoint := g.identifier.Handler(g.served(g.budgeted(route)))
	mux.Handle(Path, mcpEndpoint)
	// A namespace's endpoint: where a person's agent names the namespace
	// it calls in (ADR 053); a ServiceAccount may use its own.
	mux.Handle(NamespacedPath, mcpEndpoint)
	if meta := g.identifier.MetadataHandler(); meta != nil {
		for _, p := range g.identifier.MetadataPatterns() {
			mux.Handle(p, meta)
		}
	}
	if o.PersonAuth != nil {
		// Reached by a person's browser, without a gateway token: the
		// signed state is what it is checked by.
		mux.Handle(personauth.CallbackPath, o.PersonAuth.CallbackHandler())
	}
	if o.PublicURL != "" {
		reg, err := registry.NewHandler(registry.CatalogFunc(g.registryCatalog), registry.HandlerOptions{EndpointURL: o.PublicURL})
		if err != nil {
			return nil, fmt.Errorf("gateway: serving the registry: %w", err)
		}
		// The same stages before it as before a tools/list, and its
		// answer charged to the byte budgets as a list's is.
		mux.Handle(RegistryPath, g.identifier.Handler(g.served(g.budgeted(g.charged(reg)))))
	}
	g.handler = mux
	return g, nil
}

// Handler returns the HTTP handler serving MCP at Path.
func (g *Gateway) Handler() http.Handler { return g.handler }
