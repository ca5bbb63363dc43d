package review

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// The kinds of a server's prompts and resources
// (docs/adr/065-prompts-and-resources.md), enabled and approved as its
// tools are: only spec.enabled and spec.approvedDefinitionHash are
// written, under FieldManager, an approval only of the definition the
// person read.
const (
	KindPrompt   = "McpPrompt"
	KindResource = "McpResource"
)

// Feature is an McpPrompt or an McpResource as read, with what a person
// reviews of it.
type Feature struct {
	Kind string
	obj  client.Object
	// Hash is its current definition hash; Approved the one approved.
	Hash, Approved string
	// Lines is its definition as a reviewer reads it, printable.
	Lines []string
	// Drift is how its current definition differs from the one before,
	// as the import explained it.
	Drift *mcpv1alpha1.DefinitionDrift
}

// GetFeature reads the McpPrompt or McpResource (kind) ns/name.
func GetFeature(ctx context.Context, c client.Reader, kind, ns, name string) (*Feature, error) {
	key := types.NamespacedName{Namespace: ns, Name: name}
	var obj client.Object
	switch kind {
	case KindPrompt:
		obj = &mcpv1alpha1.McpPrompt{}
	case KindResource:
		obj = &mcpv1alpha1.McpResource{}
	default:
		return nil, fmt.Errorf("%s is not a kind of prompt or resource", kind)
	}
	err := c.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &NotFoundError{Kind: kind, Namespace: ns, Name: name}
	case err != nil:
		return nil, &APIError{Doing: "reading the " + kind, Err: err}
	}
	f, _ := FeatureOf(obj)
	return f, nil
}

// FeatureOf is the McpPrompt or McpResource obj, as read, with what a
// person reviews of it; ok is false for an object of another kind.
func FeatureOf(obj client.Object) (f *Feature, ok bool) {
	switch o := obj.(type) {
	case *mcpv1alpha1.McpPrompt:
		return &Feature{Kind: KindPrompt, obj: o, Hash: o.Status.DefinitionHash, Approved: o.Spec.ApprovedDefinitionHash, Lines: promptLines(o), Drift: o.Status.Drift}, true
	case *mcpv1alpha1.McpResource:
		return &Feature{Kind: KindResource, obj: o, Hash: o.Status.DefinitionHash, Approved: o.Spec.ApprovedDefinitionHash, Lines: resourceLines(o), Drift: o.Status.Drift}, true
	}
	return nil, false
}

func promptLines(p *mcpv1alpha1.McpPrompt) []string {
	lines := []string{
		"prompt:      " + Printable(p.Spec.RemoteName, false),
		"title:       " + Printable(p.Status.Title, false),
		"description: " + Printable(p.Status.Description, true),
	}
	for _, a := range p.Status.Arguments {
		req := ""
		if a.Required {
			req = " (required)"
		}
		lines = append(lines, "argument:    "+Printable(a.Name, false)+req+": "+Printable(a.Description, true))
	}
	return lines
}

func resourceLines(r *mcpv1alpha1.McpResource) []string {
	uri := "uri:         " + Printable(r.Spec.URI, false)
	if r.Spec.URITemplate != "" {
		uri = "template:    " + Printable(r.Spec.URITemplate, false)
	}
	lines := []string{
		uri,
		"name:        " + Printable(r.Status.Name, false),
		"title:       " + Printable(r.Status.Title, false),
		"description: " + Printable(r.Status.Description, true),
		"mime type:   " + Printable(r.Status.MimeType, false),
	}
	if r.Status.App {
		lines = append(lines, "app:         its content is code a host runs, approved by its hash "+r.Status.ContentHash)
	}
	return lines
}

