package gateway

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// decide is the decision stage of a call. The tool and its server are read
// again and the call decided by the decision that made the list
// (verdictFor): the tool may have been disabled, drifted or lost its
// server since the session listed it, and the server may have been
// tightened. Only then are malformed arguments refused, so that the answer
// to a caller RBAC does not allow stays the uniform one. Refusals of the
// decision are audited; one of the arguments is not.
func (g *Gateway) decide(ctx context.Context, id *authn.Identity, c *callScope) *sdk.CallToolResult {
	var o *toolOffer
	if c.pre != nil {
		o = &c.pre.offer
	} else {
		var err error
		if o, err = g.readOffer(ctx, id.Namespace, toolRef{key: c.key, via: c.via}); err != nil || o == nil {
			return g.deny(ctx, c.rec, nil, audit.DenyNotServable, "", unknownTool)
		}
	}
	t := o.tool
	c.tool, c.shared = t, o.shared
	c.rec.LocalName, c.rec.Server = o.localName(), t.Spec.ServerRef.Name
	var policies []mcpv1alpha1.McpAccessPolicy
	var v verdict
	if c.pre != nil {
		policies, v = c.pre.policies, c.pre.v
		c.rec.DataClass = string(v.class)
	} else {
		var refused *sdk.CallToolResult
		if policies, v, refused = g.gateCall(ctx, &c.rec, id, *o); refused != nil {
			return refused
		}
	}
	c.policies, c.class, c.approval, c.terms, c.decidedServer = policies, v.class, v.approval, v.terms, v.server
	c.obs.of(t)
	if answer := g.holdWriteDown(ctx, id, c); answer != nil {
		return answer
	}
	var hash string
	if c.args, c.argsJSON, hash, c.argsErr = encodedArguments(c.rawArgs); c.argsErr != nil {
		return g.deny(ctx, c.rec, t, audit.RefusedInvalidArguments, "", c.argsErr.Error())
	}
	c.rec.ArgumentsHash = hash
	return nil
}

// gateCall decides a call of o under the access policies of the caller's
// namespace, which it returns for the approval stage with the verdict, and
// answers an audited refusal when the call is not allowed. It records the
// tool's effective data class in rec.
func (g *Gateway) gateCall(ctx context.Context, rec *audit.Record, id *authn.Identity, o toolOffer) ([]mcpv1alpha1.McpAccessPolicy, verdict, *sdk.CallToolResult) {
	policies, err := g.accessPolicies(ctx, id)
	if err != nil {
		return nil, verdict{}, undecided(ctx, err)
	}
	v, err := g.verdictFor(ctx, id, o, ceilingFor(id, policies), nil)
	if err != nil {
		return nil, verdict{}, undecided(ctx, err)
	}
	rec.DataClass = string(v.class)
	if !v.allowed() {
		return nil, v, g.deny(ctx, *rec, o.tool, v.reason, v.detail, v.message())
	}
	return policies, v, nil
}

// undecided answers a call the gateway could not decide on (a read of the
// cache or a review failed): the agent is told to try again.
func undecided(ctx context.Context, err error) *sdk.CallToolResult {
	logging.FromContext(ctx, logging.Gateway).Error(err, "deciding on a call failed")
	return refusal("the gateway could not decide on this call; try again")
}

// verdict is the gate's answer for one caller and one tool, approval aside:
// allowed, or refused with a reason.
type verdict struct {
	// reason is empty when the tool may be listed and called, and otherwise
	// one of the Deny reasons.
	reason string
	// detail refines reason: for NotServable, why the tool is not servable.
	detail string
	// class and approval are the tool's effective data class and whether
	// its calls need a person's approval, from the specs of the tool and
	// its server as they are now (governance.Effective); class is empty
	// when the decision ended before the server was read.
	class    mcpv1alpha1.DataClass
	approval bool
	// terms are the owner's terms for approving a consumer's call of a
	// shared tool the owner requires approval for; zero otherwise.
	terms governance.ApprovalTerms
	// server is the tool's McpServer as the decision read it, on an
	// allowed verdict: the later stages of the same call that need the
	// server's spec read it here, not from the cache again. The audit
	// stage still reads it afresh, after any wait for a person.
	server *mcpv1alpha1.McpServer
}

