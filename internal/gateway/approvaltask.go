package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
)

// A wait for a person's approval, offered as a task
// (docs/adr/066-tasks-through-the-gateway.md). A task-augmented tools/call
// of a tool whose calls a person approves (the Person mode) is answered
// with a task of the gateway's own instead of the wait: its handle holds,
// sealed, the McpCallApproval and the call's arguments, so the gateway
// keeps nothing. tasks/get reads the approval: working while it waits,
// completed once a person approved it, failed when denied or expired.
// tasks/result makes the call then, once, through every stage, as the
// agent's retry of the same call would: the approval is used by it.
// tasks/cancel withdraws the approval. Nothing is sent upstream before a
// person approved.

// maxApprovalTaskArgs bounds the arguments a handle carries; a call with
// more waits for its approval the usual way (section 6 of gateway.md), so
// that the handle the agent sends back with every poll stays small.
const maxApprovalTaskArgs = 4 << 10

// approvalTaskPoll is how often an agent is asked to poll a task waiting
// for a person, in milliseconds.
const approvalTaskPoll = 2000

// holdForApproval takes the wait for a, the McpCallApproval of the call c
// (pending, or approved and not yet used), as a task, when the call asked
// for one and can be made one: it reports whether it did, having kept
// what the handle needs in the call's task. A tool that runs only as a
// task upstream is not: its call, made later, would be a task of its own.
func (g *Gateway) holdForApproval(ctx context.Context, req *sdk.CallToolRequest, c *callScope, a *mcpv1alpha1.McpCallApproval, approved bool) bool {
	t := taskOf(ctx)
	if t == nil || c.tool == nil || c.tool.Status.TaskSupport == "required" || c.decidedServer == nil {
		return false
	}
	var args json.RawMessage
	if req.Params != nil {
		args = req.Params.Arguments
	}
	// Counted as the handle holds them: encoding escapes some characters
	// six times over, and a handle past openTask's bound opens nowhere.
	if enc, err := json.Marshal(args); err != nil || len(enc) > maxApprovalTaskArgs {
		return false
	}
	t.waiting = &waitingApproval{approval: a, approved: approved}
	t.handle = taskHandle{
		Caller: c.rec.Caller, Namespace: c.rec.Namespace, Tool: c.key.String(), Via: c.via,
		Server: c.decidedServer.Namespace + "/" + c.decidedServer.Name, Hash: c.tool.Status.DefinitionHash,
		Arguments: c.rec.ArgumentsHash, CallID: c.rec.CallID,
		Approval: a.Namespace + "/" + a.Name, Name: c.offer().localName(), Args: args,
		Expires: a.Spec.ExpiresAt.Unix(),
	}
	return true
}

// waitingApproval is the approval a task-augmented call waits for.
type waitingApproval struct {
	approval *mcpv1alpha1.McpCallApproval
	approved bool
}

// answerApprovalTask answers the call that made t, a task waiting for a
// person, with its task.
func (g *Gateway) answerApprovalTask(ctx context.Context, w http.ResponseWriter, m *message, id *authn.Identity, reserve string, t *taskCall) {
	handle, err := g.sealTask(ctx, t.handle)
	if err != nil {
		writeResponse(w, m.id, (&jsonError{Code: -32603, Message: "the task could not be handed to the caller (no approval signing key)"}).encode(), false)
		return
	}
	g.tasks.rename(id, reserve, t.handle.CallID, time.Unix(t.handle.Expires, 0))
	a := t.waiting.approval
	status, msg := "working", approvalWaitMessage(a)
	if t.waiting.approved {
		status, msg = "completed", approvedMessage(a)
	}
	body, _ := json.Marshal(map[string]any{"task": g.approvalTask(handle, status, msg, a)})
	g.budgets.Charge(id, writeResponse(w, m.id, body, true))
}

