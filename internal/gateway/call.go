package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// xMCPHeader is the schema annotation that mirrors an argument into a
// header.
const xMCPHeader = `"x-mcp-header"`

// call decides and makes one tool call.
func (g *Gateway) call(ctx context.Context, req *sdk.CallToolRequest, key types.NamespacedName) (*sdk.CallToolResult, error) {
	log := logging.FromContext(ctx, logging.Gateway)
	obs := obsOf(ctx)
	id := identityOf(req.Extra.TokenInfo)
	if id == nil || id.Namespace != key.Namespace {
		obs.end(OutcomeDenied, DenyForbidden)
		return refusal(unknownTool), nil
	}
	rec := Record{CallID: newCallID(), Caller: id.Username, Namespace: key.Namespace, Tool: key.Name}
	// Malformed arguments are refused only after the decision, so that the
	// answer to a caller RBAC does not allow stays the uniform one.
	args, argsHash, argsErr := arguments(req.Params.Arguments)
	rec.ArgumentsHash = argsHash

	// The call is decided again, by the decision that made the list: the
	// tool may have been disabled, drifted or lost its server since the
	// session listed it.
	t := &mcpv1alpha1.McpTool{}
	if err := g.Reader.Get(ctx, key, t); err != nil {
		return g.deny(ctx, rec, nil, DenyNotServable, "", unknownTool), nil
	}
	rec.LocalName, rec.Server, rec.DataClass = t.Status.LocalName, t.Spec.ServerRef.Name, string(t.Status.EffectiveDataClass)
	if refused := g.gateCall(ctx, rec, id, t); refused != nil {
		return refused, nil
	}
	obs.of(t)
	if argsErr != nil {
		obs.end(OutcomeDenied, RefusedInvalidArguments)
		return refusal("the arguments must be a JSON object"), nil
	}

	// Step 4: approval, by a person other than the caller unless the
	// namespace's policy opts this caller into its client's elicitation.
	rec.Approval = "NotRequired"
	if _, required := governance.Recorded(t); required {
		// A refusal from here on is a refusal of approval, and says so.
		rec.Approval = "Required"
		mode, err := g.approvalMode(ctx, id)
		if err != nil {
			log.Error(err, "deciding on a call failed")
			return refusal("the gateway could not decide on this call; try again"), nil
		}
		if mode == mcpv1alpha1.ApprovalClientElicitation {
			if answer := g.byClient(ctx, req, rec, id, key, t); answer != nil {
				// A question for the client's user, unless a refusal
				// already said otherwise.
				obs.end(OutcomeDenied, DenyApprovalPending)
				return answer, nil
			}
		} else {
			p := g.byPerson(ctx, req, rec, id, t)
			switch {
			case p.err != nil:
				log.Error(p.err, "the call approval could not be read or written", "tool", key.String())
				return refusal("the gateway could not read or write this call's approval; try again"), nil
			case p.protocolErr != nil:
				return nil, p.protocolErr
			case p.answer != nil:
				return p.answer, nil
			}
			rec.ApprovalName, rec.ApprovedBy = p.name, p.approvedBy
		}
		rec.Approval = "Approved"
	}

	srv := &mcpv1alpha1.McpServer{}
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: t.Spec.ServerRef.Name}, srv); err != nil {
		return g.deny(ctx, rec, t, DenyNotServable, mcpv1alpha1.ReasonServerNotFound, "the tool's server no longer exists"), nil
	}

	// No record, no call.
	rec.Decision, rec.Phase, rec.Time = "Allowed", PhaseBefore, g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		log.Error(err, "the audit record could not be written; refusing the call", "tool", key.String())
		metrics.GatewayAuditFailures.WithLabelValues(PhaseBefore).Inc()
		obs.end(OutcomeDenied, DenyAuditFailed)
		g.event(t, corev1.EventTypeWarning, EventCallRefused, "a call by %s was refused: the audit record could not be written", id.Username)
		return refusal("the call was refused because its audit record could not be written"), nil
	}

	start := g.now()
	out, err := g.send(ctx, srv, t, id, args)
	end := g.now()
	rec.Phase, rec.Time, rec.LatencyMillis = PhaseAfter, end, end.Sub(start).Milliseconds()
	if err == nil {
		// The server answered (a tool error is an answer too).
		metrics.GatewayLastContact.WithLabelValues(srv.Namespace, srv.Name).Set(float64(end.UnixMilli()) / 1e3)
	}
	result := &sdk.CallToolResult{}
	switch {
	case err != nil:
		kind := failureKind(err)
		rec.Outcome, rec.ErrorKind = OutcomeFailed, string(kind)
		obs.end(OutcomeFailed, string(kind))
		g.event(t, corev1.EventTypeWarning, EventCallFailed, "a call by %s failed: %s", id.Username, kind)
		result.IsError = true
		result.Content = []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("The call to %s failed (%s); the remote server's answer is not shown.", t.Status.LocalName, kind)}}
	case out.IsError:
		rec.Outcome = OutcomeToolError
		obs.end(OutcomeToolError, "")
		result.IsError = true
		result.Content = []sdk.Content{&sdk.TextContent{Text: out.Text}}
	default:
		rec.Outcome = OutcomeSucceeded
		obs.end(OutcomeSucceeded, "")
		result.Content = []sdk.Content{&sdk.TextContent{Text: out.Text}}
	}
	if err := g.Audit.Write(context.WithoutCancel(ctx), rec); err != nil {
		// The call has happened; the before record stands for it.
		log.Error(err, "the audit outcome record could not be written", "tool", key.String(), "callID", rec.CallID)
		metrics.GatewayAuditFailures.WithLabelValues(PhaseAfter).Inc()
	}
	return result, nil
}

