package controller

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/drift"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// The functions in this file compute an McpTool's status. They are pure:
// they change the tool they are given and read nothing else, and they are
// the only code that computes McpTool status, whichever path writes it
// (toolstatus.go).

// setToolView sets what a tool's spec and its server (nil when the server
// does not exist) decide of its status: its names, effective class and
// approval, whether its reviewed text and argument rules can be honoured,
// and whether it is servable (Ready) for this generation. honoured is what
// toolview.Build said of this version of the tool: nil when the spec can be
// honoured, toolview.ErrNoDefinition, or a *toolview.InvalidError.
func setToolView(t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, honoured error, now time.Time) {
	s := &t.Status
	s.LocalName = toolname.LocalName(t.Spec.ServerRef.Name, t.Spec.RemoteName)
	s.Group = toolname.Group(t.Spec.ServerRef.Name)
	class, approval := governance.Effective(srv, t)
	s.EffectiveDataClass, s.EffectiveApprovalRequired = class, &approval
	effects := governance.EffectsOf(t)
	s.Effect, s.RequiresAdmin = effects.Summary(), true
	s.ObservedGeneration = t.Generation
	setHonoured(t, honoured, now)
	setEffectsReviewed(t, effects, now)
	status, reason, msg := toolReadiness(t, srv, honoured)
	setCondition(&s.Conditions, t.Generation, mcpv1alpha1.ConditionReady, status, reason, msg, now)
}

// setEffectsReviewed sets EffectsReviewed while the spec sets reviewed
// effects: True when they review the approved definition (effects are
// then the reviewed ones), False when they review another, and removed
// when the spec sets none.
func setEffectsReviewed(t *mcpv1alpha1.McpTool, effects governance.Effects, now time.Time) {
	r := t.Spec.ReviewedEffects
	switch {
	case r == nil:
		meta.RemoveStatusCondition(&t.Status.Conditions, mcpv1alpha1.ConditionEffectsReviewed)
	case effects.Reviewed:
		setCondition(&t.Status.Conditions, t.Generation, mcpv1alpha1.ConditionEffectsReviewed, metav1.ConditionTrue, mcpv1alpha1.ReasonEffectsReviewed,
			"reviewed as "+effects.Words()+" for the approved definition", now)
	default:
		approved := t.Spec.ApprovedDefinitionHash
		if approved == "" {
			approved = "none"
		}
		setCondition(&t.Status.Conditions, t.Generation, mcpv1alpha1.ConditionEffectsReviewed, metav1.ConditionFalse, mcpv1alpha1.ReasonReviewedForAnotherDefinition,
			fmt.Sprintf("spec.reviewedEffects review %s, not the approved definition (%s): the tool is treated as a destructive, non-idempotent, open-world write until its effects are reviewed again (kubectl mcp effects)", r.DefinitionHash, approved), now)
	}
}

// maxProblemMessage bounds the problems a condition message lists.
const maxProblemMessage = 4096

// setHonoured sets ReviewedTextValid while the spec sets reviewed text, and
// ArgumentRulesValid while it sets argument rules, each from what
// toolview.Build said (honoured); a condition whose spec field is unset is
// removed.
func setHonoured(t *mcpv1alpha1.McpTool, honoured error, now time.Time) {
	var inv *toolview.InvalidError
	invalid := errors.As(honoured, &inv)
	set := func(typ string, present bool, problems string, reason string) {
		switch {
		case !present:
			meta.RemoveStatusCondition(&t.Status.Conditions, typ)
		case errors.Is(honoured, toolview.ErrNoDefinition):
			setCondition(&t.Status.Conditions, t.Generation, typ, metav1.ConditionUnknown, mcpv1alpha1.ReasonNotImported, honoured.Error(), now)
		case problems != "":
			setCondition(&t.Status.Conditions, t.Generation, typ, metav1.ConditionFalse, reason, clip(problems, maxProblemMessage)+"; the tool is not served until this is fixed", now)
		case honoured != nil && !invalid:
			setCondition(&t.Status.Conditions, t.Generation, typ, metav1.ConditionFalse, reason, clip(honoured.Error(), maxProblemMessage), now)
		default:
			setCondition(&t.Status.Conditions, t.Generation, typ, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "can be honoured against the server's current definition", now)
		}
	}
	var textProblems, ruleProblems string
	if invalid {
		textProblems = strings.Join(inv.Text, "; ")
		if inv.Rules != nil {
			ruleProblems = inv.Rules.Error()
		}
	}
	set(mcpv1alpha1.ConditionReviewedTextValid, t.Spec.ReviewedText != nil, textProblems, mcpv1alpha1.ReasonReviewedTextInvalid)
	set(mcpv1alpha1.ConditionArgumentRulesValid, t.Spec.ArgumentRules != nil, ruleProblems, mcpv1alpha1.ReasonArgumentRulesInvalid)
}

