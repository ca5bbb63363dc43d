package gateway

import (
	"strconv"
	"strings"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/inspect"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// findingTooLarge is the finding of a result longer than the caller's
// policies allow.
const findingTooLarge = "TooLarge"

// inspectResult is the inspect stage of a call: the text of the upstream's
// result as the caller's McpAccessPolicies say the agent may read it, and
// whether it is withheld. What was found, by kind, goes into the audit
// record and the findings metric; the text found goes nowhere.
func (g *Gateway) inspectResult(id *authn.Identity, c *callScope, text string) (string, bool) {
	p, limit := inspectionFor(id, c.policies)
	if limit > 0 && int64(len(text)) > limit {
		c.rec.Inspection, c.rec.InspectionAction = []string{findingTooLarge}, string(inspect.Refuse)
		metrics.GatewayResultFindings.WithLabelValues(id.Namespace, findingTooLarge, string(inspect.Refuse)).Inc()
		return "The gateway withheld this result: its text is " + strconv.Itoa(len(text)) + " bytes, above the " +
			strconv.FormatInt(limit, 10) + " bytes the access policy allows (spec.resultInspection.maxResultBytes).", true
	}
	out := inspect.Apply(text, inspect.Scan(text), p)
	if out.Action == "" {
		return text, false
	}
	c.rec.Inspection, c.rec.InspectionAction = out.Found, string(out.Action)
	seen := map[string]bool{}
	for _, f := range out.Found {
		kind := f
		if strings.HasPrefix(f, string(inspect.Secret)+":") {
			kind = string(inspect.Secret)
		}
		if !seen[kind] {
			seen[kind] = true
			metrics.GatewayResultFindings.WithLabelValues(id.Namespace, kind, string(out.Action)).Inc()
		}
	}
	return out.Text, out.Refused
}

// inspectionFor is what the caller's policies ask of its results: for each
// kind, the strictest action the policies naming it set (the default where
// none sets one), and the smallest maxResultBytes among them (0: none).
func inspectionFor(id *authn.Identity, policies []mcpv1alpha1.McpAccessPolicy) (inspect.Policy, int64) {
	var set inspect.Policy
	var limit int64
	for i := range policies {
		ri := policies[i].Spec.ResultInspection
		if ri == nil || !governance.Names(&policies[i], id.PolicyCaller()) {
			continue
		}
		set.HiddenCharacters = stricter(set.HiddenCharacters, ri.HiddenCharacters)
		set.InstructionLike = stricter(set.InstructionLike, ri.InstructionLike)
		set.Secrets = stricter(set.Secrets, ri.Secrets)
		if m := ri.MaxResultBytes; m != nil && *m > 0 && (limit == 0 || *m < limit) {
			limit = *m
		}
	}
	d := inspect.DefaultPolicy
	return inspect.Policy{
		HiddenCharacters: orDefault(set.HiddenCharacters, d.HiddenCharacters),
		InstructionLike:  orDefault(set.InstructionLike, d.InstructionLike),
		Secrets:          orDefault(set.Secrets, d.Secrets),
	}, limit
}

// stricter is the stricter of an action so far (empty: none) and one a
// policy sets (empty: unset).
func stricter(sofar inspect.Action, set mcpv1alpha1.InspectionAction) inspect.Action {
	switch {
	case set == "":
		return sofar
	case sofar == "":
		return inspect.Action(set)
	}
	return inspect.Stricter(sofar, inspect.Action(set))
}

func orDefault(a, d inspect.Action) inspect.Action {
	if a == "" {
		return d
	}
	return a
}
