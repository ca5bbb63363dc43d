package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/logging"
)

// guardRequest is the guardrail stage of a call, after its argument rules:
// the administrator's guardrail webhook, when there is one, is asked about
// the call with the arguments as they would be sent. It refuses a call the
// webhook refuses, and one of a class that fails closed while the webhook
// gives no answer; below that class the call goes on, and the record says
// the webhook was unavailable.
func (g *Gateway) guardRequest(ctx context.Context, id *authn.Identity, c *callScope) *sdk.CallToolResult {
	if g.Guardrail == nil {
		return nil
	}
	// The canonical form the decision (or the rules stage) hashed: the
	// webhook judges exactly what the record names.
	req := g.guardrailRequest(id, c, guardrail.PhaseRequest)
	req.Arguments = c.argsJSON
	var v guardrail.Verdict
	var deny string
	c.rec.Guardrail, deny, v = g.checkBefore(ctx, req, c.class)
	switch deny {
	case audit.DenyGuardrailUnavailable:
		return g.deny(ctx, c.rec, c.tool, audit.DenyGuardrailUnavailable, "",
			"the guardrail could not be asked about this call, and calls of "+string(c.class)+" tools are not made without it; try again later")
	case audit.DenyGuardrail:
		return g.deny(ctx, c.rec, c.tool, audit.DenyGuardrail, "", "the guardrail refused this call"+reasonOf(v))
	}
	return nil
}

// checkBefore asks the guardrail webhook about req, something to be sent
// or asked, for data of class: what the record says it answered, and the
// reason to refuse it ("" to go on): its refusal, or no answer for a
// class that fails closed.
func (g *Gateway) checkBefore(ctx context.Context, req guardrail.Request, class mcpv1alpha1.DataClass) (mark, deny string, v guardrail.Verdict) {
	v, err := g.Guardrail.Check(ctx, req)
	switch {
	case err != nil:
		logUnavailable(ctx, err)
		if g.failsClosed(class) {
			return audit.GuardrailUnavailable, audit.DenyGuardrailUnavailable, v
		}
		return audit.GuardrailUnavailable, "", v
	case !v.Allow:
		return audit.GuardrailRefused, audit.DenyGuardrail, v
	}
	return audit.GuardrailAllowed, "", v
}

// guardPromptArguments is the guardrail stage of a prompts/get, as
// guardRequest is a call's: the webhook, when there is one, is asked
// about the get before it is sent, with the prompt's arguments (the bytes
// the record's hash names; {} for none). A get it refuses, or one of a
// class that fails closed while it gives no answer, is denied, audited,
// and not sent; rec then says what the webhook answered.
func (g *Gateway) guardPromptArguments(ctx context.Context, id *authn.Identity, rec *audit.Record, args map[string]string) error {
	if g.Guardrail == nil {
		return nil
	}
	b := []byte("{}")
	if len(args) > 0 {
		b, _ = json.Marshal(args)
	}
	c := &callScope{key: types.NamespacedName{Namespace: id.Namespace, Name: rec.Tool}, class: mcpv1alpha1.DataClass(rec.DataClass), rec: *rec}
	req := g.guardrailRequest(id, c, guardrail.PhasePromptRequest)
	req.Arguments = b
	var v guardrail.Verdict
	var deny string
	rec.Guardrail, deny, v = g.checkBefore(ctx, req, c.class)
	switch deny {
	case audit.DenyGuardrailUnavailable:
		g.featureDenial(ctx, *rec, deny, "")
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the guardrail could not be asked about this prompt, and prompts of " +
			string(c.class) + " data are not got without it; try again later"}
	case audit.DenyGuardrail:
		g.featureDenial(ctx, *rec, deny, "")
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the guardrail refused this prompt's arguments" + reasonOf(v)}
	}
	return nil
}

// guardResult asks the guardrail webhook about a result's text, once
// result inspection passed it: the text the agent reads (the webhook's
// replacement, if it gave one), and whether the result is withheld.
func (g *Gateway) guardResult(ctx context.Context, id *authn.Identity, c *callScope, text string) (string, bool) {
	if g.Guardrail == nil {
		return text, false
	}
	req := g.guardrailRequest(id, c, guardrail.PhaseResult)
	req.Result = &text
	v, err := g.Guardrail.Check(ctx, req)
	switch {
	case err != nil:
		c.rec.Guardrail = audit.GuardrailUnavailable
		logUnavailable(ctx, err)
		if g.failsClosed(c.class) {
			return "The gateway withheld this result: the guardrail could not be asked about it, and results of " + string(c.class) + " tools are not passed on without it.", true
		}
		return text, false
	case !v.Allow:
		c.rec.Guardrail = audit.GuardrailRefused
		return "The gateway withheld this result: the guardrail refused it" + reasonOf(v) + ".", true
	case v.Result != nil:
		c.rec.Guardrail = audit.GuardrailReplaced
		return *v.Result, false
	}
	c.rec.Guardrail = audit.GuardrailAllowed
	return text, false
}

// guardrailRequest is the request about c in phase. What a prompts/get or
// a resources/read returns (features.go: c names the McpPrompt or
// McpResource, and no tool) is asked about in the phase of its own, its
// object in the tool field.
func (g *Gateway) guardrailRequest(id *authn.Identity, c *callScope, phase string) guardrail.Request {
	req := guardrail.Request{Phase: phase, CallID: c.rec.CallID, Namespace: id.Namespace, Caller: id.Username, DataClass: string(c.class)}
	if c.tool == nil {
		switch {
		case phase == guardrail.PhasePromptRequest:
			// A get before it is sent: its arguments, in their own phase.
		case c.rec.Method == methodPromptsGet:
			req.Phase = guardrail.PhasePrompt
		case c.rec.Method == methodResourcesRead:
			req.Phase = guardrail.PhaseResource
		}
		req.Tool, req.Server = c.key.Namespace+"/"+c.key.Name, c.key.Namespace+"/"+c.rec.Server
		return req
	}
	req.Tool, req.Server = c.tool.Namespace+"/"+c.tool.Name, c.tool.Namespace+"/"+c.tool.Spec.ServerRef.Name
	return req
}

// failsClosed reports whether calls of class are refused while the
// guardrail gives no answer.
func (g *Gateway) failsClosed(class mcpv1alpha1.DataClass) bool {
	from := g.GuardrailFailClosedFrom
	if !from.Valid() {
		from = mcpv1alpha1.DataClassConfidential
	}
	return class.Rank() >= from.Rank()
}

// reasonOf is the webhook's reason, for the agent, or nothing.
func reasonOf(v guardrail.Verdict) string {
	if v.Reason == "" {
		return ""
	}
	return ": " + v.Reason
}

func logUnavailable(ctx context.Context, err error) {
	var ue *guardrail.UnavailableError
	why := "Unavailable"
	if errors.As(err, &ue) {
		why = ue.Why
	}
	logging.FromContext(ctx, logging.Gateway).Info("the guardrail gave no answer", "why", why)
}