// unhonoured is the Ready reason and message of a tool whose spec cannot be
// honoured, or "" when it can (or cannot be known yet: a tool not imported
// is not Ready for that reason).
func unhonoured(honoured error) (string, string) {
	var inv *toolview.InvalidError
	switch {
	case honoured == nil || errors.Is(honoured, toolview.ErrNoDefinition):
		return "", ""
	case errors.As(honoured, &inv) && len(inv.Text) > 0:
		return mcpv1alpha1.ReasonReviewedTextInvalid, "spec.reviewedText cannot be honoured (see the condition " + mcpv1alpha1.ConditionReviewedTextValid + "); the tool is not served"
	}
	return mcpv1alpha1.ReasonArgumentRulesInvalid, "spec.argumentRules cannot be honoured (see the condition " + mcpv1alpha1.ConditionArgumentRulesValid + "); the tool is not served"
}

// toolReadiness says whether a tool is servable, and otherwise the first
// reason it is not. The only approval is spec.approvedDefinitionHash
// (governance.Unapproved): enabling approves nothing, and nothing in status
// counts as an approval, so a tool deleted and created again (status
// empty) is not servable until its approval is on record again.
func toolReadiness(t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, honoured error) (metav1.ConditionStatus, string, string) {
	imported := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionImported)
	wantName, nameErr := toolname.ObjectName(t.Spec.ServerRef.Name, t.Spec.RemoteName)
	switch {
	case nameErr != nil:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonNameMismatch, "the server or remote name cannot form an McpTool name (see docs/naming.md); this object is never served"
	case wantName != t.Name:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonNameMismatch, "the object's name must be " + wantName + " (see docs/naming.md); this object is never served"
	case !t.Spec.Enabled:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled, "the tool is not enabled (spec.enabled)"
	case srv == nil:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotFound, "McpServer " + t.Spec.ServerRef.Name + " does not exist"
	case imported == nil:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonNotImported, "no import has seen this tool yet"
	case imported.Status != metav1.ConditionTrue:
		return metav1.ConditionFalse, imported.Reason, imported.Message
	}
	switch governance.Unapproved(t) {
	case mcpv1alpha1.ReasonDefinitionNotApproved:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved,
			"no definition is approved; review the definition and set spec.approvedDefinitionHash to " + t.Status.DefinitionHash + " (or run kubectl mcp approve) to serve it"
	case mcpv1alpha1.ReasonDefinitionChanged:
		return metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged,
			"the tool's definition differs from the approved one; review it and set spec.approvedDefinitionHash to " + t.Status.DefinitionHash + " to serve it again"
	}
	if reason, msg := unhonoured(honoured); reason != "" {
		return metav1.ConditionFalse, reason, msg
	}
	if !meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReady) {
		return metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotReady, "McpServer " + srv.Name + " is not Ready"
	}
	return metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "enabled, imported, approved and its server is Ready"
}

// setDefinition records a definition the server offers: the definition
// itself and Imported=True. A definition replacing the approved one keeps
// the approved text in approvedDefinition, for a person to review what
// changed; t must therefore hold the definition texts (a tool read from the
// API server, not from a cache that drops them).
//
// It also explains the definition (setDrift), with removed the places the
// import removed control characters from, and returns the explanation when
// it is a new one, for the importer to report.
func setDefinition(t *mcpv1alpha1.McpTool, def *mcpv1alpha1.ToolDefinition, removed []string, now time.Time) *mcpv1alpha1.DefinitionDrift {
	s := &t.Status
	reported := setDrift(t, def, removed, now)
	s.ApprovedDefinition = approvedRecord(t, def.Hash)
	s.DefinitionHash, s.Title, s.Description, s.InputSchema, s.Hints = def.Hash, def.Title, def.Description, def.InputSchema, def.Hints
	s.OutputSchema, s.TaskSupport = def.OutputSchema, def.TaskSupport
	setCondition(&s.Conditions, t.Generation, mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "offered by the server at the last import", now)
	return reported
}

