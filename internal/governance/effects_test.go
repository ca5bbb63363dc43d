package governance

import (
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

const (
	hashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// toolReviewed is a tool whose approved definition is approved, reviewed
// as r (nil: not reviewed), and whose server calls it read-only.
func toolReviewed(approved string, r *mcpv1alpha1.ReviewedEffects) *mcpv1alpha1.McpTool {
	t := &mcpv1alpha1.McpTool{Spec: mcpv1alpha1.McpToolSpec{ApprovedDefinitionHash: approved, ReviewedEffects: r}}
	t.Status.DefinitionHash = approved
	t.Status.Hints = &mcpv1alpha1.ToolHints{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}
	return t
}

func TestEffectsAreTheReviewOfTheApprovedDefinitionAndUnsafeOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    *mcpv1alpha1.McpTool
		want Effects
	}{
		{"no review, whatever the hints", toolReviewed(hashA, nil), Unreviewed},
		{"a review of another definition", toolReviewed(hashB, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, ReadOnly: ptr(true)}), Unreviewed},
		{"a review and no approval", toolReviewed("", &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, ReadOnly: ptr(true)}), Unreviewed},
		{"every answer left out is the unsafe one", toolReviewed(hashA, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA}),
			Effects{Reviewed: true, Destructive: true, OpenWorld: true}},
		{"read-only is never destructive", toolReviewed(hashA, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, ReadOnly: ptr(true)}),
			Effects{Reviewed: true, ReadOnly: true, OpenWorld: true}},
		{"each answer as given", toolReviewed(hashA, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, Destructive: ptr(false), Idempotent: ptr(true), OpenWorld: ptr(false)}),
			Effects{Reviewed: true, Idempotent: true}},
	} {
		if got := EffectsOf(tc.t); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestEffectsHaveTheEffectsTheyName(t *testing.T) {
	readOnly := Effects{Reviewed: true, ReadOnly: true}
	for _, effect := range []mcpv1alpha1.ToolEffect{mcpv1alpha1.EffectWrite, mcpv1alpha1.EffectDestructive, mcpv1alpha1.EffectNonIdempotent, mcpv1alpha1.EffectOpenWorld} {
		if !Unreviewed.Has(effect) {
			t.Errorf("an unreviewed tool does not have %s", effect)
		}
		if readOnly.Has(effect) {
			t.Errorf("a reviewed read-only, closed-world tool has %s", effect)
		}
	}
	if !readOnly.Has("Teleports") {
		t.Error("an effect the API server should have refused is one no tool lacks, so that it lifts nothing")
	}
	if got := (Effects{Reviewed: true, Idempotent: true}).Summary(); got != mcpv1alpha1.EffectIdempotentWrite {
		t.Errorf("summary %s", got)
	}
}

func TestServerApprovalIsKeyedOnTheReviewNeverOnHints(t *testing.T) {
	exempt := &mcpv1alpha1.McpServer{Spec: mcpv1alpha1.McpServerSpec{DataClass: mcpv1alpha1.DataClassPublic,
		ApprovalByEffect: &mcpv1alpha1.EffectApproval{ExemptReadOnly: true}}}
	readOnly := &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, ReadOnly: ptr(true), OpenWorld: ptr(false)}
	if _, approval := Effective(exempt, toolReviewed(hashA, nil)); !approval {
		t.Error("a tool only its server calls read-only was exempted from approval")
	}
	if _, approval := Effective(exempt, toolReviewed(hashA, readOnly)); approval {
		t.Error("a tool reviewed as read-only needs approval although its server exempts read-only tools")
	}
	own := toolReviewed(hashA, readOnly)
	own.Spec.ApprovalRequired = ptr(true)
	if _, approval := Effective(exempt, own); !approval {
		t.Error("the exemption lifted the tool's own approvalRequired")
	}
	off := &mcpv1alpha1.McpServer{Spec: mcpv1alpha1.McpServerSpec{DataClass: mcpv1alpha1.DataClassPublic, ApprovalRequired: ptr(false),
		ApprovalByEffect: &mcpv1alpha1.EffectApproval{RequiredFor: []mcpv1alpha1.ToolEffect{mcpv1alpha1.EffectOpenWorld}}}}
	if _, approval := Effective(off, toolReviewed(hashA, nil)); !approval {
		t.Error("an unreviewed tool its server calls closed-world was not taken as open-world")
	}
	if _, approval := Effective(off, toolReviewed(hashA, readOnly)); approval {
		t.Error("a tool reviewed as closed-world needs approval for open-world tools")
	}
}