// approvalTask is the Task an agent reads of a task waiting for approval
// a: its own words, not a server's.
func (g *Gateway) approvalTask(handle, status, msg string, a *mcpv1alpha1.McpCallApproval) map[string]any {
	now := g.now().UTC()
	created := a.CreationTimestamp.UTC()
	if created.IsZero() {
		created = now
	}
	ttl := max(a.Spec.ExpiresAt.Sub(created).Milliseconds(), 0)
	out := map[string]any{
		"taskId": handle, "status": status, "statusMessage": msg,
		"createdAt": created.Format(time.RFC3339), "lastUpdatedAt": now.Format(time.RFC3339),
		"ttl": ttl,
	}
	if status == "working" {
		out["pollInterval"] = approvalTaskPoll
	}
	return out
}

func approvalWaitMessage(a *mcpv1alpha1.McpCallApproval) string {
	return fmt.Sprintf("waiting for a person's approval: McpCallApproval %s/%s, until %s; a person other than the caller approves it with `kubectl mcp approve-call %s -n %s`, and the call is made when the task's result is fetched",
		a.Namespace, a.Name, a.Spec.ExpiresAt.UTC().Format(time.RFC3339), a.Name, a.Namespace)
}

func approvedMessage(a *mcpv1alpha1.McpCallApproval) string {
	return fmt.Sprintf("approved by %s (McpCallApproval %s/%s): the call is made, once, when the task's result is fetched", a.Spec.DecidedBy, a.Namespace, a.Name)
}

// approvalState is what the approval of h says now, as a task's status
// and its words; gone is set when there is no such approval of the
// caller's any more (swept after its expiry, or withdrawn).
func (g *Gateway) approvalState(ctx context.Context, id *authn.Identity, h taskHandle) (a *mcpv1alpha1.McpCallApproval, status, msg string, err error) {
	ns, name, _ := strings.Cut(h.Approval, "/")
	a = &mcpv1alpha1.McpCallApproval{}
	// Read from the API server, as the call's approval step reads it: a
	// decision made a moment ago counts.
	if err := g.Approvals.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, a); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "failed", "the call's approval is gone (withdrawn, or expired and swept); the call was not made", nil
		}
		return nil, "", "", err
	}
	if a.Spec.Caller != id.Username || a.Spec.ArgumentsHash != h.Arguments || a.Spec.DefinitionHash != h.Hash || !approvals.Sealed(ctx, g.approvalKeys, a) {
		// Not the approval the task was made for: as if it were gone.
		return nil, "failed", "the call's approval is gone; the call was not made", nil
	}
	switch governance.CallState(a, g.now()) {
	case governance.CallStatePending:
		return a, "working", approvalWaitMessage(a), nil
	case governance.CallStateApproved:
		return a, "completed", approvedMessage(a), nil
	case governance.CallStateUsed:
		return a, "completed", fmt.Sprintf("the call was made (McpCallApproval %s/%s, approved by %s)", a.Namespace, a.Name, a.Spec.DecidedBy), nil
	case governance.CallStateDenied:
		msg := "the call was denied by " + a.Spec.DecidedBy + " (McpCallApproval " + a.Namespace + "/" + a.Name + ")"
		if a.Spec.Reason != "" {
			msg += ": " + a.Spec.Reason
		}
		return a, "failed", msg + "; it was not made", nil
	}
	return a, "failed", fmt.Sprintf("the call's approval (McpCallApproval %s/%s) expired undecided; the call was not made", a.Namespace, a.Name), nil
}

