package controller

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// hashBeforeOutputSchemas is the hash definitionHash gave preTypedTool
// before output schemas were kept, recorded from that code. Approvals
// name hashes: a tool whose server sends no output schema must keep its
// hash, or keeping output schemas would have re-gated every tool.
const hashBeforeOutputSchemas = "sha256:f05fe703bfc82aef7ee6bb3e3517059db2a550128cc4b330541532e752d64c6d"

func preTypedTool(t *testing.T) mcp.Tool {
	t.Helper()
	schema, err := mcp.NormalizeSchema(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"What to look for <b>&</b>"}},"required":["q"]}`))
	if err != nil {
		t.Fatal(err)
	}
	ro := true
	return mcp.Tool{Name: "search", Title: "Search", Description: "Finds things.", InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{Title: "Search it", ReadOnlyHint: &ro}}
}

func TestHashWithoutOutputSchemaIsUnchanged(t *testing.T) {
	tool := preTypedTool(t)
	if got := definitionHash(tool); got != hashBeforeOutputSchemas {
		t.Fatalf("a definition without an output schema hashes %s, was %s before output schemas were kept", got, hashBeforeOutputSchemas)
	}
	def, _ := definitionOf(tool)
	if def.OutputSchema != nil || def.Hash != hashBeforeOutputSchemas {
		t.Errorf("recorded %+v", def)
	}
}

// An output schema is part of what is approved: sending one changes the
// hash, reordering it does not, and the import records it and explains it.
func TestOutputSchemaIsApproved(t *testing.T) {
	tool := preTypedTool(t)
	canon := func(s string) json.RawMessage {
		out, ok := mcp.CanonicalJSON([]byte(s), 1<<20)
		if !ok {
			t.Fatalf("not JSON: %s", s)
		}
		return out
	}
	typed := tool
	typed.OutputSchema = canon(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	reordered := tool
	reordered.OutputSchema = canon(`{"required":["n"],"properties":{"n":{"type":"integer"}},"type":"object"}`)
	if h := definitionHash(typed); h == hashBeforeOutputSchemas || h != definitionHash(reordered) {
		t.Fatalf("hash with an output schema %s, reordered %s", h, definitionHash(reordered))
	}

	def, _ := definitionOf(typed)
	if def.OutputSchema == nil || string(def.OutputSchema.Raw) != string(typed.OutputSchema) {
		t.Fatalf("recorded output schema %v", def.OutputSchema)
	}
	tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Name: "x.search", Namespace: "ns", Generation: 1}}
	tl.Spec.RemoteName = "search"
	old, _ := definitionOf(tool)
	setDefinition(tl, old, nil, time.Now())
	tl.Spec.ApprovedDefinitionHash = old.Hash
	got := setDefinition(tl, def, nil, time.Now())
	if got == nil || !slices.Contains(got.Categories, mcpv1alpha1.DriftCategory("OutputSchemaChanged")) {
		t.Fatalf("adding an output schema was explained as %+v", got)
	}
	if tl.Status.OutputSchema == nil || tl.Status.ApprovedDefinition == nil || tl.Status.ApprovedDefinition.OutputSchema != nil {
		t.Errorf("status %+v", tl.Status)
	}

	// Loosening it is a widening of what reaches the agent unchecked.
	loose := typed
	loose.OutputSchema = canon(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	tl.Spec.ApprovedDefinitionHash = def.Hash
	ldef, _ := definitionOf(loose)
	got = setDefinition(tl, ldef, nil, time.Now())
	if got == nil || !slices.Equal(got.Categories, []mcpv1alpha1.DriftCategory{"OutputSchemaWidened"}) ||
		!slices.Contains(got.Details, "OutputSchemaWidened outputSchema/properties/n: no longer required") {
		t.Errorf("loosening the output schema was explained as %+v", got)
	}
}

// Control characters in an output schema are removed at import, as in the
// rest of the definition, and reported.
func TestOutputSchemaControlsRemoved(t *testing.T) {
	tool := preTypedTool(t)
	out, _ := mcp.CanonicalJSON([]byte(`{"type":"object","description":"counts\u0007 things"}`), 1<<20)
	tool.OutputSchema = out
	def, removed := definitionOf(tool)
	if string(def.OutputSchema.Raw) != `{"description":"counts things","type":"object"}` || !slices.Equal(removed, []string{"outputSchema/description"}) {
		t.Errorf("stored %s, removed %q", def.OutputSchema.Raw, removed)
	}
}
