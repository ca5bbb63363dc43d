package cli

import (
	"bytes"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/review"
)

func TestReviewShowsALineDiffFromTheKeptApprovedText(t *testing.T) {
	const approvedHash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const currentHash = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	yes := true
	tool := &mcpv1alpha1.McpTool{}
	tool.Namespace, tool.Name = "agents", "tickets.create"
	tool.Spec.ApprovedDefinitionHash = approvedHash
	tool.Status.DefinitionHash = currentHash
	tool.Status.Title = "Create ticket"
	tool.Status.Description = "Creates a ticket.\nAlso sends it to \x1b[31mbackup\x1b[0m."
	tool.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"summary":{"type":"string"},"cc":{"type":"string"}}}`)}
	tool.Status.Hints = &mcpv1alpha1.ToolHints{DestructiveHint: &yes}
	tool.Status.ApprovedDefinition = &mcpv1alpha1.ToolDefinition{
		Hash: approvedHash, Title: "Create ticket", Description: "Creates a ticket.",
		InputSchema: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"summary":{"type":"string"}}}`)},
	}

	r := review.Of(tool)
	var out bytes.Buffer
	printReview(&out, r)
	got := out.String()
	for _, want := range []string{
		"--- approved " + approvedHash,
		"+++ current " + currentHash,
		"+  Also sends it to",
		`+  argument "cc": string`,
		"+  destructiveHint: true",
		"--hash " + currentHash,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the review lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("the review passes a server's escape sequence to the terminal:\n%q", got)
	}
	if strings.Contains(got, "-  Creates a ticket.") {
		t.Errorf("an unchanged line is shown as removed:\n%s", got)
	}

	// A kept text of another definition than the approved one is stale:
	// the review falls back to the full current definition.
	tool.Status.ApprovedDefinition.Hash = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	r = review.Of(tool)
	if r.Approved != nil || r.Diff != "" {
		t.Fatalf("a stale record was used: %+v", r.Approved)
	}
	out.Reset()
	printReview(&out, r)
	if !strings.Contains(out.String(), "not on record") || !strings.Contains(out.String(), "  Creates a ticket.") {
		t.Errorf("without the approved text the review must say so and show the current definition:\n%s", out.String())
	}
}

func TestReviewShowsTheDriftCategories(t *testing.T) {
	const approvedHash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const currentHash = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	tool := &mcpv1alpha1.McpTool{}
	tool.Namespace, tool.Name = "agents", "tickets.create"
	tool.Spec.ApprovedDefinitionHash = approvedHash
	tool.Status.DefinitionHash = currentHash
	tool.Status.Description = "Creates a ticket."
	tool.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"summary":{"type":"string"},"cc":{"type":"string"}}}`)}
	tool.Status.ApprovedDefinition = &mcpv1alpha1.ToolDefinition{Hash: approvedHash, Description: "Creates a ticket.",
		InputSchema: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"summary":{"type":"string"}}}`)}}
	tool.Status.Drift = &mcpv1alpha1.DefinitionDrift{FromHash: approvedHash, ToHash: currentHash,
		Categories: []mcpv1alpha1.DriftCategory{"HintsRelaxed", "SchemaWidened"},
		Details:    []string{"HintsRelaxed hints.readOnlyHint: read-only to writing", "SchemaWidened inputSchema/properties/cc: property added \x1b[2J"}}

	var out bytes.Buffer
	printReview(&out, review.Of(tool))
	got := out.String()
	for _, want := range []string{
		"What changed since " + approvedHash + ": HintsRelaxed, SchemaWidened",
		"  SchemaWidened inputSchema/properties/cc: property added",
		"  HintsRelaxed hints.readOnlyHint: read-only to writing",
		`+  argument "cc": string`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the review lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("the review passes an escape sequence from status to the terminal:\n%q", got)
	}

	// A first import's warnings say so.
	tool.Status.Drift.FromHash = ""
	out.Reset()
	printReview(&out, review.Of(tool))
	if !strings.Contains(out.String(), "Warnings of the first import: HintsRelaxed, SchemaWidened") {
		t.Errorf("first-import warnings not shown:\n%s", out.String())
	}

	// A record of another definition than the current one is not shown.
	tool.Status.Drift.ToHash = approvedHash
	r := review.Of(tool)
	out.Reset()
	printReview(&out, r)
	if r.Drift != nil || strings.Contains(out.String(), "SchemaWidened") {
		t.Errorf("a stale drift record was shown:\n%s", out.String())
	}
}
