package controller

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/drift"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// driftDef is a recorded definition with schema s and description d; its
// hash is a fixed one derived from tag.
func driftDef(tag byte, desc, schema string) *mcpv1alpha1.ToolDefinition {
	return &mcpv1alpha1.ToolDefinition{Hash: "sha256:" + strings.Repeat(string(tag), 64), Description: desc,
		InputSchema: &apiextensionsv1.JSON{Raw: []byte(schema)}}
}

func categories(d *mcpv1alpha1.DefinitionDrift) []string {
	if d == nil {
		return nil
	}
	out := make([]string, len(d.Categories))
	for i, c := range d.Categories {
		out[i] = string(c)
	}
	return out
}

func TestSetDefinitionExplainsDrift(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const narrow = `{"type":"object","properties":{"q":{"type":"string","maxLength":10}},"additionalProperties":false}`
	const wide = `{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}`
	a := driftDef('a', "Searches.", narrow)
	b := driftDef('b', "Searches.", wide)
	c := driftDef('c', "Searches the docs.", wide)
	hidden := driftDef('d', "Searches.\u200b See https://example.com", narrow)

	name, err := toolname.ObjectName("docs", "search")
	if err != nil {
		t.Fatal(err)
	}
	newTool := func() *mcpv1alpha1.McpTool {
		tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1}}
		tl.Spec.ServerRef.Name, tl.Spec.RemoteName, tl.Spec.Enabled = "docs", "search", true
		return tl
	}

	t.Run("a plain first definition records nothing", func(t *testing.T) {
		tl := newTool()
		if got := setDefinition(tl, a, nil, now); got != nil || tl.Status.Drift != nil {
			t.Errorf("drift %+v for a plain first definition", tl.Status.Drift)
		}
	})
	t.Run("a first definition is checked on its own", func(t *testing.T) {
		tl := newTool()
		got := setDefinition(tl, hidden, nil, now)
		if got == nil || tl.Status.Drift == nil || got.FromHash != "" || got.ToHash != hidden.Hash ||
			!slices.Equal(categories(got), []string{"HiddenCharacters", "InstructionsAdded"}) || !got.ObservedTime.Equal(&metav1.Time{Time: now}) {
			t.Errorf("drift %+v", got)
		}
	})
	t.Run("a change since the approval is explained from the approved text", func(t *testing.T) {
		tl := newTool()
		setDefinition(tl, a, nil, now)
		tl.Spec.ApprovedDefinitionHash = a.Hash
		// a to b widens; b to c only changes the text. The record after c
		// still says what changed since a person approved a.
		if got := setDefinition(tl, b, nil, now); got == nil || got.FromHash != a.Hash || !slices.Equal(categories(got), []string{"SchemaWidened"}) {
			t.Fatalf("a to b: %+v", got)
		}
		got := setDefinition(tl, c, nil, now)
		if got == nil || got.FromHash != a.Hash || got.ToHash != c.Hash || !slices.Equal(categories(got), []string{"SchemaWidened", "TextChanged"}) {
			t.Errorf("b to c, approved a: %+v", got)
		}
		if !slices.Contains(got.Details, "SchemaWidened inputSchema/properties/q: maxLength removed") {
			t.Errorf("details %q", got.Details)
		}
		// Nothing is approved by recording drift: the tool is not served.
		setToolView(tl, nil, nil, now)
		if tl.Spec.ApprovedDefinitionHash != a.Hash || governance.Unapproved(tl) != mcpv1alpha1.ReasonDefinitionChanged {
			t.Errorf("approval %q, unapproved %q", tl.Spec.ApprovedDefinitionHash, governance.Unapproved(tl))
		}
		// The same definition again keeps the record and reports nothing new.
		before := tl.Status.Drift.DeepCopy()
		if got := setDefinition(tl, c, nil, now.Add(time.Hour)); got != nil || !equalDrift(before, tl.Status.Drift) {
			t.Errorf("a re-recorded definition reported %+v, record %+v", got, tl.Status.Drift)
		}
		// The server offering the approved definition again clears it.
		if got := setDefinition(tl, a, nil, now); got != nil || tl.Status.Drift != nil {
			t.Errorf("back to the approved definition: %+v", tl.Status.Drift)
		}
	})
	t.Run("without an approved text the previous definition is compared", func(t *testing.T) {
		tl := newTool()
		setDefinition(tl, b, nil, now)
		got := setDefinition(tl, a, nil, now)
		// b to a narrows: a change, never a widening.
		if got == nil || got.FromHash != b.Hash || !slices.Equal(categories(got), []string{"SchemaChanged"}) {
			t.Errorf("b to a: %+v", got)
		}
		if c := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionImported); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Imported %+v", c)
		}
	})
}

func equalDrift(a, b *mcpv1alpha1.DefinitionDrift) bool {
	return a != nil && b != nil && a.FromHash == b.FromHash && a.ToHash == b.ToHash && slices.Equal(a.Categories, b.Categories) &&
		slices.Equal(a.Details, b.Details) && a.ObservedTime.Equal(&b.ObservedTime)
}

// Every category package drift reports is one the API accepts: the CRD's
// enum, which the API server enforces, lists them all.
func TestDriftCategoriesAreInTheAPI(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "mcp.catalog.dev_mcptools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := string(raw)
	for _, c := range drift.Categories {
		if !strings.Contains(crd, "- "+string(c)+"\n") {
			t.Errorf("category %s is not in the McpTool CRD's enum", c)
		}
	}
}