func (g *Gateway) send(ctx context.Context, srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool, id *Identity, args map[string]any) (*mcp.CallOutcome, error) {
	ep, err := g.Upstreams.Call(ctx, srv, credentials.Actor{Username: id.Username, Groups: id.Groups})
	if err != nil {
		return nil, err
	}
	var opts []mcp.CallOption
	if t.Status.InputSchema != nil && bytes.Contains(t.Status.InputSchema.Raw, []byte(xMCPHeader)) {
		// Arguments the schema marks with x-mcp-header travel in headers
		// too, which 2026-07-28 servers require. A schema without the
		// annotation has no such argument, and is not walked on every call.
		opts = append(opts, mcp.WithInputSchema(t.Status.InputSchema.Raw))
	}
	ctx, span, tc := g.startUpstream(ctx, srv, t)
	var info mcp.CallInfo
	opts = append(opts, mcp.WithTraceContext(tc), mcp.WithCallInfo(&info))
	start := time.Now()
	out, err := g.MCP.CallTool(ctx, ep, t.Spec.RemoteName, args, opts...)
	obs := obsOf(ctx)
	obs.upstream, obs.sent = time.Since(start), true
	endUpstream(span, &info, out, err)
	return out, err
}

// gateCall decides a call of t by the caller's ceiling and answers an
// audited refusal when it is not allowed; nil lets the call go on.
func (g *Gateway) gateCall(ctx context.Context, rec Record, id *Identity, t *mcpv1alpha1.McpTool) *sdk.CallToolResult {
	ceiling, err := g.ceiling(ctx, id)
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "deciding on a call failed")
		return refusal("the gateway could not decide on this call; try again")
	}
	v, err := g.decide(ctx, id, t, ceiling)
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "deciding on a call failed")
		return refusal("the gateway could not decide on this call; try again")
	}
	if !v.allowed() {
		return g.deny(ctx, rec, t, v.reason, v.detail, v.message())
	}
	return nil
}

