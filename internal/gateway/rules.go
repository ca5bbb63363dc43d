package gateway

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// What agents see of a tool and what its calls may carry are the
// platform's: the view internal/toolview builds from the McpTool's spec
// (reviewed text, argument rules) and the definition its import recorded,
// once per version of the tool (g.views). The decision offers no tool whose
// view cannot be built (unhonoured), the list serves the view's text and
// schema (sdkTool), and the rules stage applies its rules to every call.
// A shared tool's calls also pass the rules the consuming namespace's
// McpSharedServer adds (g.sharedRules), after the owner's; the decision
// offers no shared tool whose added rules do not compile.

// unhonoured says why t's view cannot be built, as a NotServable detail:
// ReviewedTextInvalid or ArgumentRulesInvalid, or "" when it can. The
// McpTool controller reports the same on the tool's conditions, from the
// same function.
func (g *Gateway) unhonoured(t *mcpv1alpha1.McpTool) string {
	_, err := g.views.Get(t)
	var inv *toolview.InvalidError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &inv) && len(inv.Text) > 0:
		return mcpv1alpha1.ReasonReviewedTextInvalid
	}
	return mcpv1alpha1.ReasonArgumentRulesInvalid
}

// applyRules is the rules stage of a call, between the decision and the
// approval: the arguments become those sent upstream (the fixed arguments
// set), once every rule allowed them, and the record's arguments hash
// becomes theirs, so that an approval names what the server receives. A
// refusal names the fixed argument or rule, never a value, and is audited.
// A person is never asked to approve a call the rules refuse.
func (g *Gateway) applyRules(ctx context.Context, c *callScope) *sdk.CallToolResult {
	v, err := g.views.Get(c.tool)
	if err != nil {
		// The decision refused a tool without a view; this one changed
		// version in between.
		return g.deny(ctx, c.rec, c.tool, audit.DenyNotServable, g.unhonoured(c.tool), "the tool is not servable now (its argument rules or reviewed text cannot be honoured)")
	}
	// A shared tool: the consuming namespace's rules apply after the
	// owner's, to the arguments the owner's let through.
	var consumer *argrules.Program // none: Empty, and Apply passes the arguments on
	if c.shared != nil {
		if consumer, err = g.sharedRules.Get(c.shared, c.tool.Spec.RemoteName); err != nil {
			return g.deny(ctx, c.rec, c.tool, audit.DenyNotServable, mcpv1alpha1.ReasonConsumerRulesInvalid, verdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonConsumerRulesInvalid}.message())
		}
	}
	if v.Rules.Empty() && consumer.Empty() {
		return nil
	}
	args, err := c.arguments()
	if err != nil {
		return g.deny(ctx, c.rec, c.tool, audit.DenyArgumentRuleNotEvaluated, "", "the arguments could not be read for the rules")
	}
	// The rules stop at their deadline, or when the call ends.
	upstream, refused := v.Rules.ApplyContext(ctx, args)
	if refused == nil {
		upstream, refused = consumer.ApplyContext(ctx, upstream)
	}
	if refused != nil {
		return g.deny(ctx, c.rec, c.tool, refused.Kind, refused.Name, refused.Text())
	}
	_, encoded, hash, err := encodedArguments(upstream)
	if err != nil {
		// Every value came from JSON, so they marshal again.
		return g.deny(ctx, c.rec, c.tool, audit.DenyArgumentRuleNotEvaluated, "", "the arguments could not be prepared for the server")
	}
	c.args, c.argsJSON, c.rec.ArgumentsHash = upstream, encoded, hash
	return nil
}