// ApproveFeature sets spec.approvedDefinitionHash of the McpPrompt or
// McpResource to hash if, and only if, hash is its current definition. The
// write carries the object's resourceVersion as read: one changed since is
// read again, a few times at the most. force takes the field from another
// manager.
func ApproveFeature(ctx context.Context, c client.Client, kind, ns, name, hash string, force bool) error {
	for range 5 {
		f, err := GetFeature(ctx, c, kind, ns, name)
		if err != nil {
			return err
		}
		switch {
		case f.Hash == "":
			return ErrNotImported
		case f.Hash != hash:
			return &DefinitionChangedError{Tool: name, Current: f.Hash, Reviewed: hash}
		}
		err = f.apply(ctx, c, true, func(p *mcpac.McpPromptSpecApplyConfiguration, r *mcpac.McpResourceSpecApplyConfiguration) {
			if p != nil {
				p.WithApprovedDefinitionHash(hash)
			} else {
				r.WithApprovedDefinitionHash(hash)
			}
		}, force)
		if !errors.Is(err, ErrStale) {
			return err
		}
	}
	return ErrStale
}

// SetFeatureEnabled sets spec.enabled of an existing McpPrompt or
// McpResource. Without force, a field another manager (Git) owns is not
// taken: FieldOwnedError says so.
func SetFeatureEnabled(ctx context.Context, c client.Client, kind, ns, name string, enabled, force bool) error {
	f, err := GetFeature(ctx, c, kind, ns, name)
	if err != nil {
		return err
	}
	return f.apply(ctx, c, false, func(p *mcpac.McpPromptSpecApplyConfiguration, r *mcpac.McpResourceSpecApplyConfiguration) {
		if p != nil {
			p.WithEnabled(enabled)
		} else {
			r.WithEnabled(enabled)
		}
	}, force)
}

// apply applies what FieldManager owns of the object's spec, with its
// identity, changed by change; guarded carries the resourceVersion read,
// so that an object changed since fails with ErrStale.
func (f *Feature) apply(ctx context.Context, c client.Client, guarded bool,
	change func(*mcpac.McpPromptSpecApplyConfiguration, *mcpac.McpResourceSpecApplyConfiguration), force bool) error {
	var obj runtime.ApplyConfiguration
	switch o := f.obj.(type) {
	case *mcpv1alpha1.McpPrompt:
		owned, err := mcpac.ExtractMcpPrompt(o, FieldManager)
		if err != nil {
			return &APIError{Doing: "reading the fields " + FieldManager + " owns on McpPrompt " + o.Name, Err: err}
		}
		spec := owned.Spec
		if spec == nil {
			spec = mcpac.McpPromptSpec()
		}
		spec.WithServerRef(mcpac.LocalObjectReference().WithName(o.Spec.ServerRef.Name)).WithRemoteName(o.Spec.RemoteName)
		change(spec, nil)
		ac := mcpac.McpPrompt(o.Name, o.Namespace).WithSpec(spec)
		if guarded {
			ac.WithResourceVersion(o.ResourceVersion)
		}
		obj = ac
	case *mcpv1alpha1.McpResource:
		owned, err := mcpac.ExtractMcpResource(o, FieldManager)
		if err != nil {
			return &APIError{Doing: "reading the fields " + FieldManager + " owns on McpResource " + o.Name, Err: err}
		}
		spec := owned.Spec
		if spec == nil {
			spec = mcpac.McpResourceSpec()
		}
		spec.WithServerRef(mcpac.LocalObjectReference().WithName(o.Spec.ServerRef.Name))
		if o.Spec.URI != "" {
			spec.WithURI(o.Spec.URI)
		} else {
			spec.WithURITemplate(o.Spec.URITemplate)
		}
		change(nil, spec)
		ac := mcpac.McpResource(o.Name, o.Namespace).WithSpec(spec)
		if guarded {
			ac.WithResourceVersion(o.ResourceVersion)
		}
		obj = ac
	}
	return guardedApplyErr(c.Apply(ctx, obj, applyOptions(force)...), f.Kind)
}

// FeatureKindOf reads a TYPE/NAME argument naming a prompt or a resource:
// mcpprompt/NAME (or mcpp/NAME) and mcpresource/NAME (or mcpr/NAME), as
// kubectl names objects. ok is false for anything else.
func FeatureKindOf(arg string) (kind, name string, ok bool) {
	typ, name, found := strings.Cut(arg, "/")
	if !found || name == "" {
		return "", "", false
	}
	switch strings.ToLower(typ) {
	case "mcpprompt", "mcpprompts", "mcpp":
		return KindPrompt, name, true
	case "mcpresource", "mcpresources", "mcpr":
		return KindResource, name, true
	}
	return "", "", false
}
