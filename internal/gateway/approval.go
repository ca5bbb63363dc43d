package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// approve is the approval stage of a call. A tool whose calls need
// approval (governance.Effective, on the specs the decision read) is called only once a person other than
// the caller approved this very call in an McpCallApproval (the Person
// mode), or, where a policy of the namespace opts the caller in, the user
// of its own client did (ClientElicitation). A shared tool whose owner
// requires approval is approved on the owner's terms (c.terms): the
// ClientElicitation opt-in counts only when the owner accepts it, and the
// owner says whose people decide. It answers what ends the call
// here (a refusal, or the agent told to wait or asked), a protocol error
// to answer with instead, or neither when the call goes on; either way it
// says in the record what approval the call needed and had.
func (g *Gateway) approve(ctx context.Context, req *sdk.CallToolRequest, id *authn.Identity, c *callScope) (*sdk.CallToolResult, error) {
	c.rec.Approval = "NotRequired"
	if !c.approval {
		return nil, nil
	}
	// A refusal from here on is a refusal of approval, and says so.
	c.rec.Approval = "Required"
	if name, by, ok := g.approvedRound(ctx, c); ok {
		// The answer to a round of an approved call continues that call
		// (interaction.go).
		c.rec.Approval, c.rec.ApprovalName, c.rec.ApprovedBy = approvedMark, name, by
		return nil, nil
	}
	if c.terms.Mode(approvalModeFor(id, c.policies)) == mcpv1alpha1.ApprovalClientElicitation {
		if answer := g.byClient(ctx, req, id, c); answer != nil {
			// A question for the client's user, unless a refusal already
			// said otherwise.
			c.obs.end(audit.OutcomeDenied, audit.DenyApprovalPending)
			return answer, nil
		}
	} else {
		p := g.byPerson(ctx, req, id, c)
		switch {
		case p.err != nil:
			logging.FromContext(ctx, logging.Gateway).Error(p.err, "the call approval could not be read or written", "tool", c.key.String())
			return refusal("the gateway could not read or write this call's approval; try again"), nil
		case p.protocolErr != nil:
			return nil, p.protocolErr
		case p.answer != nil:
			return p.answer, nil
		}
		c.rec.ApprovalName, c.rec.ApprovedBy = p.name, p.approvedBy
	}
	c.rec.Approval = approvedMark
	return nil, nil
}

// approvalModeFor is how the caller's calls are approved: ClientElicitation
// when a policy of its namespace naming it opts in, and Person otherwise.
func approvalModeFor(id *authn.Identity, policies []mcpv1alpha1.McpAccessPolicy) mcpv1alpha1.ApprovalMode {
	for i := range policies {
		p := &policies[i]
		if p.Spec.ApprovalMode == mcpv1alpha1.ApprovalClientElicitation && governance.Names(p, id.PolicyCaller()) {
			return mcpv1alpha1.ApprovalClientElicitation
		}
	}
	return mcpv1alpha1.ApprovalPerson
}

// A call of a tool that requires approval, in the Person mode, waits for an
// McpCallApproval that a person other than the caller decides. The gateway
// keeps nothing about it in memory: the object is found again by the retry
// of the same call (same caller, tool, definition and arguments), on any
// replica, and an approved one is used by a status write carrying the
// resourceVersion it was read at, so the API server lets exactly one call
// use it.

// Labels the gateway puts on an McpCallApproval to find it again. They
// are an index only: the object's spec, which cannot change, decides.
const (
	LabelCaller = "mcp.catalog.dev/caller-hash"
	LabelCall   = "mcp.catalog.dev/call-hash"
)

// DefaultApprovalTTL is how long a pending or approved McpCallApproval can
// be used.
const DefaultApprovalTTL = 15 * time.Minute

// maxPendingPerCaller bounds the undecided approvals one caller can have:
// an agent cannot fill the namespace with objects by varying arguments.
const maxPendingPerCaller = 20