// serveApprovalTask answers tasks/get, tasks/result and tasks/cancel of a
// task waiting for a person, after the tool was decided again
// (decideTask).
func (g *Gateway) serveApprovalTask(w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity, c *callScope, h taskHandle, handle string) {
	ctx := r.Context()
	a, status, msg, err := g.approvalState(ctx, id, h)
	c.obs.end(audit.OutcomeSucceeded, "")
	g.endCall(c.obs, nil)
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the approval of a task could not be read", "tool", c.key.String())
		writeResponse(w, m.id, (&jsonError{Code: -32603, Message: "the gateway could not read the task's approval; try again"}).encode(), false)
		return
	}
	terminal := status == "completed" || status == "failed"
	switch m.method {
	case "tasks/get":
		if a == nil {
			// Nothing left to show a time of.
			a = &mcpv1alpha1.McpCallApproval{}
			a.Spec.ExpiresAt.Time = time.Unix(h.Expires, 0)
		}
		if status == "failed" && g.tasks.sawEnd(id, h.CallID) {
			g.taskEnded(ctx, c, h, status, "")
		}
		body, _ := json.Marshal(g.approvalTask(handle, status, msg, a))
		g.budgets.Charge(id, writeResponse(w, m.id, body, true))
	case "tasks/cancel":
		if terminal && !(status == "completed" && a != nil && governance.CallState(a, g.now()) == governance.CallStateApproved) {
			writeResponse(w, m.id, (&jsonError{Code: -32602, Message: "the task has ended: " + msg}).encode(), false)
			return
		}
		// Withdrawn: the approval goes, so that no one decides, or uses,
		// a call its agent no longer wants. The preconditions keep a use
		// made a moment ago.
		uid, rv := a.UID, a.ResourceVersion
		if err := g.Approvals.Delete(ctx, a, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) {
			if apierrors.IsConflict(err) {
				writeResponse(w, m.id, (&jsonError{Code: -32602, Message: "the task changed while it was cancelled; ask for it again"}).encode(), false)
				return
			}
			logging.FromContext(ctx, logging.Gateway).Error(err, "the approval of a cancelled task could not be withdrawn", "tool", c.key.String())
			writeResponse(w, m.id, (&jsonError{Code: -32603, Message: "the gateway could not withdraw the task's approval; try again"}).encode(), false)
			return
		}
		if g.tasks.finish(id, h.CallID) {
			g.taskEnded(ctx, c, h, "cancelled", "")
		}
		body, _ := json.Marshal(g.approvalTask(handle, "cancelled", "cancelled by the caller: the approval was withdrawn and the call not made", a))
		g.budgets.Charge(id, writeResponse(w, m.id, body, true))
	case "tasks/result":
		if status != "completed" || governance.CallState(a, g.now()) != governance.CallStateApproved {
			if status == "working" {
				writeResponse(w, m.id, (&jsonError{Code: -32602, Message: "the task is still " + msg + "; poll it with tasks/get"}).encode(), false)
				return
			}
			// Ended without a call: the agent reads why, as a call's
			// refusal reads.
			msg, ok := eraCallResult(refusal(msg), nil)
			g.budgets.Charge(id, writeResponse(w, m.id, msg, ok))
			return
		}
		// Approved: the call is made now, as the agent's retry of it
		// would be, through every stage; its approval step uses the
		// approval, once.
		req := &sdk.CallToolRequest{
			Params: &sdk.CallToolParamsRaw{Name: h.Name, Arguments: h.Args},
			Extra:  &sdk.RequestExtra{TokenInfo: info, Header: r.Header},
		}
		pre, err := g.decideVisible(ctx, id, h.Name)
		// The name finds the task's tool, or the call is refused as one
		// of a tool not offered.
		refused := err != nil || pre == nil || pre.offer.ref().key.String() != h.Tool
		if err != nil && !errors.Is(err, ErrOwnerNotServed) {
			msg, ok := eraCallResult(undecided(ctx, err), nil)
			writeResponse(w, m.id, msg, ok)
			return
		}
		res, err := g.callThrough(ctx, req, pre, refused)
		if g.tasks.finish(id, h.CallID) {
			ended := "completed"
			if err != nil || res == nil || res.IsError {
				ended = "failed"
			}
			g.taskEnded(ctx, c, h, ended, "")
		}
		msg, ok := eraCallResult(resultForEra(res, m.era), err)
		g.budgets.Charge(id, writeResponse(w, m.id, msg, ok))
	}
}