func (v verdict) allowed() bool { return v.reason == "" }

// refused is a refusal for reason, refined by what the tool's state says.
func refused(reason string, t *mcpv1alpha1.McpTool) verdict {
	return verdict{reason: reason, detail: detailOf(reason, t)}
}

// detailOf refines a denial reason: for NotServable, why the definition is
// not the approved one, else the reason of the tool's Ready condition
// (Disabled, ServerNotReady, …), which the tool controller writes from a
// fixed vocabulary.
func detailOf(reason string, t *mcpv1alpha1.McpTool) string {
	if reason != audit.DenyNotServable {
		return ""
	}
	if !t.Spec.Enabled {
		return mcpv1alpha1.ReasonDisabled
	}
	if why := governance.Unapproved(t); why != "" {
		return why
	}
	c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
	switch {
	case c == nil:
		return mcpv1alpha1.ReasonNotImported
	case c.ObservedGeneration != t.Generation:
		return mcpv1alpha1.ReasonProgressing
	case c.Status != metav1.ConditionTrue:
		return c.Reason
	}
	return ""
}

// message tells the agent why the call was refused. Only a caller RBAC lets
// call the tool is told more than unknownTool.
func (v verdict) message() string {
	switch v.reason {
	case audit.DenyForbidden, audit.DenyNotShared:
		return unknownTool
	case audit.DenyAboveCeiling:
		return "the tool's data class is above the caller's ceiling (McpAccessPolicy, or for a shared tool the McpSharedServer's maxDataClass)"
	}
	msg := "the tool is not servable now"
	switch v.detail {
	case mcpv1alpha1.ReasonDisabled:
		msg += ": it is disabled"
	case mcpv1alpha1.ReasonDefinitionChanged:
		msg += ": its definition changed since it was approved"
	case mcpv1alpha1.ReasonDefinitionNotApproved:
		msg += ": no definition of it is approved"
	case mcpv1alpha1.ReasonServerNotReady:
		msg += ": its server is not Ready (unreachable, or not yet probed)"
	case mcpv1alpha1.ReasonServerNotFound:
		msg += ": its McpServer does not exist"
	case mcpv1alpha1.ReasonShardMismatch:
		msg += ": it is labelled into another shard than its McpServer (label " + mcpv1alpha1.LabelShardKey + ")"
	case mcpv1alpha1.ReasonDisabledByConsumer:
		msg += ": this namespace disabled it (McpSharedServer spec.disabledTools)"
	case mcpv1alpha1.ReasonConsumerRulesInvalid:
		msg += ": a rule this namespace adds to it does not compile (McpSharedServer spec.argumentRules; see its condition " + mcpv1alpha1.ConditionArgumentRulesValid + ")"
	case audit.DetailNameTooLong:
		msg += ": its name here would be longer than 128 characters (use a shorter McpSharedServer name)"
	case mcpv1alpha1.ReasonRemovedFromServer:
		msg += ": its server no longer offers it"
	case mcpv1alpha1.ReasonArgumentRulesInvalid, mcpv1alpha1.ReasonReviewedTextInvalid:
		msg += ": its argument rules or reviewed text cannot be honoured"
	case "":
	default:
		msg += " (" + v.detail + ")"
	}
	return msg
}

