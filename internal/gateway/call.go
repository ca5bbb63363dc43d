package gateway

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// callScope is what the stages of one call learn and hand on to the
// stages after them, in the order they learn it.
type callScope struct {
	// key is the McpTool the call is for: the one the session offered
	// under the called name; via is the caller's namespace's
	// McpSharedServer it was offered through ("" for its own tool).
	key types.NamespacedName
	via string
	obs *callObs
	// pre is the decision made before the call's stages ran, when one was
	// (callDecided); decide takes it instead of deciding again.
	pre *decided

	// Learnt by identify: the arguments as they came, and the audit record
	// of the call, which every later stage fills in, its hash that of the
	// arguments' bytes. decide decodes them only once the call is allowed
	// (args, or argsErr) and hashes their canonical form; applyRules makes
	// them the arguments sent upstream, and the record's hash theirs;
	// argsJSON is always the canonical form args was hashed in.
	rawArgs any
	// args is nil while argsJSON was not decoded (its bytes came in the
	// canonical form); arguments decodes it for the stages that read it.
	args     map[string]any
	argsJSON []byte
	argsErr  error
	rec      audit.Record
	// id is the caller, for what runs while the call is sent (a server's
	// requests for input are screened with its policies, interaction.go);
	// req is its request, whose _meta says, in 2026-07-28, what the caller
	// may be asked in a round.
	id  *authn.Identity
	req *sdk.CallToolRequest

	// Learnt by decide: the tool as the cache holds it now, the access
	// policies of the caller's namespace, which give the ceiling and the
	// approval mode, and the tool's effective data class and approval from
	// the specs of the tool and its server as they are now.
	tool     *mcpv1alpha1.McpTool
	shared   *mcpv1alpha1.McpSharedServer
	policies []mcpv1alpha1.McpAccessPolicy
	// decidedServer is the tool's server as the decision read it.
	decidedServer *mcpv1alpha1.McpServer
	class         mcpv1alpha1.DataClass
	approval      bool
	// terms are the owner's terms for approving a shared tool's call
	// (governance.ApprovalTerms); zero for the namespace's own tools.
	terms governance.ApprovalTerms

	// Learnt by auditBefore: the server the call is sent to.
	srv *mcpv1alpha1.McpServer

	// Learnt by authorizeUpstream: the calling person's own token, for a
	// per-person server, and the access token a person presented, for a
	// delegation that takes it (upstreamauth.go).
	personCred  *mcp.Credential
	callerToken secret.Secret

	// resume is set, by the send stage's reading of a round's state, for
	// a call answering a round of a call parked on this replica; parked
	// is set when the call parked, for the record stage to hand the
	// caller its round (parked.go).
	resume *parkResume
	parked *parkedRound

	// pinned is set for content approved by its hash (a ui:// app
	// resource's, features.go): result inspection refuses it on any
	// finding rather than change it.
	pinned bool
}

// call makes one tool call, stage by stage, each stage in the file named
// for it: identify (identity.go), decide (decision.go), applyRules
// (rules.go), authorizeUpstream (upstreamauth.go), approve (approval.go), auditBefore (audit.go), send (send.go)
// and record (observe.go). Every stage acts for the caller, whose identity it is
// given; the scope carries what the stages before it learnt. A stage that
// ends the call returns the answer the agent gets, having recorded it; the
// stages after it do not run.
func (g *Gateway) call(ctx context.Context, req *sdk.CallToolRequest, ref toolRef) (*sdk.CallToolResult, error) {
	return g.callDecided(ctx, req, ref, nil)
}

// decided is what the decide stage learns of a call that is allowed: the
// tool as offered, the access policies of the caller's namespace and the
// verdict. The gateway's own call path (callfast.go) decides before it
// takes a call, to learn that no approval is needed, and hands the
// decision on rather than making it twice within one request.
type decided struct {
	offer    toolOffer
	policies []mcpv1alpha1.McpAccessPolicy
	v        verdict
}

// callDecided is call with the decision already made (pre), or made by
// the decide stage when pre is nil.
func (g *Gateway) callDecided(ctx context.Context, req *sdk.CallToolRequest, ref toolRef, pre *decided) (*sdk.CallToolResult, error) {
	id := authn.IdentityOf(req.Extra.TokenInfo)
	c, answer := g.identify(ctx, req, id, ref)
	if answer != nil {
		return answer, nil
	}
	c.pre = pre
	if answer := g.decide(ctx, id, c); answer != nil {
		return answer, nil
	}
	if answer := g.applyRules(ctx, c); answer != nil {
		return answer, nil
	}
	if answer := g.guardRequest(ctx, id, c); answer != nil {
		return answer, nil
	}
	if answer, err := g.authorizeUpstream(ctx, req, id, c); answer != nil || err != nil {
		return answer, err
	}
	if answer, err := g.approve(ctx, req, id, c); answer != nil || err != nil {
		return answer, err
	}
	if answer := g.auditBefore(ctx, id, c); answer != nil {
		return answer, nil
	}
	sent := g.now()
	out, err := g.send(ctx, id, c)
	return g.record(ctx, id, c, sent, out, err), nil
}

