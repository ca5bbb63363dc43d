package review

import (
	"context"
	"errors"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// TextChange is a change of the reviewed text (spec.reviewedText) FieldManager
// declares for a tool: each field set replaces what FieldManager declared
// before, and the rest of what it declared is kept.
type TextChange struct {
	// Title and Description replace the reviewed title and description
	// when not nil.
	Title, Description *string
	// Parameters replace the reviewed descriptions of the arguments they
	// name.
	Parameters map[string]string
	// Clear drops everything FieldManager declared of the reviewed text
	// before the fields above are applied.
	Clear bool
}

// TextNotHonouredError says the reviewed text would describe arguments the
// server's schema does not have; nothing was written.
type TextNotHonouredError struct {
	Problems []string
}

func (e *TextNotHonouredError) Error() string {
	msg := "the reviewed text cannot be honoured, so nothing was written:"
	for _, p := range e.Problems {
		msg += " " + p + ";"
	}
	return msg[:len(msg)-1]
}

// SetReviewedText applies change to the reviewed text of an McpTool, with
// FieldManager. What agents would then read is checked first with the
// gateway's own rule (toolview.Build): text the tool could not be served
// with is refused with a TextNotHonouredError. A write racing another
// change of the tool fails with ErrStale after a few attempts; without
// force, a field another manager (Git) owns is not taken.
func SetReviewedText(ctx context.Context, c client.Client, ns, name string, change TextChange, force bool) error {
	return onFreshTool(ctx, c, ns, name, func(t *mcpv1alpha1.McpTool) error {
		spec, err := OwnedSpec(t)
		if err != nil {
			return err
		}
		rt := changedText(spec.ReviewedText, change)
		spec.ReviewedText = rt
		if err := checkText(t, rt); err != nil {
			return err
		}
		return applySpec(ctx, c, t, spec, force)
	})
}

// changedText is the reviewed text FieldManager declares after change: what
// it declared before (owned), changed.
func changedText(owned *mcpac.ReviewedTextApplyConfiguration, change TextChange) *mcpac.ReviewedTextApplyConfiguration {
	rt := mcpac.ReviewedText()
	if owned != nil && !change.Clear {
		rt = owned
	}
	if change.Title != nil {
		rt.Title = change.Title
	}
	if change.Description != nil {
		rt.Description = change.Description
	}
	if len(change.Parameters) > 0 {
		byName := map[string]string{}
		for _, p := range rt.Parameters {
			if p.Name != nil && p.Description != nil {
				byName[*p.Name] = *p.Description
			}
		}
		for n, d := range change.Parameters {
			byName[n] = d
		}
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		rt.Parameters = nil
		for _, n := range names {
			rt.WithParameters(mcpac.ParameterText().WithName(n).WithDescription(byName[n]))
		}
	}
	if rt.Title == nil && rt.Description == nil && len(rt.Parameters) == 0 {
		return nil
	}
	return rt
}

// checkText refuses reviewed text that describes an argument the server's
// schema does not have, as the tool would then not be served. Fields other
// managers declare are checked with it, as the API server merges them.
func checkText(t *mcpv1alpha1.McpTool, rt *mcpac.ReviewedTextApplyConfiguration) error {
	if rt == nil || len(rt.Parameters) == 0 {
		return nil
	}
	probe := t.DeepCopy()
	if probe.Spec.ReviewedText == nil {
		probe.Spec.ReviewedText = &mcpv1alpha1.ReviewedText{}
	}
	for _, p := range rt.Parameters {
		probe.Spec.ReviewedText.Parameters = append(probe.Spec.ReviewedText.Parameters, mcpv1alpha1.ParameterText{Name: *p.Name, Description: *p.Description})
	}
	// Only the text is checked here; the argument rules are not this
	// command's to judge.
	probe.Spec.ArgumentRules = nil
	_, err := toolview.Build(probe)
	var inv *toolview.InvalidError
	switch {
	case errors.Is(err, toolview.ErrNoDefinition):
		return ErrNotImported
	case errors.As(err, &inv) && len(inv.Text) > 0:
		return &TextNotHonouredError{Problems: inv.Text}
	}
	return nil
}
