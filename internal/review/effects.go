package review

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// ErrReadOnlyDestructive refuses answers that call a tool both read-only
// and destructive.
var ErrReadOnlyDestructive = errors.New("a tool reviewed as read-only cannot be destructive")

// EffectAnswers are a person's answers about what a tool's calls do; a
// nil answer is left unset, which the gate reads as the unsafe one.
type EffectAnswers struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// SetEffects sets spec.reviewedEffects of the tool to answers for the
// definition hash, if, and only if, hash is the tool's current definition
// (as Approve). The review applies once hash is also the approved
// definition. force takes the field from another manager.
func SetEffects(ctx context.Context, c client.Client, ns, name, hash string, answers EffectAnswers, force bool) error {
	return onFreshTool(ctx, c, ns, name, func(t *mcpv1alpha1.McpTool) error {
		switch cur := t.Status.DefinitionHash; {
		case cur == "":
			return ErrNotImported
		case cur != hash:
			return &DefinitionChangedError{Tool: t.Name, Current: cur, Reviewed: hash}
		}
		if answers.ReadOnly != nil && *answers.ReadOnly && answers.Destructive != nil && *answers.Destructive {
			return ErrReadOnlyDestructive
		}
		spec, err := OwnedSpec(t)
		if err != nil {
			return err
		}
		r := mcpac.ReviewedEffects().WithDefinitionHash(hash)
		r.ReadOnly, r.Destructive, r.Idempotent, r.OpenWorld = answers.ReadOnly, answers.Destructive, answers.Idempotent, answers.OpenWorld
		spec.WithReviewedEffects(r)
		return applySpec(ctx, c, t, spec, force)
	})
}
