// Package review is what a person sees and does to govern the catalog
// through the API server: the review of a tool's definition (the current
// text beside the approved one, and a line diff), approving exactly a
// reviewed definition, enabling a tool, and deciding a call that waits for
// approval. kubectl mcp's commands and its console both call it, with the
// user's own credentials, so RBAC and the approval admission policy apply
// to each the same way; neither restates a rule. Strings from servers are
// returned with the characters a person would not see written as visible
// escapes (Printable), never deleted.
package review

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// ApprovedBySpec is Review.ApprovedBy when spec.approvedDefinitionHash
// holds an approval; ApprovedByNone when nothing is approved.
const (
	ApprovedBySpec = "spec.approvedDefinitionHash"
	ApprovedByNone = "none"
)

// Review is what a person needs to decide on a definition.
type Review struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Server    string `json:"server"`
	// RemoteName is the tool's name on the server.
	RemoteName string `json:"remoteName"`
	// CurrentHash is the definition the server offers now; it is what an
	// approval names.
	CurrentHash string `json:"currentHash"`
	// ApprovedHash is the approved definition, and ApprovedBy says where
	// that comes from: spec.approvedDefinitionHash, or none.
	ApprovedHash string `json:"approvedHash,omitempty"`
	ApprovedBy   string `json:"approvedBy"`
	// Changed says the current definition is not the approved one
	// (governance.Unapproved): nothing is approved, or another is.
	Changed bool `json:"changed"`
	// Title, Description and InputSchema are the current definition as the
	// server sent it (normalised); hidden characters are escaped when it
	// is shown (Lines).
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the current definition's output schema, which the
	// gateway checks structured results against once it is approved.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Approved is the text of the approved definition when the cluster
	// kept it (status.approvedDefinition), and Diff the line difference
	// from it to the current definition.
	Approved *mcpv1alpha1.ToolDefinition `json:"approved,omitempty"`
	Diff     string                      `json:"diff,omitempty"`
	// Drift is how the current definition drifted (status.drift): the
	// categories a reviewer acts on and where each finding is. It is set
	// only while it describes the current definition.
	Drift *mcpv1alpha1.DefinitionDrift `json:"drift,omitempty"`
	// ReviewedText is what agents read instead of the server's text
	// (spec.reviewedText). It is not part of the definition an approval
	// names: the approval is of what the server offers.
	ReviewedText *mcpv1alpha1.ReviewedText `json:"reviewedText,omitempty"`
}

// Of is the review of t as read.
func Of(t *mcpv1alpha1.McpTool) Review {
	r := Review{Namespace: t.Namespace, Name: t.Name, Server: t.Spec.ServerRef.Name, RemoteName: t.Spec.RemoteName,
		CurrentHash: t.Status.DefinitionHash, Title: t.Status.Title, Description: t.Status.Description, ApprovedBy: ApprovedByNone}
	// Only spec.approvedDefinitionHash approves: enabling a tool does not.
	if t.Spec.ApprovedDefinitionHash != "" {
		r.ApprovedHash, r.ApprovedBy = t.Spec.ApprovedDefinitionHash, ApprovedBySpec
	}
	r.Changed = governance.Unapproved(t) != ""
	r.ReviewedText = t.Spec.ReviewedText
	if d := t.Status.Drift; d != nil && d.ToHash == r.CurrentHash && r.CurrentHash != "" {
		r.Drift = d
	}
	if t.Status.InputSchema != nil && len(t.Status.InputSchema.Raw) > 0 {
		r.InputSchema = json.RawMessage(t.Status.InputSchema.Raw)
	}
	if t.Status.OutputSchema != nil && len(t.Status.OutputSchema.Raw) > 0 {
		r.OutputSchema = json.RawMessage(t.Status.OutputSchema.Raw)
	}
	// A kept text counts only while it is the one approved now.
	if rec := t.Status.ApprovedDefinition; r.Changed && r.CurrentHash != "" && rec != nil && rec.Hash == r.ApprovedHash {
		r.Approved = rec
		r.Diff = Diff(rec, Current(t))
	}
	return r
}

// Current is t's current definition as the importer stored it.
func Current(t *mcpv1alpha1.McpTool) *mcpv1alpha1.ToolDefinition {
	return &mcpv1alpha1.ToolDefinition{Hash: t.Status.DefinitionHash, Title: t.Status.Title,
		Description: t.Status.Description, InputSchema: t.Status.InputSchema, OutputSchema: t.Status.OutputSchema, Hints: t.Status.Hints}
}

// Lines renders a definition as the lines a person reads and a diff
// compares, with the characters a person would not see escaped
// (Printable). Descriptions are shown as the text the model reads, not as
// JSON; the input schema is shown as its arguments (SchemaLines).
func Lines(d *mcpv1alpha1.ToolDefinition) []string {
	lines := []string{"title: " + OneLine(d.Title, 256), "description:"}
	for _, l := range strings.Split(Printable(d.Description, true), "\n") {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, "input schema (normalised; argument names and enum values are the server's words, served as they are):")
	var raw []byte
	if d.InputSchema != nil {
		raw = d.InputSchema.Raw
	}
	for _, l := range SchemaLines(raw) {
		lines = append(lines, "  "+l)
	}
	// A definition without an output schema reads as it always did.
	if d.OutputSchema != nil && len(d.OutputSchema.Raw) > 0 {
		lines = append(lines, "output schema (the gateway checks structured results against it; names are the server's words):")
		for _, l := range SchemaLines(d.OutputSchema.Raw) {
			lines = append(lines, "  "+l)
		}
	}
	if h := d.Hints; h != nil {
		lines = append(lines, "hints (untrusted):")
		if h.Title != "" {
			lines = append(lines, "  title: "+OneLine(h.Title, 256))
		}
		for _, b := range []struct {
			name string
			v    *bool
		}{{"readOnlyHint", h.ReadOnlyHint}, {"destructiveHint", h.DestructiveHint}, {"idempotentHint", h.IdempotentHint}, {"openWorldHint", h.OpenWorldHint}} {
			if b.v != nil {
				lines = append(lines, fmt.Sprintf("  %s: %t", b.name, *b.v))
			}
		}
	}
	return lines
}

// Diff is a unified line diff from the approved definition to the current
// one.
func Diff(approved, current *mcpv1alpha1.ToolDefinition) string {
	withEOL := func(ls []string) []string {
		for i := range ls {
			ls[i] += "\n"
		}
		return ls
	}
	out, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: withEOL(Lines(approved)), B: withEOL(Lines(current)),
		FromFile: "approved " + approved.Hash, ToFile: "current " + current.Hash, Context: 3,
	})
	if err != nil {
		// Writing to a strings.Builder does not fail.
		return ""
	}
	return out
}
