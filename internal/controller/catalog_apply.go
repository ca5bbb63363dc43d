package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/tenancy"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// Skip reasons the importer adds to those of the client.
const (
	skipNameTooLong  = "NameTooLong"
	skipNameConflict = "NameConflict"
	maxSkippedListed = 50
)

// appliedCatalog is what applying a catalog leaves for the server's status.
type appliedCatalog struct {
	counts  *mcpv1alpha1.ToolCounts
	skipped []mcpv1alpha1.SkippedTool
}

// catalogPlan is every McpTool write one import makes, decided before any
// is made.
type catalogPlan struct {
	// apply are the tools whose definition is new or changed.
	apply []toolWrite
	// notOffered are existing tools the import did not accept and that are
	// kept, with the reason to record.
	notOffered map[*mcpv1alpha1.McpTool]string
	// collect are disabled tools nobody declared that the server stopped
	// offering: they are deleted.
	collect []*mcpv1alpha1.McpTool
	result  appliedCatalog
	// stores is what the server's tools store once the plan is carried
	// out: the tools accepted and those kept, and the accepted definitions.
	stores tenancy.Usage
}

// toolWrite is one tool an import declares and records the definition of.
type toolWrite struct {
	name       string
	remoteName string
	def        *mcpv1alpha1.ToolDefinition
	// removed are the places the import removed control characters from.
	removed []string
}

