package gateway

import (
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/inspect"
)

func TestInspectionIsTheStrictestSetByAPolicyNamingTheCallerElseTheDefault(t *testing.T) {
	bot := &authn.Identity{Namespace: "team", ServiceAccount: "bot"}
	with := func(p mcpv1alpha1.McpAccessPolicy, ri mcpv1alpha1.ResultInspection) mcpv1alpha1.McpAccessPolicy {
		p.Spec.ResultInspection = &ri
		return p
	}
	small, large := int64(4096), int64(1<<20)
	for _, tc := range []struct {
		name     string
		policies []mcpv1alpha1.McpAccessPolicy
		want     inspect.Policy
		limit    int64
	}{
		{"no policy", nil, inspect.DefaultPolicy, 0},
		{"a policy loosening one kind", []mcpv1alpha1.McpAccessPolicy{with(policy("team", "Public", "bot"), mcpv1alpha1.ResultInspection{Secrets: mcpv1alpha1.InspectionAnnotate})},
			inspect.Policy{HiddenCharacters: inspect.Redact, InstructionLike: inspect.Annotate, Secrets: inspect.Annotate}, 0},
		{"the strictest of two", []mcpv1alpha1.McpAccessPolicy{
			with(policy("team", "Public", "bot"), mcpv1alpha1.ResultInspection{Secrets: mcpv1alpha1.InspectionAnnotate, MaxResultBytes: &large}),
			with(policy("team", "Public", "*"), mcpv1alpha1.ResultInspection{Secrets: mcpv1alpha1.InspectionRefuse, InstructionLike: mcpv1alpha1.InspectionRedact, MaxResultBytes: &small}),
		}, inspect.Policy{HiddenCharacters: inspect.Redact, InstructionLike: inspect.Redact, Secrets: inspect.Refuse}, small},
		{"a policy naming another caller", []mcpv1alpha1.McpAccessPolicy{with(policy("team", "Public", "other"), mcpv1alpha1.ResultInspection{Secrets: mcpv1alpha1.InspectionAnnotate})},
			inspect.DefaultPolicy, 0},
		{"an action this version does not know", []mcpv1alpha1.McpAccessPolicy{with(policy("team", "Public", "bot"), mcpv1alpha1.ResultInspection{Secrets: "Shrug"})},
			inspect.Policy{HiddenCharacters: inspect.Redact, InstructionLike: inspect.Annotate, Secrets: "Shrug"}, 0},
	} {
		got, limit := inspectionFor(bot, tc.policies)
		if got != tc.want || limit != tc.limit {
			t.Errorf("%s: %+v and %d, want %+v and %d", tc.name, got, limit, tc.want, tc.limit)
		}
	}
	// An action this version does not know refuses.
	r := inspect.Scan("id " + "gh" + "p_" + "0123456789abcdef0123456789abcdef0123")
	if out := inspect.Apply("x", r, inspect.Policy{Secrets: "Shrug"}); !out.Refused {
		t.Errorf("an unknown action did not refuse: %+v", out)
	}
}
