package controller

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/drift"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// Explained drift of prompts and resources (docs/adr/065-prompts-and-resources.md),
// with the McpTool's machinery (docs/adr/027-drift-explained.md): the
// server's text is stored without control characters, and a changed
// definition is compared with the one it replaces in the same categories.
// A prompt's arguments are compared as the input schema of a tool whose
// properties they are, so that an argument added, or no longer required,
// reads as SchemaWidened.

// promptWithoutControls is p with the control characters removed from its
// texts, and the places they were removed from.
func promptWithoutControls(p mcp.Prompt) (mcp.Prompt, []string) {
	var removed []string
	strip := func(where string, s *string) {
		if clean, ok := drift.StripControls(*s); ok {
			*s, removed = clean, append(removed, where)
		}
	}
	strip("title", &p.Title)
	strip("description", &p.Description)
	args := make([]mcp.PromptArgument, len(p.Arguments))
	copy(args, p.Arguments)
	for i := range args {
		at := "inputSchema/properties/" + pointerToken.Replace(args[i].Name)
		strip(at+"/title", &args[i].Title)
		strip(at+"/description", &args[i].Description)
	}
	p.Arguments = args
	return p, removed
}

// resourceWithoutControls is r with the control characters removed from
// its texts, and the places they were removed from.
func resourceWithoutControls(r mcp.Resource) (mcp.Resource, []string) {
	var removed []string
	for where, s := range map[string]*string{"name": &r.Name, "title": &r.Title, "description": &r.Description, "mimeType": &r.MimeType} {
		if clean, ok := drift.StripControls(*s); ok {
			*s, removed = clean, append(removed, where)
		}
	}
	return r, removed
}

// promptDriftDefinition is what drift compares of a prompt.
func promptDriftDefinition(name, title, description string, args []mcpv1alpha1.PromptArgument) drift.Definition {
	props := map[string]any{}
	required := []string{}
	for _, a := range args {
		prop := map[string]any{"type": "string"}
		if a.Title != "" {
			prop["title"] = a.Title
		}
		if a.Description != "" {
			prop["description"] = a.Description
		}
		props[a.Name] = prop
		if a.Required {
			required = append(required, a.Name)
		}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	return drift.Definition{Name: name, Title: title, Description: description, InputSchema: schema}
}

// resourceDriftDefinition is what drift compares of a resource.
func resourceDriftDefinition(title, description string) drift.Definition {
	return drift.Definition{Title: title, Description: description}
}

// explainDrift is the drift of a definition hashed to next replacing the
// recorded one hashed prev: nil when nothing is to be reported (the same
// definition, the approved one, or no finding), which clears what status
// holds except when the definition is the same.
func explainDrift(prev, next, approved string, before, after func() drift.Definition, now time.Time) (d *mcpv1alpha1.DefinitionDrift, keep bool) {
	var report drift.Report
	switch {
	case prev == next:
		return nil, true
	case next == approved:
		return nil, false
	case prev == "":
		report = drift.Inspect(after())
	default:
		report = drift.Compare(before(), after())
	}
	if len(report.Categories) == 0 {
		return nil, false
	}
	d = &mcpv1alpha1.DefinitionDrift{FromHash: prev, ToHash: next, Details: report.Details, ObservedTime: metav1.NewTime(now)}
	for _, c := range report.Categories {
		d.Categories = append(d.Categories, mcpv1alpha1.DriftCategory(c))
	}
	return d, false
}

// reportFeatureDrift tells people, in a Warning Event on the object, that
// its definition was recorded with findings; the Event names hashes and
// categories only, never the server's text.
func (r *McpServerReconciler) reportFeatureDrift(obj client.Object, kind string, d *mcpv1alpha1.DefinitionDrift) {
	if r.Recorder == nil || d == nil {
		return
	}
	cats := make([]string, len(d.Categories))
	for i, c := range d.Categories {
		cats[i] = string(c)
	}
	if d.FromHash == "" {
		r.Recorder.Eventf(obj, nil, eventWarning, EventDefinitionDrift, actionImport,
			"first imported definition of the %s %s: %s; review it before enabling", kind, d.ToHash, strings.Join(cats, ", "))
		return
	}
	r.Recorder.Eventf(obj, nil, eventWarning, EventDefinitionDrift, actionImport,
		"the %s's definition changed from %s to %s: %s; it is not served until approved again (%s details)",
		kind, d.FromHash, d.ToHash, strings.Join(cats, ", "), strconv.Itoa(len(d.Details)))
}