// refuseUnoffered answers a call of a tool this server did not offer the
// caller: the decision says why (not servable, RBAC, ceiling), or that
// there is no such tool,
// and the refusal is audited like any other. A tool that became callable
// after a session began is refused too: the session offers what was
// decided when it began, and a new session sees the change.
func (g *Gateway) refuseUnoffered(ctx context.Context, req *sdk.CallToolRequest) *sdk.CallToolResult {
	id := identityOf(req.Extra.TokenInfo)
	if id == nil {
		return refusal(unknownTool)
	}
	name := req.Params.Name
	rec := Record{CallID: newCallID(), Caller: id.Username, Namespace: id.Namespace}
	if toolname.ValidLocalName(name) {
		// Only a well-formed name is recorded: it is the caller's input.
		rec.LocalName = name
	}
	if _, h, err := arguments(req.Params.Arguments); err == nil {
		rec.ArgumentsHash = h
	}
	object, err := toolname.ObjectNameOfLocal(name)
	t := &mcpv1alpha1.McpTool{}
	if err != nil || g.Reader.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: object}, t) != nil || t.Status.LocalName != name {
		return g.deny(ctx, rec, nil, DenyNotServable, "", unknownTool)
	}
	rec.Tool, rec.Server, rec.DataClass = t.Name, t.Spec.ServerRef.Name, string(t.Status.EffectiveDataClass)
	if refused := g.gateCall(ctx, rec, id, t); refused != nil {
		return refused
	}
	return g.deny(ctx, rec, t, DenyNotServable, DetailNotInSession,
		"this tool was not offered when the session began; start a new session to use it")
}

func newCallID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// failureKind names why a call failed with a fixed word: the MCP client's
// error kind, or why no credential could be had (an unmapped or disabled
// actor, a refused token exchange, a missing Secret).
func failureKind(err error) mcp.Kind {
	var de *credentials.DelegationError
	var me *credentials.MissingError
	var ce *credentials.InvalidCABundleError
	switch {
	case mcp.KindOf(err) != "":
		return mcp.KindOf(err)
	case errors.As(err, &de):
		return mcp.Kind(de.Reason)
	case errors.As(err, &me):
		return mcp.Kind(me.Reason)
	case errors.As(err, &ce):
		return mcp.Kind(mcpv1alpha1.ReasonCABundleInvalid)
	default:
		return "CredentialUnavailable"
	}
}

// byClient asks the agent's own client for approval (the ClientElicitation
// mode): an answer to give the agent, or nil when the client approved.
func (g *Gateway) byClient(ctx context.Context, req *sdk.CallToolRequest, rec Record, id *Identity, key types.NamespacedName, t *mcpv1alpha1.McpTool) *sdk.CallToolResult {
	state := approvalState{Caller: id.UID + "/" + id.Username, Tool: key.String(), Definition: t.Status.DefinitionHash, Arguments: rec.ArgumentsHash}
	resp, answered := req.Params.InputResponses[approvalInput]
	if !answered {
		caps := req.ClientCapabilities()
		if caps == nil || caps.Elicitation == nil {
			return g.deny(ctx, rec, t, DenyApprovalNoChannel, "", "this tool needs a human's approval for every call, and this client did not declare the elicitation capability to ask for it; the call was not made")
		}
		state.Expires, state.Nonce = g.now().Add(approvalWindow).Unix(), newNonce()
		signed, err := g.approver.sign(ctx, state)
		if err != nil {
			logging.FromContext(ctx, logging.Gateway).Error(err, "signing approval state failed")
			obsOf(ctx).end(OutcomeDenied, RefusedDecisionFailed)
			return refusal("the gateway could not ask for approval; try again")
		}
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{approvalInput: approvalQuestion(t.Status.LocalName, t.Spec.ServerRef.Name, string(t.Status.EffectiveDataClass))},
			RequestState:  signed,
		}
	}
	if err := g.approver.verify(ctx, req.Params.RequestState, state, g.now()); err != nil {
		return g.deny(ctx, rec, t, DenyApprovalDeclined, "", "the approval answer does not belong to this call or has expired; the call was not made")
	}
	if !approved(resp) {
		return g.deny(ctx, rec, t, DenyApprovalDeclined, "", "the call was not approved; it was not made")
	}
	if err := g.approver.spend(ctx, req.Params.RequestState, state, g.now()); err != nil {
		msg := "this approval was already used for a call, and every call needs its own; the call was not made"
		if errors.Is(err, errApprovalsFull) {
			msg = "the gateway holds too many recent approvals to take another; try again shortly"
		}
		return g.deny(ctx, rec, t, DenyApprovalDeclined, "", msg)
	}
	return nil
}