// verdictFor is the one decision on whether a caller may see and call a
// tool: the list offers exactly the tools it allows, and every call is
// decided by it again (approval, a call-time step, aside). Its steps run
// in order and the first refusal wins; a rule on who may use which tool
// belongs here, so that the list and the call cannot disagree. A tool whose
// argument rules or reviewed text cannot be honoured is offered to nobody.
//
// What the platform declares is read from spec as it is now: the tool's
// and its McpServer's (the data class and approval the verdict carries),
// and for a shared tool the owner's grant (spec.sharing), the consuming
// namespace's labels and its McpSharedServer. Of the tool's status only
// what the import recorded is used: the definition, its hash and name, and
// the Ready condition for the current generation. servers, when not nil,
// remembers the servers read in one round of decisions (a list).
func (g *Gateway) verdictFor(ctx context.Context, id *authn.Identity, o toolOffer, ceiling governance.Ceiling, servers map[types.NamespacedName]*mcpv1alpha1.McpServer) (verdict, error) {
	t := o.tool
	// Step 1: of the caller's namespace (its own, or shared with it
	// through its McpSharedServer), and Kubernetes RBAC in the caller's
	// namespace. They come first so that a caller the tool is not for
	// learns nothing about it: not whether it is disabled, changed or
	// waiting for its server.
	if !o.inNamespace(id.Namespace) {
		return verdict{reason: audit.DenyForbidden}, nil
	}
	ok, err := g.canCall(ctx, id, o.authzName())
	if err != nil {
		return verdict{}, fmt.Errorf("authorising the call: %w", err)
	}
	if !ok {
		return verdict{reason: audit.DenyForbidden}, nil
	}
	// A shared tool: the owner grants the caller's namespace now, and the
	// McpSharedServer can be honoured. Before anything about the tool, so
	// that a namespace not granted learns nothing of it.
	var srv *mcpv1alpha1.McpServer
	if o.shared != nil {
		if srv, err = g.sharedGrant(ctx, o.shared, servers); err != nil {
			return verdict{}, err
		}
		if srv == nil {
			return verdict{reason: audit.DenyNotShared}, nil
		}
	}
	// Step 2: enabled, its current definition the approved one (whatever
	// Ready says: an import writes a new definition before the tool
	// controller turns Ready False, and in between the gateway would serve
	// what nobody approved), Ready for the current generation, and named.
	if !servable(t) || governance.Unapproved(t) != "" || t.Status.LocalName == "" {
		return refused(audit.DenyNotServable, t), nil
	}
	if o.shared != nil {
		if governance.DisabledByConsumer(o.shared, t.Spec.RemoteName) {
			return verdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonDisabledByConsumer}, nil
		}
		// The shared name is longer than the owner's when the
		// McpSharedServer's name is; one an agent could not call by is
		// not offered.
		if !toolname.ValidLocalName(o.localName()) {
			return verdict{reason: audit.DenyNotServable, detail: audit.DetailNameTooLong}, nil
		}
	}
	// Its reviewed text and argument rules can be honoured (rules.go),
	// and so can the rules the consumer adds to them: a tool is never
	// served with only some of its rules.
	if why := g.unhonoured(t); why != "" {
		return verdict{reason: audit.DenyNotServable, detail: why}, nil
	}
	if o.shared != nil {
		if _, err := g.sharedRules.Get(o.shared, t.Spec.RemoteName); err != nil {
			return verdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonConsumerRulesInvalid}, nil
		}
	}
	// Its McpServer exists now, and the tool is in the server's shard: a
	// tool relabelled into a shard that does not run (or runs elsewhere)
	// is reconciled by no instance that sees its server, and its status
	// would go on saying what the server said before.
	if srv == nil {
		if srv, err = g.serverOf(ctx, t, servers); err != nil {
			return verdict{}, err
		}
	}
	if srv == nil {
		return verdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonServerNotFound}, nil
	}
	// What the tool does is what a person reviewed it to do (the owner's
	// people, for a shared tool), never what its server says.
	effects := governance.EffectsOf(t)
	class, approval := governance.Effective(srv, t)
	limit := ceiling.For(effects)
	var terms governance.ApprovalTerms
	if o.shared != nil {
		// The owner's requirement is approved on the owner's terms, read
		// from its spec now like its grant.
		terms = governance.SharedApprovalTerms(srv, approval)
		class, approval = governance.SharedEffective(srv, t, o.shared)
		limit = governance.SharedCeiling(limit, o.shared)
	}
	// The caller's policies may add approval for the tool's effects; what
	// only they require is approved on the caller's namespace's terms.
	approval = approval || ceiling.ApprovalFor(effects)
	if governance.OutsideServerShard(srv, t) {
		return verdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonShardMismatch, class: class, approval: approval}, nil
	}
	// Step 3: the data-class ceiling, against the class the server's and
	// the tool's specs declare now (and, for a shared tool, the consuming
	// namespace's McpSharedServer).
	if !governance.WithinCeiling(class, limit) {
		return verdict{reason: audit.DenyAboveCeiling, class: class, approval: approval}, nil
	}
	return verdict{class: class, approval: approval, terms: terms, server: srv}, nil
}