// personResult is the outcome of the approval step in the Person mode:
// either approved (the call goes on) or a result to answer with.
type personResult struct {
	approvedBy string
	name       string
	answer     *sdk.CallToolResult
	// protocolErr is the URLElicitationRequired error a 2025-11-25 client
	// is told to wait with.
	protocolErr error
	err         error
}

// callKey identifies a call for approval: the same caller, tool,
// definition and arguments are the same call.
func callKey(caller, tool, definition, args string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{caller, tool, definition, args}, "\x00")))
	return hex.EncodeToString(h[:])[:48]
}

func callerKey(caller string) string {
	h := sha256.Sum256([]byte(caller))
	return hex.EncodeToString(h[:])[:48]
}

// byPerson runs the approval step in the Person mode for a call of t.
func (g *Gateway) byPerson(ctx context.Context, req *sdk.CallToolRequest, id *authn.Identity, c *callScope) personResult {
	rec, t := c.rec, c.tool
	if g.Approvals == nil {
		return personResult{answer: g.deny(ctx, rec, t, audit.DenyApprovalNoChannel, "", "this tool needs a person's approval for every call, and this gateway has no approvals configured; the call was not made")}
	}
	if missing, err := g.admission.MissingPart(ctx, g.now()); err != nil {
		return personResult{err: err}
	} else if missing != "" {
		logging.FromContext(ctx, logging.Gateway).Error(nil, "refusing calls that need a person's approval: the admission policy is not in force", "missing", missing)
		return personResult{answer: g.deny(ctx, rec, t, audit.DenyApprovalNoChannel, audit.DetailAdmissionPolicyMissing,
			"this tool needs a person's approval for every call, and "+missing+": without it an approval cannot be trusted (the caller could decide its own), so none is used; the call was not made")}
	}
	if resp, ok := req.Params.InputResponses[approvalInput]; ok {
		// The client answered the URL elicitation: its user either went
		// to see the approval or gave up waiting. Only the McpCallApproval
		// decides; a client that declines stops waiting.
		if r, ok := resp.(*sdk.ElicitResult); !ok || r.Action != "accept" {
			return personResult{answer: g.deny(ctx, rec, t, audit.DenyApprovalDeclined, "", "the client stopped waiting for approval; the call was not made")}
		}
	}
	now := g.now()
	key := callKey(id.Username, c.offer().authzName(), t.Status.DefinitionHash, rec.ArgumentsHash)
	at := c.approvalPlace(id)
	if c.shared != nil {
		// A person approves a call of the owner's server, not of whatever
		// the shared name offers later: the approval names that server
		// object, sealed, and is used for no other.
		srv, err := g.readServer(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ServerRef.Name}, nil)
		if err != nil {
			return personResult{err: fmt.Errorf("reading the owner's server: %w", err)}
		}
		at.owner = &mcpv1alpha1.OwnerServerRef{Namespace: srv.Namespace, Name: srv.Name, UID: string(srv.UID)}
		key = callKey(id.Username, c.offer().authzName()+"\x00"+at.owner.UID, t.Status.DefinitionHash, rec.ArgumentsHash)
	}
	var list mcpv1alpha1.McpCallApprovalList
	// Read from the API server, not a cache: a decision made a moment ago
	// must count, and using one needs its current resourceVersion.
	if err := g.Approvals.List(ctx, &list, client.InNamespace(at.namespace), client.MatchingLabels{LabelCaller: callerKey(id.Username)}); err != nil {
		return personResult{err: fmt.Errorf("listing call approvals: %w", err)}
	}
	var approved, denied, pending *mcpv1alpha1.McpCallApproval
	undecided := 0
	for i := range list.Items {
		a := &list.Items[i]
		// Only the gateway's own objects count, toward the caller's limit
		// as for this call: whoever may create approvals could otherwise
		// fill the limit with objects of their own and lock the caller out.
		if a.Spec.Caller != id.Username || !approvals.Sealed(ctx, g.approvalKeys, a) {
			continue
		}
		state := governance.CallState(a, now)
		if state == governance.CallStatePending {
			undecided++
		}
		if !at.names(a) || a.Spec.DefinitionHash != t.Status.DefinitionHash || a.Spec.ArgumentsHash != rec.ArgumentsHash {
			continue
		}
		switch state {
		case governance.CallStateApproved:
			// The API server refuses a decision by the caller; this is a
			// second look at a field nobody but the decider could set.
			if a.Spec.DecidedBy != "" && a.Spec.DecidedBy != id.Username && approved == nil {
				approved = a
			}
		case governance.CallStateDenied:
			denied = a
		case governance.CallStatePending:
			pending = a
		}
	}
	switch {
	case approved != nil:
		rec.ApprovalName = approved.Name
		if g.holdForApproval(ctx, req, c, approved, true) {
			// A task-augmented call: the approval is used when the
			// task's result is fetched (approvaltask.go).
			c.obs.end(audit.OutcomeTaskCreated, "")
			return personResult{answer: &sdk.CallToolResult{}}
		}
		consumed := approved.DeepCopy()
		consumed.Status.ConsumedAt = &metav1.Time{Time: now}
		consumed.Status.CallID = rec.CallID
		// The update carries the resourceVersion the approval was read at:
		// when another request (on any replica) used it first, the API
		// server answers 409 and this call is refused.
		if err := g.Approvals.Status().Update(ctx, consumed); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return personResult{answer: g.deny(ctx, rec, t, audit.DenyApprovalDeclined, "", "this approval was already used for a call, and every call needs its own; the call was not made")}
			}
			return personResult{err: fmt.Errorf("using call approval %s: %w", approved.Name, err)}
		}
		metrics.GatewayApprovalEvents.WithLabelValues("used").Inc()
		return personResult{approvedBy: approved.Spec.DecidedBy, name: approved.Name}
	case denied != nil:
		rec.ApprovalName, rec.ApprovedBy = denied.Name, denied.Spec.DecidedBy
		msg := "the call was denied by " + denied.Spec.DecidedBy + " (McpCallApproval " + denied.Name + ")"
		if denied.Spec.Reason != "" {
			msg += ": " + denied.Spec.Reason
		}
		return personResult{answer: g.deny(ctx, rec, t, audit.DenyApprovalDeclined, "", msg+"; it was not made")}
	case pending != nil:
		if g.holdForApproval(ctx, req, c, pending, false) {
			return g.waitAsTask(ctx, rec, pending)
		}
		return g.waitFor(ctx, req, rec, c.offer(), pending)
	}
	if undecided >= maxPendingPerCaller {
		return personResult{answer: g.deny(ctx, rec, t, audit.DenyApprovalNoChannel, "", fmt.Sprintf("the caller already has %d calls waiting for approval; the call was not made", undecided))}
	}
	a, err := g.newApproval(ctx, id, c, at, key, now)
	if err != nil {
		return personResult{err: err}
	}
	if g.holdForApproval(ctx, req, c, a, false) {
		return g.waitAsTask(ctx, rec, a)
	}
	return g.waitFor(ctx, req, rec, c.offer(), a)
}

