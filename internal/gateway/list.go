package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// serverFor gives the MCP server a session (or a stateless request) sees:
// the tools the caller may use at this moment. Calls are decided again when
// they are made, and a call of a tool the server does not offer is refused
// by the same decision too, so that it is audited with its reason.
//
// A 2026-07-28 tools/call names its one tool in the Mcp-Name header (the
// SDK refuses a request whose header and body disagree), so it is served
// by a server offering that tool alone when the caller may see it, and by
// one offering none otherwise. Those servers depend on the tool's
// definition only, not on the caller, and are kept per version of the
// McpTool (toolServers): a call neither lists the catalog nor builds a
// server and parses a schema.
func (g *Gateway) serverFor(r *http.Request) *sdk.Server {
	id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context()))
	if id == nil {
		return nil
	}
	memo, _ := r.Context().Value(memoKey{}).(*serverMemo)
	if memo != nil && memo.s != nil {
		return memo.s
	}
	s := g.serverForRequest(r, id)
	if memo != nil {
		memo.s = s
	}
	return s
}

func (g *Gateway) serverForRequest(r *http.Request, id *authn.Identity) *sdk.Server {
	log := logging.FromContext(r.Context(), logging.Gateway)
	modern := modernRequest(r)
	if !g.Stateless && r.Header.Get("Mcp-Session-Id") != "" && !modern {
		// A request of an existing session is served by the server built
		// when the session began; the SDK asks for one here only to read
		// the protocol versions, which every server shares. Listing the
		// tools would cost a review per tool on every request.
		return g.bareServer()
	}
	method, name, known := requestNames(r, modern)
	switch {
	case !known:
		// A batch, or a body the front door could not read: what it
		// holds is the SDK's to find, and it may list.
	case method == "tools/call":
		// A call is served by a server offering the one tool it names.
		o, err := g.visibleTool(r.Context(), id, name)
		if errors.Is(err, ErrOwnerNotServed) {
			// Not offered here; the call is refused with the reason
			// (refuseUnoffered).
			o, err = nil, nil
		}
		if err != nil {
			log.Error(err, "deciding the called tool failed")
			return g.undecidedServer()
		}
		if o == nil {
			return g.servers.get(nil, func() *sdk.Server { return g.offering(log) })
		}
		return g.servers.get(o, func() *sdk.Server { return g.offering(log, *o) })
	case method == "tools/list", modern && method == methodListen, !modern && !g.Stateless && method == "initialize":
		// What lists, or begins what is told of changes: the tools the
		// caller may see now.
	default:
		// Nothing else reads the tools: a server offering none, with the
		// capabilities one offering them declares.
		return g.newServer(g.changes.running.Load() && (modern || !g.Stateless))
	}
	gen := g.changes.generation()
	tools, err := g.visibleTools(r.Context(), id)
	if err != nil {
		log.Error(err, "listing tools failed")
		return g.undecidedServer()
	}
	return g.watchedOffer(r, log, id, gen, tools)
}

// requestNames are the method a request names and, for a tools/call, the
// tool: from the headers in 2026-07-28 (the SDK refuses a request whose
// headers and body disagree), from the message the front door read
// otherwise; known is false when the front door read none (a batch, a
// body that is not one message).
func requestNames(r *http.Request, modern bool) (method, name string, known bool) {
	if modern {
		return r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), true
	}
	m := messageOf(r.Context())
	if m == nil {
		return "", "", false
	}
	if m.method == "tools/call" && m.params != nil {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.params, &p) != nil {
			return "", "", false
		}
		name = p.Name
	}
	return m.method, name, true
}

// bareServer offers nothing and observes nothing: the SDK answers a call
// on it with an unknown tool. It stands in, for a request of an existing
// session, where the SDK reads only the protocol versions.
func (g *Gateway) bareServer() *sdk.Server { return g.newServer(false) }

// newServer is a server without tools. listChanged declares the tools
// capability's listChanged: only a server whose offer is kept up to date,
// and whose sessions are told when it changes, says so (changes.go). Every
// list result it answers carries the gateway's cache fields
// (setCacheable).
func (g *Gateway) newServer(listChanged bool) *sdk.Server {
	s := sdk.NewServer(g.implementation(), &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: listChanged}},
		SetCacheable: g.setCacheable,
	})
	// Prompts and resources are answered for the request's caller
	// (features.go).
	s.AddReceivingMiddleware(g.featureMiddleware)
	return s
}

// implementation is what the gateway says it is.
func (g *Gateway) implementation() *sdk.Implementation {
	return &sdk.Implementation{Name: "mcp-catalog-gateway", Version: g.Version}
}

// offering builds a server that offers tools, and observes and decides
// every tools/call made on it, offered or not.
func (g *Gateway) offering(log logr.Logger, tools ...toolOffer) *sdk.Server {
	return g.newOffer(g.bareServer(), log, g.present(log, tools)).s
}