// refuseUnoffered answers a call of a tool this server did not offer the
// caller: the decision says why (not servable, RBAC, ceiling), or that
// there is no such tool, and the refusal is audited like any other. A tool
// that became callable after a session began is refused too until the
// session is offered it (changes.go replaces a watched session's offer and
// tells it; a session that is not watched keeps what was decided when it
// began, and a new session sees the change).
func (g *Gateway) refuseUnoffered(ctx context.Context, req *sdk.CallToolRequest) *sdk.CallToolResult {
	id := authn.IdentityOf(req.Extra.TokenInfo)
	if id == nil {
		return refusal(unknownTool)
	}
	// The arguments of a call that is not made are not decoded.
	rec := audit.Record{CallID: audit.NewCallID(), Caller: id.Username, Namespace: id.Namespace, ArgumentsHash: rawArgumentsHash(req.Params.Arguments)}
	name := req.Params.Name
	if toolname.ValidLocalName(name) {
		// Only a well-formed name is recorded: it is the caller's input.
		rec.LocalName = name
	}
	o, err := g.offerNamed(ctx, id.Namespace, name)
	if unserved := (*ownerNotServed)(nil); errors.As(err, &unserved) {
		return g.refuseOwnerNotServed(ctx, rec, id, name, unserved)
	}
	if err != nil || o == nil {
		return g.deny(ctx, rec, nil, audit.DenyNotServable, "", unknownTool)
	}
	rec.Tool, rec.Server = o.tool.Name, o.tool.Spec.ServerRef.Name
	if o.shared != nil {
		rec.ServerNamespace, rec.SharedServer = o.tool.Namespace, o.shared.Name
	}
	if _, _, refused := g.gateCall(ctx, &rec, id, *o); refused != nil {
		return refused
	}
	return g.deny(ctx, rec, o.tool, audit.DenyNotServable, audit.DetailNotInSession,
		"this tool is not offered to this session yet; list the tools again, or start a new session, to use it")
}

// refuseOwnerNotServed refuses a call of a shared tool whose server is in
// a namespace this gateway does not serve. A caller RBAC allows to call
// the name is told why, naming only what its own namespace's
// McpSharedServer says; any other gets the uniform answer.
func (g *Gateway) refuseOwnerNotServed(ctx context.Context, rec audit.Record, id *authn.Identity, name string, e *ownerNotServed) *sdk.CallToolResult {
	rec.ServerNamespace, rec.SharedServer = e.owner, e.shared
	if ok, err := g.Authz.CanCall(ctx, id, id.Namespace, name); err != nil || !ok {
		return g.deny(ctx, rec, nil, audit.DenyNotServable, "", unknownTool)
	}
	return g.deny(ctx, rec, nil, audit.DenyNotServable, audit.DetailOwnerNotServed, fmt.Sprintf(
		"the server shared with this namespace is in namespace %q, which the gateway serving this namespace does not serve; "+
			"the gateway pool of this namespace must include that namespace", e.owner))
}

// offer is the tool the call is for as the caller's namespace sees it.
func (c *callScope) offer() toolOffer { return toolOffer{tool: c.tool, shared: c.shared} }

// identify is the first stage of a call: who calls (id, the identity the
// request's token was reviewed as), which call (a new call ID, the tool,
// the hash of the arguments) and the audit record begun with them. A call
// without an identity, or of another namespace's tool, is refused here,
// with the uniform answer and no record: the caller may not learn that the
// tool exists.
func (g *Gateway) identify(ctx context.Context, req *sdk.CallToolRequest, id *authn.Identity, ref toolRef) (*callScope, *sdk.CallToolResult) {
	obs := obsOf(ctx)
	key := ref.key
	if id == nil || (ref.via == "" && id.Namespace != key.Namespace) {
		obs.end(audit.OutcomeDenied, audit.DenyForbidden)
		return nil, refusal(unknownTool)
	}
	c := &callScope{key: key, via: ref.via, obs: obs, id: id, req: req, rec: audit.Record{CallID: audit.NewCallID(), Caller: id.Username, Namespace: id.Namespace, Tool: key.Name}}
	if ref.via != "" {
		// The tool is another namespace's: the record names both.
		c.rec.ServerNamespace, c.rec.SharedServer = key.Namespace, ref.via
	}
	// The arguments are decoded only once the call is allowed (decide): a
	// call that is not is audited with the hash of their bytes. Malformed
	// arguments are refused only after the decision, so that the answer to
	// a caller RBAC does not allow stays the uniform one.
	c.rawArgs, c.rec.ArgumentsHash = req.Params.Arguments, rawArgumentsHash(req.Params.Arguments)
	return c, nil
}

// arguments are the call's arguments decoded. The decision leaves
// arguments that came in the canonical form as their bytes (argsJSON); the
// stages that read them as values decode them here, once.
func (c *callScope) arguments() (map[string]any, error) {
	if c.args == nil && c.argsJSON != nil {
		var m map[string]any
		if err := decodeObject(c.argsJSON, &m); err != nil {
			return nil, err
		}
		c.args = m
	}
	return c.args, nil
}