// setDrift explains def, the definition about to replace t's, in
// status.drift (docs/adr/027-drift-explained.md), and returns the new
// explanation, or nil when there is none to report. It compares def with
// the approved definition when its text is on record, so that the
// categories describe everything that changed since a person approved;
// otherwise with the definition def replaces. A first definition gets the
// checks of the definition alone, recorded only when they find something.
// The server offering the approved definition again removes the
// explanation: there is nothing left to review. A definition already
// recorded keeps its explanation. Control characters the import removed
// from def (removed) are reported as hidden characters either way.
func setDrift(t *mcpv1alpha1.McpTool, def *mcpv1alpha1.ToolDefinition, removed []string, now time.Time) *mcpv1alpha1.DefinitionDrift {
	s := &t.Status
	var report drift.Report
	from := ""
	next := driftDefinition(t.Spec.RemoteName, def)
	next.Removed = removed
	switch prev := s.DefinitionHash; {
	case prev == def.Hash:
		return nil
	case def.Hash == t.Spec.ApprovedDefinitionHash:
		s.Drift = nil
		return nil
	case prev == "":
		report = drift.Inspect(next)
	default:
		base := currentDefinition(t)
		if rec := approvedRecord(t, def.Hash); rec != nil {
			base = rec
		}
		from = base.Hash
		report = drift.Compare(driftDefinition(t.Spec.RemoteName, base), next)
	}
	if len(report.Categories) == 0 {
		s.Drift = nil
		return nil
	}
	d := &mcpv1alpha1.DefinitionDrift{FromHash: from, ToHash: def.Hash, Details: report.Details, ObservedTime: metav1.NewTime(now)}
	for _, c := range report.Categories {
		d.Categories = append(d.Categories, mcpv1alpha1.DriftCategory(c))
	}
	s.Drift = d
	return d
}

// currentDefinition is the definition t's status records.
func currentDefinition(t *mcpv1alpha1.McpTool) *mcpv1alpha1.ToolDefinition {
	s := &t.Status
	return &mcpv1alpha1.ToolDefinition{Hash: s.DefinitionHash, Title: s.Title, Description: s.Description, InputSchema: s.InputSchema, OutputSchema: s.OutputSchema, Hints: s.Hints, TaskSupport: s.TaskSupport}
}

// driftDefinition is a recorded definition as package drift reads it.
func driftDefinition(name string, d *mcpv1alpha1.ToolDefinition) drift.Definition {
	out := drift.Definition{Name: name, Title: d.Title, Description: d.Description}
	if d.InputSchema != nil {
		out.InputSchema = d.InputSchema.Raw
	}
	if d.OutputSchema != nil {
		out.OutputSchema = d.OutputSchema.Raw
	}
	if h := d.Hints; h != nil {
		out.Hints = &drift.Hints{Title: h.Title, ReadOnly: h.ReadOnlyHint, Destructive: h.DestructiveHint, Idempotent: h.IdempotentHint, OpenWorld: h.OpenWorldHint}
	}
	return out
}

// setNotOffered records that the last import did not accept the tool:
// the server stopped offering it (RemovedFromServer), or offered it in a
// form the import refused (reason is the skip reason). The last definition
// stays, so people can see what it was.
func setNotOffered(t *mcpv1alpha1.McpTool, reason string, now time.Time) {
	msg := "the server no longer offers this tool; it is kept because it is enabled, and is not served"
	if !t.Spec.Enabled {
		// Only a tool the import created is deleted when it goes away.
		msg = "the server does not offer this tool; it is kept because it was declared outside the import, and is not served"
	}
	if reason != mcpv1alpha1.ReasonRemovedFromServer {
		msg = "the server offers this tool, but the last import refused it (" + reason + "); it is not served"
	}
	setCondition(&t.Status.Conditions, t.Generation, mcpv1alpha1.ConditionImported, metav1.ConditionFalse, reason, msg, now)
}

// awaitingImport reports whether a tool is one an import created a moment
// ago and has not written the status of yet: only the importer declared it
// and nothing has been recorded of its definition. That import's status
// write is the tool's first, complete one; writing the view before it would
// only be an extra write. Should the import's write fail, the import fails
// and is retried, and the retry writes it.
func awaitingImport(t *mcpv1alpha1.McpTool) bool {
	return t.Status.DefinitionHash == "" && t.Labels[mcpv1alpha1.LabelServer] != "" &&
		meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionImported) == nil && !governance.DeclaredElsewhere(t)
}

// approvedRecord is the approved definition's text that a write replacing
// t's definition with the one hashed newHash keeps, or nil. The import is
// the only writer that replaces a definition, so it is the one place that
// can keep the text a person approved before it is gone.
func approvedRecord(t *mcpv1alpha1.McpTool, newHash string) *mcpv1alpha1.ToolDefinition {
	approved := t.Spec.ApprovedDefinitionHash
	switch {
	case approved == "" || approved == newHash:
		// Nothing is approved, or the new definition is the approved one:
		// there is no other text to review.
		return nil
	case t.Status.DefinitionHash == approved:
		// The approved definition is about to be replaced.
		return &mcpv1alpha1.ToolDefinition{
			Hash:         t.Status.DefinitionHash,
			Title:        t.Status.Title,
			Description:  t.Status.Description,
			InputSchema:  t.Status.InputSchema,
			OutputSchema: t.Status.OutputSchema,
			Hints:        t.Status.Hints,
		}
	case t.Status.ApprovedDefinition != nil && t.Status.ApprovedDefinition.Hash == approved:
		// Kept by an earlier import; a record of a definition that is no
		// longer the approved one is dropped.
		return t.Status.ApprovedDefinition
	}
	return nil
}