// offer is a server and the tools it offers, by local name. What a
// session is offered can change while it lasts (changes.go replaces it),
// so the set is guarded; a name is in it only while the server has the
// tool.
type offer struct {
	s *sdk.Server

	mu      sync.RWMutex
	offered map[string]presented
	// watcher is set while a session or listen stream of this server is
	// told of changes (changes.go).
	watcher *watcher
	// pending is set when a replacement of the tools wants its session
	// told (changes.go).
	pending atomic.Bool
	// hashOnly marks the offer of a listen stream: no tools, and
	// listHash, the hash of those its caller may see (changes.go).
	hashOnly bool
	listHash [sha256.Size]byte
}

// presented is one tool as an agent reads it, and the McpTool it calls
// (through the caller's McpSharedServer, for a shared tool).
type presented struct {
	key  toolRef
	tool *sdk.Tool
	// taskSupport is the McpTool's status.taskSupport, which the SDK's
	// Tool cannot carry (taskdeclare.go).
	taskSupport string
	// def is the tool's encoding, set once it was hashed (changes.go).
	def []byte
}

// present turns the tools the decision allowed into what agents read of
// them; a tool whose view cannot be built is left out (the decision offers
// no such tool; this is a newer version).
func (g *Gateway) present(log logr.Logger, tools []toolOffer) []presented {
	out := make([]presented, 0, len(tools))
	for _, o := range tools {
		key := o.ref()
		v, err := g.views.Get(o.tool)
		if err != nil {
			log.Error(err, "a tool cannot be offered", "tool", key.String())
			continue
		}
		out = append(out, presented{key: key, tool: sdkTool(o.localName(), v), taskSupport: o.listedTaskSupport()})
	}
	return out
}

// newOffer adds tools to s and decides every tools/call made on it.
func (g *Gateway) newOffer(s *sdk.Server, log logr.Logger, tools []presented) *offer {
	o := &offer{s: s, offered: make(map[string]presented, len(tools))}
	for _, p := range tools {
		o.add(g, log, p)
	}
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				res, err := next(ctx, method, req)
				return o.declareTaskSupport(req, res), err
			}
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			creq, ok := req.(*sdk.CallToolRequest)
			if !ok || creq.Params == nil {
				return next(ctx, method, req)
			}
			// Every tools/call is observed here, offered or not: one
			// count, one span, the clock started before any decision.
			ctx, obs := g.startCall(ctx, creq)
			var res sdk.Result
			var err error
			if o.has(creq.Params.Name) {
				res, err = next(ctx, method, req)
				if r, ok := res.(*sdk.CallToolResult); ok && err == nil {
					res = resultForEra(r, creq.ProtocolVersion())
				}
			} else {
				res, err = g.refuseUnoffered(ctx, creq), nil
			}
			g.endCall(obs, err)
			return res, err
		}
	})
	return o
}

// add offers p: the server gets the tool first, then the name is in the
// set.
func (o *offer) add(g *Gateway, log logr.Logger, p presented) {
	key := p.key
	if err := addTool(o.s, p.tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return g.call(g.sessionRelay(ctx, req), req, key)
	}); err != nil {
		log.Error(err, "a tool cannot be offered", "tool", key.String())
		return
	}
	o.mu.Lock()
	o.offered[p.tool.Name] = p
	o.mu.Unlock()
}

func (o *offer) has(name string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	_, ok := o.offered[name]
	return ok
}

// toolServers keeps, per McpTool, the server offering that tool alone,
// built for one resourceVersion of it, and one server offering nothing.
// A server is shared by the stateless requests of every caller allowed the
// tool: it holds the definition, never an identity (each call is decided
// on the request's own). Entries of deleted tools stay until the map holds
// maxToolServers, when it starts again empty.
type toolServers struct {
	mu   sync.Mutex
	m    map[toolRef]toolServer
	none *sdk.Server
}

type toolServer struct {
	version string
	s       *sdk.Server
}

// maxToolServers bounds the servers kept (a few KiB each).
const maxToolServers = 4096

// get returns the server for o (nil: the one offering nothing), building
// it with build when o changed since it was built.
func (c *toolServers) get(o *toolOffer, build func() *sdk.Server) *sdk.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o == nil {
		if c.none == nil {
			c.none = build()
		}
		return c.none
	}
	key, version := o.ref(), o.version()
	if e, ok := c.m[key]; ok && e.version == version {
		return e.s
	}
	if c.m == nil || len(c.m) >= maxToolServers {
		c.m = make(map[toolRef]toolServer)
	}
	s := build()
	c.m[key] = toolServer{version: version, s: s}
	return s
}