// approvalPlace is where the McpCallApproval of a call is, and the names
// of the tool and server it carries, so that the people who decide it
// read their own names.
type approvalPlace struct {
	namespace, tool, server string
	// localName is the name the agent called, which the approval also
	// carries; matched for a shared tool, whose owner's McpTool one
	// caller can call through several McpSharedServers.
	localName string
	// owner is, for a shared tool, the owner's McpServer object the call
	// is made to; nil for a tool of the caller's namespace.
	owner *mcpv1alpha1.OwnerServerRef
}

// approvalPlace is the place of c's approval in the Person mode: the
// caller's namespace, with the tool and server as it names them; or, for
// a shared tool whose owner's people decide (governance.ApprovalTerms),
// the owner's namespace with the owner's McpTool and McpServer.
func (c *callScope) approvalPlace(id *authn.Identity) approvalPlace {
	o := c.offer()
	if c.terms.OwnerApproves() {
		return approvalPlace{namespace: c.terms.Owner, tool: c.tool.Name, server: c.tool.Spec.ServerRef.Name, localName: o.localName()}
	}
	p := approvalPlace{namespace: id.Namespace, tool: o.authzName(), server: o.serverName()}
	if o.shared != nil {
		p.localName = o.localName()
	}
	return p
}

// names reports whether approval a is for the tool of this place (and,
// for a shared tool, the owner's very server object).
func (p approvalPlace) names(a *mcpv1alpha1.McpCallApproval) bool {
	if (p.owner == nil) != (a.Spec.OwnerServer == nil) || p.owner != nil && *p.owner != *a.Spec.OwnerServer {
		return false
	}
	return a.Spec.Tool == p.tool && (p.localName == "" || a.Spec.LocalName == p.localName)
}