func TestCeilingIsKeyedOnEffectsAndOnlyLowered(t *testing.T) {
	p := func(class mcpv1alpha1.DataClass, sa string, by ...mcpv1alpha1.EffectCeiling) mcpv1alpha1.McpAccessPolicy {
		q := mcpv1alpha1.McpAccessPolicy{Spec: mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{sa}, MaxDataClass: class, MaxDataClassByEffect: by}}
		q.Namespace = "team"
		return q
	}
	writes := mcpv1alpha1.EffectCeiling{Effect: mcpv1alpha1.EffectWrite, MaxDataClass: mcpv1alpha1.DataClassInternal}
	readOnly := Effects{Reviewed: true, ReadOnly: true}
	c := CeilingOf([]mcpv1alpha1.McpAccessPolicy{p(mcpv1alpha1.DataClassConfidential, "bot", writes)}, Caller{Namespace: "team", ServiceAccount: "bot"})
	if got := c.For(Unreviewed); got != mcpv1alpha1.DataClassInternal {
		t.Errorf("writes: %s, want Internal", got)
	}
	if got := c.For(readOnly); got != mcpv1alpha1.DataClassConfidential {
		t.Errorf("read-only: %s, want Confidential", got)
	}
	raising := mcpv1alpha1.EffectCeiling{Effect: mcpv1alpha1.EffectWrite, MaxDataClass: mcpv1alpha1.DataClassRestricted}
	if got := CeilingOf([]mcpv1alpha1.McpAccessPolicy{p(mcpv1alpha1.DataClassInternal, "bot", raising)}, Caller{Namespace: "team", ServiceAccount: "bot"}).For(Unreviewed); got != mcpv1alpha1.DataClassInternal {
		t.Errorf("an entry above maxDataClass raised the ceiling to %s", got)
	}
	unknown := mcpv1alpha1.EffectCeiling{Effect: mcpv1alpha1.EffectWrite, MaxDataClass: "TopSecret"}
	if got := CeilingOf([]mcpv1alpha1.McpAccessPolicy{p(mcpv1alpha1.DataClassInternal, "bot", unknown)}, Caller{Namespace: "team", ServiceAccount: "bot"}).For(Unreviewed); got != mcpv1alpha1.DataClassPublic {
		t.Errorf("an entry of an unknown class left the ceiling at %s, want Public", got)
	}
	other := CeilingOf([]mcpv1alpha1.McpAccessPolicy{p(mcpv1alpha1.DataClassRestricted, "other")}, Caller{Namespace: "team", ServiceAccount: "bot"})
	if got := other.For(readOnly); got != mcpv1alpha1.DataClassPublic {
		t.Errorf("a policy naming another account gave %s", got)
	}
	req := p(mcpv1alpha1.DataClassPublic, "bot")
	req.Spec.ApprovalRequiredFor = []mcpv1alpha1.ToolEffect{mcpv1alpha1.EffectDestructive}
	c = CeilingOf([]mcpv1alpha1.McpAccessPolicy{req}, Caller{Namespace: "team", ServiceAccount: "bot"})
	if !c.ApprovalFor(Unreviewed) || c.ApprovalFor(readOnly) {
		t.Errorf("approval for destructive tools: unreviewed %t, read-only %t", c.ApprovalFor(Unreviewed), c.ApprovalFor(readOnly))
	}
	if CeilingOf([]mcpv1alpha1.McpAccessPolicy{req}, Caller{Namespace: "team", ServiceAccount: "other"}).ApprovalFor(Unreviewed) {
		t.Error("a policy naming another account added approval")
	}
}