// addTool adds a tool to a server. The SDK panics on a definition it
// cannot serve (a schema whose root is not an object, a bad x-mcp-header);
// the importer never stores one, but status is writable by others, and one
// bad tool must not take down the caller's whole session.
func addTool(s *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool's definition cannot be served: %v", p)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// sdkTool presents an McpTool to agents: under its local name, the text and
// schema of its view (the reviewed text where the spec sets it, without the
// arguments the gateway sets), and hints that say what the gate takes the
// tool to do — what a person reviewed, else a destructive, non-idempotent,
// open-world write — rather than what the remote server claims.
func sdkTool(name string, v *toolview.View) *sdk.Tool {
	e := v.Effects
	destructive, openWorld := e.Destructive, e.OpenWorld
	t := &sdk.Tool{
		Name:        name,
		Title:       v.Title,
		Description: v.Description,
		InputSchema: json.RawMessage(v.InputSchema),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive, IdempotentHint: e.Idempotent, ReadOnlyHint: e.ReadOnly, OpenWorldHint: &openWorld},
	}
	if v.OutputSchema != nil {
		// Results are checked against it before agents get them (result.go).
		t.OutputSchema = json.RawMessage(v.OutputSchema)
	}
	return t
}

// visibleTool is the tool of local name name, if the caller may see it,
// and nil otherwise.
func (g *Gateway) visibleTool(ctx context.Context, id *authn.Identity, name string) (*toolOffer, error) {
	d, err := g.decideVisible(ctx, id, name)
	if d == nil {
		return nil, err
	}
	return &d.offer, nil
}

// visibleTools is what the caller may see: the tools of its namespace, and
// those shared with it, that verdictFor allows, that is, exactly those a
// call would be allowed (approval aside).
//
// With ServableIndex the Reader hands over only the namespace's listable
// tools (IndexTools), and shares them instead of copying them: the work
// of a list is proportional to the tools that can be served, not to the
// tools the namespace holds. Nothing here or below changes a tool.
func (g *Gateway) visibleTools(ctx context.Context, id *authn.Identity) ([]toolOffer, error) {
	out, _, err := g.visibleVerdicts(ctx, id)
	return out, err
}

// visibleVerdicts is visibleTools with each tool's verdict (its effective
// class and approval), in the same order.
func (g *Gateway) visibleVerdicts(ctx context.Context, id *authn.Identity) ([]toolOffer, []verdict, error) {
	var list mcpv1alpha1.McpToolList
	opts := []client.ListOption{client.InNamespace(id.Namespace)}
	if g.ServableIndex {
		opts = append(opts, client.MatchingFields{IndexListable: "true"}, client.UnsafeDisableDeepCopy)
	}
	if err := g.Reader.List(ctx, &list, opts...); err != nil {
		return nil, nil, err
	}
	ceiling, err := g.ceiling(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	servers := map[types.NamespacedName]*mcpv1alpha1.McpServer{}
	candidates := make([]toolOffer, 0, len(list.Items))
	for i := range list.Items {
		candidates = append(candidates, toolOffer{tool: &list.Items[i]})
	}
	shared, err := g.sharedOffers(ctx, id.Namespace, servers)
	if err != nil {
		return nil, nil, err
	}
	candidates = append(candidates, shared...)
	type seen struct {
		o toolOffer
		v verdict
	}
	var kept []seen
	for _, o := range candidates {
		v, err := g.verdictFor(ctx, id, o, ceiling, servers)
		if err != nil {
			return nil, nil, err
		}
		if v.allowed() {
			kept = append(kept, seen{o, v})
		}
	}
	if len(kept) == 0 {
		return nil, nil, nil
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].o.localName() < kept[j].o.localName() })
	out, verdicts := make([]toolOffer, len(kept)), make([]verdict, len(kept))
	mode := mcpv1alpha1.ApprovalMode("")
	for i, k := range kept {
		out[i], verdicts[i] = k.o, k.v
		if k.v.approval && g.Approvals != nil {
			if mode == "" {
				policies, err := g.accessPolicies(ctx, id)
				if err != nil {
					return nil, nil, err
				}
				mode = approvalModeFor(id, policies)
			}
			out[i].waitsAsTask = k.v.terms.Mode(mode) == mcpv1alpha1.ApprovalPerson
		}
	}
	return out, verdicts, nil
}

// undecidedMessage answers a request whose tools could not be decided.
const undecidedMessage = "the gateway could not decide which tools the caller may use now (the Kubernetes API is unavailable); try again"

// undecidedServer stands in where the tools a caller may use cannot be
// decided (a SubjectAccessReview or a read failed; the error is logged).
// Every request on it, initialize included, is answered with a JSON-RPC
// error saying so: no session begins that offers nothing for its whole
// life, and a call is not answered "unknown tool".
func (g *Gateway) undecidedServer() *sdk.Server {
	s := g.bareServer()
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			metrics.GatewayRefusals.WithLabelValues(audit.RefusedDecisionFailed).Inc()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: undecidedMessage}
		}
	})
	return s
}