// newApproval creates the McpCallApproval a person decides, for the call c
// at the data class the gateway decided it by.
func (g *Gateway) newApproval(ctx context.Context, id *authn.Identity, c *callScope, at approvalPlace, key string, now time.Time) (*mcpv1alpha1.McpCallApproval, error) {
	t := c.tool
	ks, err := g.approvalKeys.Keys(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("reading the approval key: %w", err)
	}
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	ttl := g.ApprovalTTL
	if ttl <= 0 {
		ttl = DefaultApprovalTTL
	}
	// The API stores seconds; the seal signs what is stored.
	a := callApproval(id, c, at, "call-"+hex.EncodeToString(suffix), key, now.Add(ttl).Truncate(time.Second))
	a.Spec.Seal = approvals.Seal(ks.Current, a)
	if err := g.Approvals.Create(ctx, a); err != nil {
		return nil, fmt.Errorf("creating a call approval: %w", err)
	}
	metrics.GatewayApprovalEvents.WithLabelValues("requested").Inc()
	g.Recorder.Eventf(t, nil, corev1.EventTypeNormal, EventApprovalRequested, eventAction, "a call by %s waits for approval in McpCallApproval %s", id.Username, a.Name)
	return a, nil
}

// callApproval is the pending, unsealed McpCallApproval of the call c by
// id, at place at, named name, with call key key, expiring at expires.
func callApproval(id *authn.Identity, c *callScope, at approvalPlace, name, key string, expires time.Time) *mcpv1alpha1.McpCallApproval {
	t := c.tool
	return &mcpv1alpha1.McpCallApproval{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: at.namespace,
			Name:      name,
			Labels:    map[string]string{LabelCaller: callerKey(id.Username), LabelCall: key},
		},
		Spec: mcpv1alpha1.McpCallApprovalSpec{
			Tool:           at.tool,
			LocalName:      c.offer().localName(),
			Server:         at.server,
			OwnerServer:    at.owner,
			Caller:         id.Username,
			CallerGroups:   id.Groups,
			DataClass:      c.class,
			ArgumentsHash:  c.rec.ArgumentsHash,
			DefinitionHash: t.Status.DefinitionHash,
			ExpiresAt:      metav1.Time{Time: expires},
			Decision:       mcpv1alpha1.CallPending,
		},
	}
}

// ApprovalURL returns where a person sees approval name in namespace ns;
// the default names the object in the Kubernetes API.
func (g *Gateway) approvalURL(ns, name string) string {
	if g.ApprovalURL != nil {
		return g.ApprovalURL(ns, name)
	}
	return "kubernetes:///apis/" + mcpv1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/mcpcallapprovals/" + name
}