// inNamespace reports whether the offer belongs to namespace: a tool of
// it, or a tool of the server its McpSharedServer names.
func (o toolOffer) inNamespace(namespace string) bool {
	if o.shared == nil {
		return o.tool.Namespace == namespace
	}
	ref := o.shared.Spec.Server
	return o.shared.Namespace == namespace && o.tool.Namespace == ref.Namespace && o.tool.Spec.ServerRef.Name == ref.Name
}

// serverOf reads the McpServer of t from the cache: nil when there is
// none. servers, when not nil, remembers what was read.
func (g *Gateway) serverOf(ctx context.Context, t *mcpv1alpha1.McpTool, servers map[types.NamespacedName]*mcpv1alpha1.McpServer) (*mcpv1alpha1.McpServer, error) {
	return g.readServer(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ServerRef.Name}, servers)
}

// readServer reads an McpServer from the cache: nil when there is none.
func (g *Gateway) readServer(ctx context.Context, key types.NamespacedName, servers map[types.NamespacedName]*mcpv1alpha1.McpServer) (*mcpv1alpha1.McpServer, error) {
	if srv, ok := servers[key]; ok {
		return srv, nil
	}
	srv := &mcpv1alpha1.McpServer{}
	if err := g.Reader.Get(ctx, key, srv, readOnly); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the tool's server: %w", err)
		}
		srv = nil
	}
	if servers != nil {
		servers[key] = srv
	}
	return srv, nil
}

// accessPolicies are the McpAccessPolicies of the caller's namespace: the
// ceiling of the decision and the mode of the approval stage come from
// them.
func (g *Gateway) accessPolicies(ctx context.Context, id *authn.Identity) ([]mcpv1alpha1.McpAccessPolicy, error) {
	var policies mcpv1alpha1.McpAccessPolicyList
	if err := g.Reader.List(ctx, &policies, client.InNamespace(id.Namespace), readOnly); err != nil {
		return nil, fmt.Errorf("reading access policies: %w", err)
	}
	return policies.Items, nil
}

// ceiling is the caller's ceiling, from the access policies of its
// namespace.
func (g *Gateway) ceiling(ctx context.Context, id *authn.Identity) (governance.Ceiling, error) {
	policies, err := g.accessPolicies(ctx, id)
	if err != nil {
		return governance.Ceiling{}, err
	}
	return ceilingFor(id, policies), nil
}

// ceilingFor is what the policies of its namespace that name the caller
// hold it to: the highest data class of a tool it may use (Public when no
// policy names it) and the approval they add, by the tool's effects.
func ceilingFor(id *authn.Identity, policies []mcpv1alpha1.McpAccessPolicy) governance.Ceiling {
	return governance.CeilingOf(policies, id.PolicyCaller())
}

// canCall decides RBAC for the caller calling tool in its own namespace:
// allowed by a grant of every tool when the authorizer can tell one (a
// review per identity, remembered), by the tool's own review otherwise.
func (g *Gateway) canCall(ctx context.Context, id *authn.Identity, tool string) (bool, error) {
	if na, ok := g.Authz.(authz.NamespaceAuthorizer); ok {
		all, err := na.CanCallAll(ctx, id, id.Namespace)
		if err != nil {
			return false, err
		}
		if all {
			return true, nil
		}
	}
	return g.Authz.CanCall(ctx, id, id.Namespace, tool)
}
