package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/drift"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/tenancy"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// The import of prompts, resources and resource templates
// (docs/adr/065-prompts-and-resources.md): after a successful tools
// import, one more operation lists what the server offers of them, and
// each becomes one McpPrompt or McpResource, disabled until a person
// enables it and approves its definition, never owned by the server. A
// disabled object the server stopped offering is deleted; any other is
// kept with Imported=False, reason RemovedFromServer.

// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpprompts;mcpresources,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpprompts/status;mcpresources/status,verbs=get;update;patch

// EventFeatureImportFailed is the reason of the Warning Event an McpServer
// gets when its prompts and resources could not be imported.
const EventFeatureImportFailed = "FeatureImportFailed"

// importFeatures imports the prompts and resources of a server whose tools
// import succeeded. Its failure changes no object and does not fail the
// tools import: it is logged and told in an Event, and tried again at the
// next import.
func (r *McpServerReconciler) importFeatures(ctx context.Context, sc *serverScope, probe mcp.ProbeResult) {
	offers := false
	for _, c := range probe.Capabilities {
		offers = offers || c == "prompts" || c == "resources"
	}
	existingPrompts, existingResources, err := r.featuresOf(ctx, sc.server)
	if err == nil && (offers || len(existingPrompts)+len(existingResources) > 0) {
		f := &mcp.Features{}
		if offers {
			f, err = r.MCP.ListFeatures(ctx, sc.endpoint)
		}
		if err == nil {
			err = r.applyFeatures(ctx, sc.server, f, existingPrompts, existingResources, realOr(r.Clock).Now())
		}
	}
	if err == nil {
		return
	}
	logging.FromContext(ctx, logging.Importer).Error(err, "importing prompts and resources failed")
	if r.Recorder != nil {
		r.Recorder.Eventf(sc.server, nil, eventWarning, EventFeatureImportFailed, actionImport,
			"importing prompts and resources failed: %v", err)
	}
}

// featuresOf lists the McpPrompts and McpResources of a server.
func (r *McpServerReconciler) featuresOf(ctx context.Context, srv *mcpv1alpha1.McpServer) ([]mcpv1alpha1.McpPrompt, []mcpv1alpha1.McpResource, error) {
	sel := client.MatchingLabels{mcpv1alpha1.LabelServer: srv.Name}
	var prompts mcpv1alpha1.McpPromptList
	if err := r.List(ctx, &prompts, client.InNamespace(srv.Namespace), sel); err != nil {
		return nil, nil, fmt.Errorf("listing McpPrompts: %w", err)
	}
	var resources mcpv1alpha1.McpResourceList
	if err := r.List(ctx, &resources, client.InNamespace(srv.Namespace), sel); err != nil {
		return nil, nil, fmt.Errorf("listing McpResources: %w", err)
	}
	return prompts.Items, resources.Items, nil
}

// applyFeatures makes the server's McpPrompts and McpResources match f. It
// is planned first: when what the server would then store takes its
// namespace over the administrator's limit, nothing is written.
func (r *McpServerReconciler) applyFeatures(ctx context.Context, srv *mcpv1alpha1.McpServer, f *mcp.Features,
	prompts []mcpv1alpha1.McpPrompt, resources []mcpv1alpha1.McpResource, now time.Time) error {
	promptNames := make(map[string]mcp.Prompt, len(f.Prompts))
	for _, p := range f.Prompts {
		name, err := toolname.ObjectName(srv.Name, p.Name)
		if err != nil || !toolname.LocalNameFits(srv.Name, p.Name) {
			continue
		}
		promptNames[name] = p
	}
	resourceNames := make(map[string]mcp.Resource, len(f.Resources)+len(f.Templates))
	for _, list := range [][]mcp.Resource{f.Resources, f.Templates} {
		for _, res := range list {
			resourceNames[ResourceObjectName(srv.Name, res.URI, res.URITemplate)] = res
		}
	}
	// What stays of the objects no longer offered: the enabled ones (a
	// disabled one is deleted unless Git declares it, which the count
	// leaves out).
	stores := int64(len(promptNames) + len(resourceNames))
	for i := range prompts {
		if _, ok := promptNames[prompts[i].Name]; !ok && prompts[i].Spec.Enabled {
			stores++
		}
	}
	for i := range resources {
		if _, ok := resourceNames[resources[i].Name]; !ok && resources[i].Spec.Enabled {
			stores++
		}
	}
	if err := r.admitFeatures(ctx, srv, stores); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(promptNames)) {
		if err := r.applyPrompt(ctx, srv, name, promptNames[name], now); err != nil {
			return err
		}
	}
	for i := range prompts {
		p := &prompts[i]
		if _, ok := promptNames[p.Name]; ok {
			continue
		}
		if err := r.goneFeature(ctx, p, func() (bool, *[]metav1.Condition) { return p.Spec.Enabled, &p.Status.Conditions }, now); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(resourceNames)) {
		if err := r.applyResource(ctx, srv, name, resourceNames[name], now); err != nil {
			return err
		}
	}
	for i := range resources {
		res := &resources[i]
		if _, ok := resourceNames[res.Name]; ok {
			continue
		}
		if err := r.goneFeature(ctx, res, func() (bool, *[]metav1.Condition) { return res.Spec.Enabled, &res.Status.Conditions }, now); err != nil {
			return err
		}
	}
	return nil
}