// waitFor tells the agent that the call waits for approval a, the way its
// protocol revision and capabilities allow, and records that the call was
// not made.
func (g *Gateway) waitFor(ctx context.Context, req *sdk.CallToolRequest, rec audit.Record, o toolOffer, a *mcpv1alpha1.McpCallApproval) personResult {
	how := fmt.Sprintf("kubectl mcp approve-call %s -n %s", a.Name, a.Namespace)
	msg := fmt.Sprintf("The call of %s (MCP server %s, data class %s) waits for a person's approval: McpCallApproval %s/%s, until %s. A person other than the caller approves it with `%s`; then the same call with the same arguments is made once.",
		o.localName(), o.serverName(), a.Spec.DataClass, a.Namespace, a.Name, a.Spec.ExpiresAt.UTC().Format(time.RFC3339), how)
	g.recordWait(ctx, rec, a)
	elicit := &sdk.ElicitParams{Mode: "url", Message: msg, URL: g.approvalURL(a.Namespace, a.Name), ElicitationID: a.Namespace + "/" + a.Name}
	caps := req.ClientCapabilities()
	if caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil {
		if req.Session != nil && req.Session.InitializeParams() != nil && req.Session.InitializeParams().ProtocolVersion < modernProtocol {
			// 2025-11-25: the URL elicitation travels in the error the
			// specification reserves for it; the agent retries the call.
			return personResult{protocolErr: sdk.URLElicitationRequiredError([]*sdk.ElicitParams{elicit})}
		}
		// 2026-07-28: an input-required result; the client's retry carries
		// its answer and is decided afresh.
		return personResult{answer: &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{approvalInput: elicit}}}
	}
	return personResult{answer: refusal("this call waits for a person's approval and was not made. " + msg + " Retry the call after that.")}
}

// In the ClientElicitation mode the user of the agent's own client approves
// each call: the gateway asks with a form elicitation and signed request
// state, and decides the retry that carries the answer. A spent answer is
// recorded in the API (spendAnswer), so no replica accepts it again.

// byClient asks the agent's own client for approval (the ClientElicitation
// mode): an answer to give the agent, or nil when the client approved.
func (g *Gateway) byClient(ctx context.Context, req *sdk.CallToolRequest, id *authn.Identity, c *callScope) *sdk.CallToolResult {
	rec, key, t := c.rec, c.key, c.tool
	state := approvals.State{Caller: id.UID + "/" + id.Username, Tool: id.Namespace + "/" + c.offer().authzName(), Definition: t.Status.DefinitionHash, Arguments: rec.ArgumentsHash}
	resp, answered := req.Params.InputResponses[approvalInput]
	if !answered {
		caps := req.ClientCapabilities()
		if caps == nil || caps.Elicitation == nil {
			return g.deny(ctx, rec, t, audit.DenyApprovalNoChannel, "", "this tool needs a human's approval for every call, and this client did not declare the elicitation capability to ask for it; the call was not made")
		}
		state.Expires, state.Nonce = g.now().Add(approvals.StateWindow).Unix(), approvals.NewNonce()
		signed, err := g.approver.Sign(ctx, state)
		if err != nil {
			logging.FromContext(ctx, logging.Gateway).Error(err, "signing approval state failed")
			c.obs.end(audit.OutcomeDenied, audit.RefusedDecisionFailed)
			return refusal("the gateway could not ask for approval; try again")
		}
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{approvalInput: approvalQuestion(c.offer().localName(), c.offer().serverName(), string(c.class))},
			RequestState:  signed,
		}
	}
	if err := g.approver.Verify(ctx, req.Params.RequestState, state, g.now()); err != nil {
		return g.deny(ctx, rec, t, audit.DenyApprovalDeclined, "", "the approval answer does not belong to this call or has expired; the call was not made")
	}
	if !approved(resp) {
		return g.deny(ctx, rec, t, audit.DenyApprovalDeclined, "", "the call was not approved; it was not made")
	}
	if err := g.spendAnswer(ctx, id, c, req.Params.RequestState, state); err != nil {
		msg := "this approval was already used for a call, and every call needs its own; the call was not made"
		switch {
		case errors.Is(err, approvals.ErrApprovalsFull):
			msg = "the gateway holds too many recent approvals to take another; try again shortly"
		case !errors.Is(err, approvals.ErrBadState):
			logging.FromContext(ctx, logging.Gateway).Error(err, "recording a spent approval answer failed", "tool", key.String())
			msg = "the gateway could not record this approval as used; try again"
		}
		return g.deny(ctx, rec, t, audit.DenyApprovalDeclined, "", msg)
	}
	return nil
}

