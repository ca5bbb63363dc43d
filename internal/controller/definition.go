package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// definitionHash fingerprints what a human approves when enabling a tool:
// its name, title, description, normalised input schema and hints. The JSON
// is canonical (object keys sorted), so the hash does not change when a
// server merely reorders keys.
func definitionHash(t mcp.Tool) string {
	var schema any
	if len(t.InputSchema) > 0 {
		// The schema was normalised by the client and is valid JSON.
		_ = json.Unmarshal(t.InputSchema, &schema)
	}
	doc := map[string]any{
		"name":        t.Name,
		"title":       t.Title,
		"description": t.Description,
		"inputSchema": schema,
		"hints":       hintsOf(t.Annotations),
	}
	b, err := json.Marshal(doc)
	if err != nil {
		// Only values decoded from JSON are in doc, so this cannot happen;
		// an empty hash would never equal an approved one.
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func hintsOf(a *mcp.ToolAnnotations) *mcpv1alpha1.ToolHints {
	if a == nil {
		return nil
	}
	h := &mcpv1alpha1.ToolHints{
		Title:           clip(a.Title, 256),
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: a.DestructiveHint,
		IdempotentHint:  a.IdempotentHint,
		OpenWorldHint:   a.OpenWorldHint,
	}
	if *h == (mcpv1alpha1.ToolHints{}) {
		return nil
	}
	return h
}