// admitFeatures checks that the namespace's McpPrompts and McpResources
// stay within --max-prompts-and-resources-per-namespace once the server
// stores stores of them (docs/adr/024-tenant-fairness.md). Every such
// object in the namespace is counted, by the server its label names (an
// object outlives its server: it is not owned by it); imports this
// process admitted since count from memory. It returns a
// *tenancy.ExceededError when the import must change nothing.
func (r *McpServerReconciler) admitFeatures(ctx context.Context, srv *mcpv1alpha1.McpServer, stores int64) error {
	if r.storedFeatures == nil {
		return nil
	}
	recorded := map[string]tenancy.Usage{}
	count := func(labels map[string]string) {
		u := recorded[labels[mcpv1alpha1.LabelServer]]
		u.Tools++
		recorded[labels[mcpv1alpha1.LabelServer]] = u
	}
	var prompts mcpv1alpha1.McpPromptList
	if err := r.List(ctx, &prompts, client.InNamespace(srv.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the namespace's McpPrompts: %w", err)
	}
	for i := range prompts.Items {
		count(prompts.Items[i].Labels)
	}
	var resources mcpv1alpha1.McpResourceList
	if err := r.List(ctx, &resources, client.InNamespace(srv.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the namespace's McpResources: %w", err)
	}
	for i := range resources.Items {
		count(resources.Items[i].Labels)
	}
	err := r.storedFeatures.Admit(client.ObjectKeyFromObject(srv), tenancy.Usage{Tools: stores}, recorded,
		tenancy.StorageLimits{Tools: r.Storage.PromptsAndResources})
	var over *tenancy.ExceededError
	if errors.As(err, &over) {
		over.Limit = tenancy.LimitPromptsAndResources
	}
	return err
}

// goneFeature deletes a disabled object nobody but the importer declared,
// preconditioned on what was read, and marks any other not offered. The
// object is read live first: the cache keeps no managed fields of these
// kinds, and they say whether Git or a person declared it. state gives
// the object's spec.enabled and conditions as read.
func (r *McpServerReconciler) goneFeature(ctx context.Context, obj client.Object, state func() (bool, *[]metav1.Condition), now time.Time) error {
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	enabled, conds := state()
	declared := false
	for _, mf := range obj.GetManagedFields() {
		declared = declared || governance.DeclaresSpec(mf)
	}
	if !enabled && !declared && obj.GetDeletionTimestamp().IsZero() {
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		err := r.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("deleting %s: %w", obj.GetName(), err)
	}
	if c := meta.FindStatusCondition(*conds, mcpv1alpha1.ConditionImported); c != nil && c.Status == metav1.ConditionFalse && c.Reason == mcpv1alpha1.ReasonRemovedFromServer {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	setCondition(conds, obj.GetGeneration(), mcpv1alpha1.ConditionImported, metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer,
		"the server no longer offers it; it is not served", now)
	_, err := patchStatus(ctx, r.Client, before, obj, statusWrite{owner: governance.FieldManagerImporter})
	return err
}

// ResourceObjectName is the McpResource name of a resource (uri) or a
// template (uriTemplate) of server: <server>.r-<hex> or <server>.t-<hex>,
// the first 80 bits of the SHA-256 of the URI.
func ResourceObjectName(server, uri, uriTemplate string) string {
	kind, u := "r", uri
	if uriTemplate != "" {
		kind, u = "t", uriTemplate
	}
	sum := sha256.Sum256([]byte(u))
	return server + "." + kind + "-" + hex.EncodeToString(sum[:10])
}

func (r *McpServerReconciler) applyPrompt(ctx context.Context, srv *mcpv1alpha1.McpServer, name string, p mcp.Prompt, now time.Time) error {
	ac := mcpac.McpPrompt(name, srv.Namespace).WithLabels(toolLabels(srv)).
		WithSpec(mcpac.McpPromptSpec().WithServerRef(mcpac.LocalObjectReference().WithName(srv.Name)).WithRemoteName(p.Name))
	if err := r.Apply(ctx, ac, client.FieldOwner(governance.FieldManagerImporter)); err != nil {
		return fmt.Errorf("applying McpPrompt %s: %w", name, err)
	}
	live := &mcpv1alpha1.McpPrompt{}
	if err := fromApplied(ac, live); err != nil {
		return err
	}
	after := live.DeepCopy()
	d := setPromptDefinition(after, srv.Name, p, now)
	written, err := patchStatus(ctx, r.Client, live, after, statusWrite{owner: governance.FieldManagerImporter})
	if written {
		r.reportFeatureDrift(after, "prompt", d)
	}
	return err
}

// setPromptDefinition records a prompt's definition as offered, without
// control characters, and explains how it drifted; it returns the new
// explanation, if any.
func setPromptDefinition(t *mcpv1alpha1.McpPrompt, server string, p mcp.Prompt, now time.Time) *mcpv1alpha1.DefinitionDrift {
	p, removed := promptWithoutControls(p)
	s := &t.Status
	args := make([]mcpv1alpha1.PromptArgument, 0, len(p.Arguments))
	for _, a := range p.Arguments {
		args = append(args, mcpv1alpha1.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
	}
	if len(args) == 0 {
		args = nil
	}
	hash := PromptHash(p)
	d, keep := explainDrift(s.DefinitionHash, hash, t.Spec.ApprovedDefinitionHash,
		func() drift.Definition { return promptDriftDefinition(p.Name, s.Title, s.Description, s.Arguments) },
		func() drift.Definition {
			def := promptDriftDefinition(p.Name, p.Title, p.Description, args)
			def.Removed = removed
			return def
		}, now)
	if !keep {
		s.Drift = d
	}
	s.LocalName = toolname.LocalName(server, p.Name)
	s.Title, s.Description, s.Arguments, s.DefinitionHash = p.Title, p.Description, args, hash
	setCondition(&s.Conditions, t.Generation, mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "offered by the server", now)
	return d
}

func (r *McpServerReconciler) applyResource(ctx context.Context, srv *mcpv1alpha1.McpServer, name string, res mcp.Resource, now time.Time) error {
	spec := mcpac.McpResourceSpec().WithServerRef(mcpac.LocalObjectReference().WithName(srv.Name))
	if res.URITemplate != "" {
		spec.WithURITemplate(res.URITemplate)
	} else {
		spec.WithURI(res.URI)
	}
	ac := mcpac.McpResource(name, srv.Namespace).WithLabels(toolLabels(srv)).WithSpec(spec)
	if err := r.Apply(ctx, ac, client.FieldOwner(governance.FieldManagerImporter)); err != nil {
		return fmt.Errorf("applying McpResource %s: %w", name, err)
	}
	live := &mcpv1alpha1.McpResource{}
	if err := fromApplied(ac, live); err != nil {
		return err
	}
	after := live.DeepCopy()
	d := setResourceDefinition(after, res, now)
	written, err := patchStatus(ctx, r.Client, live, after, statusWrite{owner: governance.FieldManagerImporter})
	if written {
		r.reportFeatureDrift(after, "resource", d)
	}
	return err
}

// setResourceDefinition records a resource's definition as offered,
// without control characters, and explains how it drifted; it returns the
// new explanation, if any.
func setResourceDefinition(t *mcpv1alpha1.McpResource, res mcp.Resource, now time.Time) *mcpv1alpha1.DefinitionDrift {
	res, removed := resourceWithoutControls(res)
	s := &t.Status
	hash := ResourceHash(res)
	d, keep := explainDrift(s.DefinitionHash, hash, t.Spec.ApprovedDefinitionHash,
		func() drift.Definition { return resourceDriftDefinition(s.Title, s.Description) },
		func() drift.Definition {
			def := resourceDriftDefinition(res.Title, res.Description)
			def.Removed = removed
			return def
		}, now)
	if !keep {
		s.Drift = d
	}
	s.Name, s.Title, s.Description, s.MimeType = res.Name, res.Title, res.Description, res.MimeType
	s.App, s.ContentHash, s.DefinitionHash = res.App(), res.ContentHash, hash
	setCondition(&s.Conditions, t.Generation, mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "offered by the server", now)
	return d
}

// fromApplied is the object an apply answered with.
func fromApplied(ac any, into client.Object) error {
	b, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("reading the applied object: %w", err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("reading the applied object: %w", err)
	}
	return nil
}

// PromptHash fingerprints what a person approves of a prompt: its name,
// title, description and arguments in the server's order, as canonical
// JSON.
func PromptHash(p mcp.Prompt) string {
	args := make([]map[string]any, 0, len(p.Arguments))
	for _, a := range p.Arguments {
		args = append(args, map[string]any{"name": a.Name, "title": a.Title, "description": a.Description, "required": a.Required})
	}
	return hashDoc(map[string]any{"kind": "prompt", "name": p.Name, "title": p.Title, "description": p.Description, "arguments": args})
}

// ResourceHash fingerprints what a person approves of a resource or
// template: its URI or template, name, title, description and MIME type,
// and a ui:// resource's content hash (empty when it was not read, which
// no approval can then cover: the gateway refuses content without one).
func ResourceHash(r mcp.Resource) string {
	doc := map[string]any{"kind": "resource", "uri": r.URI, "name": r.Name, "title": r.Title, "description": r.Description, "mimeType": r.MimeType}
	if r.URITemplate != "" {
		doc["kind"], doc["uriTemplate"] = "resourceTemplate", r.URITemplate
		delete(doc, "uri")
	}
	if r.App() {
		doc["contentHash"] = r.ContentHash
	}
	return hashDoc(doc)
}

func hashDoc(doc map[string]any) string {
	b, err := json.Marshal(doc)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