// applyCatalog makes the McpTools match an imported catalog: new and changed
// tools are written, disabled tools the server no longer offers are
// deleted, and the others it no longer offers are kept with Imported=False.
// Unchanged tools are not written at all.
func (r *McpServerReconciler) applyCatalog(ctx context.Context, srv *mcpv1alpha1.McpServer, cat *mcp.Catalog) (*appliedCatalog, error) {
	existing, err := toolsOf(ctx, r.Client, srv)
	if err != nil {
		return nil, err
	}
	plan := planCatalog(srv, cat, existing)
	if err := r.admitStorage(ctx, srv, plan.stores); err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.ApplyConcurrency)
	for _, t := range plan.collect {
		g.Go(func() error { return deleteDisabled(gctx, r.Client, t) })
	}
	for _, w := range plan.apply {
		g.Go(func() error { return r.applyTool(gctx, srv, w) })
	}
	for t, reason := range plan.notOffered {
		g.Go(func() error { return r.tools.writeNotOffered(gctx, t, srv, reason) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &plan.result, nil
}

// planCatalog decides every write an import of cat makes, from the tools
// the cache holds (existing, which it only reads).
func planCatalog(srv *mcpv1alpha1.McpServer, cat *mcp.Catalog, existing []mcpv1alpha1.McpTool) catalogPlan {
	byName := make(map[string]*mcpv1alpha1.McpTool, len(existing))
	for i := range existing {
		byName[existing[i].Name] = &existing[i]
	}
	p := catalogPlan{notOffered: map[*mcpv1alpha1.McpTool]string{}}
	var skipped []mcpv1alpha1.SkippedTool
	skip := func(name, reason string) {
		skipped = append(skipped, mcpv1alpha1.SkippedTool{Name: printable(name, 160), Reason: reason})
	}
	// offeredButSkipped maps object names of skipped tools whose remote name
	// is legal, so an enabled tool that turned invalid says why.
	offeredButSkipped := map[string]string{}
	for _, s := range cat.Skipped {
		skip(s.Name, s.Reason)
		if n, err := toolname.ObjectName(srv.Name, s.Name); err == nil {
			offeredButSkipped[n] = s.Reason
		}
	}

	accepted := make(map[string]bool, len(cat.Tools))
	var definitionBytes int64
	for _, t := range cat.Tools {
		name, err := toolname.ObjectName(srv.Name, t.Name)
		switch {
		case err != nil:
			skip(t.Name, mcp.SkipInvalidName)
			continue
		case !toolname.LocalNameFits(srv.Name, t.Name):
			skip(t.Name, skipNameTooLong)
			continue
		case byName[name] != nil && byName[name].Spec.RemoteName != t.Name:
			skip(t.Name, skipNameConflict)
			continue
		}
		accepted[name] = true
		definitionBytes += mcp.DefinitionSize(t)
		def, removed := definitionOf(t)
		if ex := byName[name]; ex == nil || !importedUpToDate(ex, srv, def.Hash) || ex.Status.TaskSupport != def.TaskSupport {
			p.apply = append(p.apply, toolWrite{name: name, remoteName: t.Name, def: def, removed: removed})
		}
	}

	removed, enabled, kept := int32(0), int32(0), int64(0)
	for i := range existing {
		ex := &existing[i]
		if ex.Spec.Enabled {
			enabled++
		}
		if accepted[ex.Name] {
			continue
		}
		if governance.Collectable(ex) {
			p.collect = append(p.collect, ex)
			continue
		}
		kept++
		reason := mcpv1alpha1.ReasonRemovedFromServer
		if why, ok := offeredButSkipped[ex.Name]; ok {
			reason = why
		}
		if ex.Spec.Enabled && reason == mcpv1alpha1.ReasonRemovedFromServer {
			removed++
		}
		if !notOfferedAs(ex, reason) {
			p.notOffered[ex] = reason
		}
	}
	p.result.counts = &mcpv1alpha1.ToolCounts{
		Offered:  int32(len(cat.Tools) + len(cat.Skipped)),
		Imported: int32(len(accepted)),
		Skipped:  int32(len(skipped)),
		Enabled:  enabled,
		Removed:  removed,

		DefinitionBytes: definitionBytes,
	}
	p.stores = tenancy.Usage{Tools: int64(len(accepted)) + kept, DefinitionBytes: definitionBytes}
	if len(skipped) > maxSkippedListed {
		skipped = skipped[:maxSkippedListed]
	}
	p.result.skipped = skipped
	return p
}

// admitStorage checks that the namespace's tools stay within the storage
// limits once the server stores stores (docs/adr/024-tenant-fairness.md).
// What the namespace's other servers store is read from their status in
// the cache, and from memory for imports this process admitted since. It
// returns a *tenancy.ExceededError when the import must change nothing.
func (r *McpServerReconciler) admitStorage(ctx context.Context, srv *mcpv1alpha1.McpServer, stores tenancy.Usage) error {
	if r.stored == nil {
		return nil
	}
	var servers mcpv1alpha1.McpServerList
	if err := r.List(ctx, &servers, client.InNamespace(srv.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the namespace's McpServers: %w", err)
	}
	recorded := make(map[string]tenancy.Usage, len(servers.Items))
	for i := range servers.Items {
		if t := servers.Items[i].Status.Tools; t != nil {
			recorded[servers.Items[i].Name] = tenancy.Usage{Tools: int64(t.Imported) + int64(t.Removed), DefinitionBytes: t.DefinitionBytes}
		}
	}
	return r.stored.Admit(client.ObjectKeyFromObject(srv), stores, recorded, r.Storage)
}

// notOfferedAs reports whether the tool already records that the import did
// not accept it, for this reason.
func notOfferedAs(t *mcpv1alpha1.McpTool, reason string) bool {
	c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionImported)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
}

// importedUpToDate reports whether a tool already records the definition
// hashed hash as offered, and the labels the import gives it.
func importedUpToDate(t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, hash string) bool {
	if t.Labels[mcpv1alpha1.LabelServer] != srv.Name || t.Labels[mcpv1alpha1.LabelShardKey] != srv.Labels[mcpv1alpha1.LabelShardKey] ||
		t.Status.DefinitionHash != hash {
		return false
	}
	return meta.IsStatusConditionTrue(t.Status.Conditions, mcpv1alpha1.ConditionImported)
}

// definitionOf is what status records of a tool the server offers: the
// definition as the client normalised it, without control characters
// (withoutControls), texts clipped to what status holds, and its hash; and
// the places control characters were removed from.
func definitionOf(t mcp.Tool) (*mcpv1alpha1.ToolDefinition, []string) {
	t, removed := withoutControls(t)
	d := &mcpv1alpha1.ToolDefinition{
		Hash:        definitionHash(t),
		Title:       clip(t.Title, 256),
		Description: clip(t.Description, 8192),
		Hints:       hintsOf(t.Annotations),
		// Kept beside the definition, not hashed (definitionHash).
		TaskSupport: t.TaskSupport,
	}
	if len(t.InputSchema) > 0 {
		d.InputSchema = &apiextensionsv1.JSON{Raw: t.InputSchema}
	}
	if len(t.OutputSchema) > 0 {
		d.OutputSchema = &apiextensionsv1.JSON{Raw: t.OutputSchema}
	}
	return d, removed
}

// applyTool declares a tool's identity (server-side apply, never forced:
// the importer must not take a field from Git; a conflict means another
// manager declared different values, which is an error) and records the
// definition the server offers. No owner reference ties the tool to its
// server: the garbage collector would then delete enabled and Git-declared
// tools, and the approvals on them, with every delete or replacement of the
// server (docs/adr/013-tool-lifetime.md).
//
// The definition is recorded on the tool as the apply answered with it:
// live and complete, so whether the approved text must be kept is decided on
// what the API server holds, and an approval landing after it makes the
// guarded status write fail and be decided again.
func (r *McpServerReconciler) applyTool(ctx context.Context, srv *mcpv1alpha1.McpServer, w toolWrite) error {
	labels := toolLabels(srv)
	obj := mcpac.McpTool(w.name, srv.Namespace).
		WithLabels(labels).
		WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName(srv.Name)).
			WithRemoteName(w.remoteName))
	if err := r.Apply(ctx, obj, client.FieldOwner(governance.FieldManagerImporter)); err != nil {
		return fmt.Errorf("applying McpTool %s: %w", w.name, err)
	}
	live, err := appliedTool(obj)
	if err != nil {
		return fmt.Errorf("reading the applied McpTool %s: %w", w.name, err)
	}
	written, drifted, err := r.tools.writeDefinition(ctx, live, srv, w.def, w.removed)
	if err != nil || drifted == nil {
		return err
	}
	r.reportDrift(written, drifted)
	return nil
}

