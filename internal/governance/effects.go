package governance

import (
	"slices"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Effects are what the gate takes a tool's calls to do. They come from a
// person's review (McpTool spec.reviewedEffects) for the tool's approved
// definition, and from nothing else: the hints a server sends about its
// own tool are its self-description, and never decide how the tool is
// authorised.
type Effects struct {
	// Reviewed reports whether a person reviewed the effects of the
	// approved definition; when false the rest are the unsafe answers.
	Reviewed    bool
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// Unreviewed are the effects of a tool whose effects nobody reviewed for
// its approved definition: a destructive, non-idempotent, open-world
// write.
var Unreviewed = Effects{Destructive: true, OpenWorld: true}

// EffectsOf are t's effects: its spec.reviewedEffects while they review
// the approved definition (spec.approvedDefinitionHash), Unreviewed
// otherwise. An effect the review leaves unset is the unsafe answer, and
// a read-only tool is never destructive. Only spec is read: a definition
// approved after the review is unreviewed until it is reviewed again.
func EffectsOf(t *mcpv1alpha1.McpTool) Effects {
	r := t.Spec.ReviewedEffects
	if r == nil || r.DefinitionHash == "" || r.DefinitionHash != t.Spec.ApprovedDefinitionHash {
		return Unreviewed
	}
	e := Effects{
		Reviewed:    true,
		ReadOnly:    valueOr(r.ReadOnly, false),
		Destructive: valueOr(r.Destructive, true),
		Idempotent:  valueOr(r.Idempotent, false),
		OpenWorld:   valueOr(r.OpenWorld, true),
	}
	if e.ReadOnly {
		e.Destructive = false
	}
	return e
}

// StaleEffectsReview reports whether t's spec.reviewedEffects review a
// definition other than the approved one, so that they do not apply.
func StaleEffectsReview(t *mcpv1alpha1.McpTool) bool {
	r := t.Spec.ReviewedEffects
	return r != nil && r.DefinitionHash != t.Spec.ApprovedDefinitionHash
}

func valueOr(b *bool, unset bool) bool {
	if b == nil {
		return unset
	}
	return *b
}

// Has reports whether the tool has effect.
func (e Effects) Has(effect mcpv1alpha1.ToolEffect) bool {
	switch effect {
	case mcpv1alpha1.EffectWrite:
		return !e.ReadOnly
	case mcpv1alpha1.EffectDestructive:
		return e.Destructive
	case mcpv1alpha1.EffectNonIdempotent:
		return !e.ReadOnly && !e.Idempotent
	case mcpv1alpha1.EffectOpenWorld:
		return e.OpenWorld
	}
	// An effect the API server should have rejected: every tool has it,
	// so that it never lifts anything.
	return true
}

// HasAny reports whether the tool has any of effects.
func (e Effects) HasAny(effects []mcpv1alpha1.ToolEffect) bool {
	return slices.ContainsFunc(effects, e.Has)
}

// Summary is the status.effect of a tool with these effects.
func (e Effects) Summary() string {
	switch {
	case e.ReadOnly:
		return mcpv1alpha1.EffectReadOnly
	case e.Idempotent:
		return mcpv1alpha1.EffectIdempotentWrite
	}
	return mcpv1alpha1.EffectNonIdempotentWrite
}

// serverApproval is whether srv requires approval of calls of a tool with
// effects e: its approvalRequired, lifted for reviewed read-only tools
// when spec.approvalByEffect.exemptReadOnly says so, and added for the
// effects of spec.approvalByEffect.requiredFor.
func serverApproval(srv *mcpv1alpha1.McpServer, e Effects) bool {
	required := ServerApprovalRequired(srv)
	by := srv.Spec.ApprovalByEffect
	if by == nil {
		return required
	}
	if required && by.ExemptReadOnly && e.Reviewed && e.ReadOnly {
		required = false
	}
	return required || e.HasAny(by.RequiredFor)
}

// Words say the effects for a person: "read-only, closed-world",
// "idempotent, destructive, open-world write", …
func (e Effects) Words() string {
	world := "open-world"
	if !e.OpenWorld {
		world = "closed-world"
	}
	if e.ReadOnly {
		return "read-only, " + world
	}
	idem := "non-idempotent"
	if e.Idempotent {
		idem = "idempotent"
	}
	destr := "non-destructive"
	if e.Destructive {
		destr = "destructive"
	}
	return idem + ", " + destr + ", " + world + " write"
}