// spendAnswer uses up the client's approval answer token (for the call
// state want describes), so that it opens one call on whichever replica
// sees it first and none after. With Approvals configured, the mark is an
// McpCallApproval named after the answer's nonce, created already used:
// the API server lets exactly one replica create it. Without (a gateway
// that has no approvals), the mark is this process's memory.
func (g *Gateway) spendAnswer(ctx context.Context, id *authn.Identity, c *callScope, token string, want approvals.State) error {
	now := g.now()
	if g.Approvals == nil {
		return g.approver.Spend(ctx, token, want, now)
	}
	s, err := g.approver.Verified(ctx, token, want, now)
	if err != nil {
		return err
	}
	ks, err := g.approvalKeys.Keys(ctx, false)
	if err != nil {
		return fmt.Errorf("reading the approval key: %w", err)
	}
	h := sha256.Sum256([]byte(s.Nonce))
	t := c.tool
	key := callKey(id.Username, c.offer().authzName(), t.Status.DefinitionHash, c.rec.ArgumentsHash)
	// The mark of a spent answer is the caller's namespace's own record,
	// wherever a person's approval would be.
	here := approvalPlace{namespace: id.Namespace, tool: c.offer().authzName(), server: c.offer().serverName()}
	a := callApproval(id, c, here, governance.SpentAnswerPrefix+hex.EncodeToString(h[:])[:40], key, time.Unix(s.Expires, 0))
	a.Spec.Seal = approvals.Seal(ks.Current, a)
	if err := g.Approvals.Create(ctx, a); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return approvals.ErrBadState
		}
		return fmt.Errorf("recording a spent approval answer: %w", err)
	}
	// The create is the mark; the status says what it was used for, for
	// the people who list approvals. A failure here opens nothing more.
	a.Status.ConsumedAt, a.Status.CallID = &metav1.Time{Time: now}, c.rec.CallID
	if err := g.Approvals.Status().Update(ctx, a); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "marking a spent approval answer used failed", "approval", a.Name)
	}
	return nil
}

// approvalInput is the id of the approval question in a multi-round-trip
// call.
const approvalInput = "approval"

// approvalQuestion is what the client shows a human.
func approvalQuestion(localName, server, class string) *sdk.ElicitParams {
	return &sdk.ElicitParams{
		Mode: "form",
		Message: "The agent wants to call the tool " + localName + " of the MCP server " + server +
			" (data class " + class + "). Every call is treated as a write that cannot be undone. Approve this call?",
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve this call", "description": "true to let the call go ahead"},
			},
			"required": []string{"approve"},
		},
	}
}

// approved reads a client's answer: only an accepted form with approve true
// approves.
func approved(resp sdk.InputResponse) bool {
	r, ok := resp.(*sdk.ElicitResult)
	if !ok || r.Action != "accept" {
		return false
	}
	v, ok := r.Content["approve"].(bool)
	return ok && v
}

// recordWait records that the call of rec was not made: it waits for
// approval a.
func (g *Gateway) recordWait(ctx context.Context, rec audit.Record, a *mcpv1alpha1.McpCallApproval) {
	rec.ApprovalName = a.Name
	rec.Phase, rec.Decision, rec.Reason, rec.Time = audit.PhaseDenied, "Denied", audit.DenyApprovalPending, g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a call waiting for approval could not be written")
	}
	obsOf(ctx).end(audit.OutcomeDenied, audit.DenyApprovalPending)
}

// waitAsTask records that the call of rec waits for approval a, as a
// task the front door answers (approvaltask.go).
func (g *Gateway) waitAsTask(ctx context.Context, rec audit.Record, a *mcpv1alpha1.McpCallApproval) personResult {
	g.recordWait(ctx, rec, a)
	return personResult{answer: &sdk.CallToolResult{}}
}