// reportDrift tells people that a tool's definition was recorded with
// findings (status.drift): a Warning Event on the tool, and the drift
// metric counted by category. The Event names hashes and categories only,
// never the server's text.
func (r *McpServerReconciler) reportDrift(t *mcpv1alpha1.McpTool, d *mcpv1alpha1.DefinitionDrift) {
	observeDrift(t.Namespace, d.Categories)
	if r.Recorder == nil {
		return
	}
	cats := make([]string, len(d.Categories))
	for i, c := range d.Categories {
		cats[i] = string(c)
	}
	if d.FromHash == "" {
		r.Recorder.Eventf(t, nil, eventWarning, EventDefinitionDrift, actionImport,
			"first imported definition %s: %s; review it before enabling (kubectl mcp diff %s)", d.ToHash, strings.Join(cats, ", "), t.Name)
		return
	}
	r.Recorder.Eventf(t, nil, eventWarning, EventDefinitionDrift, actionImport,
		"definition changed from %s to %s: %s; it is not served until approved again (kubectl mcp diff %s)", d.FromHash, d.ToHash, strings.Join(cats, ", "), t.Name)
}

// toolLabels are the labels the importer applies to a tool of srv: the
// server's name and, when the server has one, its shard key, so that the
// controller instance that reconciles the server also holds and reconciles
// its tools (docs/adr/019-sharding.md).
func toolLabels(srv *mcpv1alpha1.McpServer) map[string]string {
	l := map[string]string{mcpv1alpha1.LabelServer: srv.Name}
	if k, ok := srv.Labels[mcpv1alpha1.LabelShardKey]; ok {
		l[mcpv1alpha1.LabelShardKey] = k
	}
	return l
}

// appliedTool is the McpTool an apply answered with.
func appliedTool(obj *mcpac.McpToolApplyConfiguration) (*mcpv1alpha1.McpTool, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	t := &mcpv1alpha1.McpTool{}
	return t, json.Unmarshal(b, t)
}

// deleteDisabled deletes a disabled tool the server no longer offers. The
// preconditions make the delete fail, harmlessly, if someone enabled or
// declared the tool since the cache saw it.
func deleteDisabled(ctx context.Context, c client.Client, t *mcpv1alpha1.McpTool) error {
	uid, rv := t.UID, t.ResourceVersion
	err := c.Delete(ctx, t, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting McpTool %s: %w", t.Name, err)
}

// reconcileCounts refreshes the enabled and removed counts of a server
// whose tools were enabled or disabled between imports. An import counts
// them itself.
func (r *McpServerReconciler) reconcileCounts(ctx context.Context, sc *serverScope) error {
	srv := sc.server
	if sc.imported || srv.Status.Tools == nil {
		return nil
	}
	tools, err := toolsOf(ctx, r.Client, srv)
	if err != nil {
		return err
	}
	enabled, removed := int32(0), int32(0)
	for i := range tools {
		t := &tools[i]
		if !t.Spec.Enabled {
			continue
		}
		enabled++
		if notOfferedAs(t, mcpv1alpha1.ReasonRemovedFromServer) {
			removed++
		}
	}
	srv.Status.Tools.Enabled, srv.Status.Tools.Removed = enabled, removed
	setToolGauges(srv)
	return nil
}

// toolsOf lists the McpTools of a server from the cache, without copying
// them: the caller only reads them, and changes only copies.
func toolsOf(ctx context.Context, c client.Reader, srv *mcpv1alpha1.McpServer) ([]mcpv1alpha1.McpTool, error) {
	var tools mcpv1alpha1.McpToolList
	if err := c.List(ctx, &tools, client.InNamespace(srv.Namespace), client.MatchingFields{indexToolServer: srv.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing McpTools: %w", err)
	}
	return tools.Items, nil
}

// printable keeps a server-sent name safe to show: printable ASCII only,
// truncated.
func printable(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		b = append(b, c)
	}
	return string(b)
}
