package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// Skip reasons the importer adds to those of the client.
const (
	skipNameTooLong  = "NameTooLong"
	skipNameConflict = "NameConflict"
	maxSkippedListed = 50
)

// importDue says whether the catalog should be imported now, and otherwise
// when it next should be (zero: not until something changes).
func (r *McpServerReconciler) importDue(sc *serverScope) (bool, time.Time) {
	srv := sc.server
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
	switch {
	case c == nil, c.ObservedGeneration != srv.Generation:
		return true, time.Time{}
	case requestedImport(srv) != "":
		return true, time.Time{}
	case c.Status != metav1.ConditionTrue:
		if r.sched.importRetryDue(sc.key, sc.now) {
			return true, time.Time{}
		}
		return false, time.Time{}
	}
	if srv.Status.LastImportTime != nil {
		next := srv.Status.LastImportTime.Add(importInterval(srv))
		if !sc.now.Before(next) {
			return true, time.Time{}
		}
		return false, next
	}
	return false, time.Time{}
}

func importInterval(srv *mcpv1alpha1.McpServer) time.Duration {
	if iv := srv.Spec.Import.Interval; iv != nil && iv.Duration > 0 {
		return iv.Duration
	}
	return mcpv1alpha1.DefaultImportInterval
}

// requestedImport returns what status.lastHandledImportAt records for the
// import request annotation when that request has not been handled yet.
func requestedImport(srv *mcpv1alpha1.McpServer) string {
	return pendingRequest(srv.Annotations[mcpv1alpha1.AnnotationRequestedImportAt], srv.Status.LastHandledImportAt)
}

// pendingRequest returns the value status records for a request annotation's
// value, or "" when there is no request or it was handled.
func pendingRequest(annotation, handled string) string {
	if annotation == "" {
		return ""
	}
	if v := requestToken(annotation); v != handled {
		return v
	}
	return ""
}

// maxHandledLength is the longest value status.lastHandled*At holds.
const maxHandledLength = 256

// requestToken is what status records for a request annotation's value: the
// value itself, or a digest of a value too long for status. Clipping would
// make two long values with a common beginning the same request, and make
// the recorded value never equal the annotation, so the request would be
// handled at every reconcile.
func requestToken(v string) string {
	if len(v) <= maxHandledLength {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// reconcileImport imports the catalog when due and sets CatalogSynced. A
// failed or refused import changes no McpTool and records no contact: the
// last good catalog stays. A failure only a spec change cures stalls.
func (r *McpServerReconciler) reconcileImport(ctx context.Context, sc *serverScope) error {
	srv := sc.server
	due, next := r.importDue(sc)
	if !due {
		if !next.IsZero() {
			sc.requeueNoLaterThan(next)
		}
		if c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced); c != nil && c.Status != metav1.ConditionTrue {
			sc.requeueNoLaterThan(r.sched.nextImportRetry(sc.key))
		}
		return r.recount(ctx, srv)
	}
	if v := requestedImport(srv); v != "" {
		// A request is handled once, whatever its outcome.
		srv.Status.LastHandledImportAt = v
	}

	start := time.Now()
	cat, err := r.MCP.ListTools(ctx, sc.endpoint)
	now := r.now()
	if err != nil {
		reason, msg := failureReason(err)
		observeImport(time.Since(start), reason)
		setCondition(srv, mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, reason, "import failed: "+msg)
		r.Recorder.Eventf(srv, nil, "Warning", "ImportFailed", "Import", "import failed (%s): %s", reason, msg)
		if handshakeFailed(err) {
			// A probe now would repeat the same handshake: a hung server
			// would hold a worker for two budgets instead of one.
			observeProbe(srv, time.Since(start), err)
			r.recordProbe(sc, nil, err, now, false, false)
		}
		stall := classifyOperation(err, reason, "import failed: "+msg)
		if stall == nil {
			// Waiting: the next attempt is one health interval away.
			sc.requeueNoLaterThan(r.sched.importFailed(sc.key, now, healthInterval(srv)))
		}
		return stall
	}

	// The operation completed: that is a contact, and counts as a probe.
	observeProbe(srv, cat.Probe.Latency, nil)
	// Status is written anyway: the contact is refreshed with it.
	r.recordProbe(sc, &cat.Probe, nil, now, true, false)

	counts, skipped, err := r.applyCatalog(ctx, srv, cat)
	if err != nil {
		observeImport(time.Since(start), mcpv1alpha1.ReasonImportFailed)
		setCondition(srv, mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonImportFailed, "writing McpTools failed; retrying")
		return err
	}
	r.sched.importSucceeded(sc.key)
	t := metav1.NewTime(now.Truncate(time.Second))
	srv.Status.LastImportTime = &t
	srv.Status.Tools = counts
	srv.Status.SkippedTools = skipped
	observeImport(time.Since(start), "")
	setToolGauges(srv)
	msg := fmt.Sprintf("imported %d tools (%d skipped, %d enabled)", counts.Imported, counts.Skipped, counts.Enabled)
	setCondition(srv, mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, msg)
	r.Recorder.Eventf(srv, nil, "Normal", "ImportSucceeded", "Import", "%s", msg)
	sc.requeueNoLaterThan(now.Add(importInterval(srv)))
	return nil
}

// handshakeFailed reports whether a failed import ended before its
// handshake completed, so that the failure answers a probe as well.
func handshakeFailed(err error) bool {
	var me *mcp.Error
	return !errors.As(err, &me) || me.Method != "tools/list"
}

// recount refreshes the enabled and removed counts after tools were enabled
// or disabled between imports.
func (r *McpServerReconciler) recount(ctx context.Context, srv *mcpv1alpha1.McpServer) error {
	if srv.Status.Tools == nil {
		return nil
	}
	var tools mcpv1alpha1.McpToolList
	// Read only: the cached objects themselves, not a copy of each.
	if err := r.List(ctx, &tools, client.InNamespace(srv.Namespace), client.MatchingFields{indexToolServer: srv.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing McpTools: %w", err)
	}
	enabled, removed := int32(0), int32(0)
	for i := range tools.Items {
		t := &tools.Items[i]
		if !t.Spec.Enabled {
			continue
		}
		enabled++
		if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionImported); c != nil &&
			c.Status == metav1.ConditionFalse && c.Reason == mcpv1alpha1.ReasonRemovedFromServer {
			removed++
		}
	}
	srv.Status.Tools.Enabled, srv.Status.Tools.Removed = enabled, removed
	setToolGauges(srv)
	return nil
}

// applyCatalog makes the McpTools match an imported catalog: new and changed
// tools are applied, disabled tools the server no longer offers are deleted,
// and enabled ones are kept with Imported=False. Unchanged tools are not
// written at all.
func (r *McpServerReconciler) applyCatalog(ctx context.Context, srv *mcpv1alpha1.McpServer, cat *mcp.Catalog) (*mcpv1alpha1.ToolCounts, []mcpv1alpha1.SkippedTool, error) {
	var existing mcpv1alpha1.McpToolList
	// The cached objects themselves, not a copy of each (10,000 copies of
	// schemas per import at scale): everything below only reads them, and
	// what it changes it changes on a DeepCopy.
	if err := r.List(ctx, &existing, client.InNamespace(srv.Namespace), client.MatchingFields{indexToolServer: srv.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("listing McpTools: %w", err)
	}
	byName := make(map[string]*mcpv1alpha1.McpTool, len(existing.Items))
	for i := range existing.Items {
		byName[existing.Items[i].Name] = &existing.Items[i]
	}

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

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.ApplyConcurrency)
	accepted := make(map[string]bool, len(cat.Tools))
	for _, t := range cat.Tools {
		name, err := toolname.ObjectName(srv.Name, t.Name)
		if err != nil {
			skip(t.Name, mcp.SkipInvalidName)
			continue
		}
		if !toolname.LocalNameFits(srv.Name, t.Name) {
			skip(t.Name, skipNameTooLong)
			continue
		}
		ex := byName[name]
		if ex != nil && ex.Spec.RemoteName != t.Name {
			skip(t.Name, skipNameConflict)
			continue
		}
		accepted[name] = true
		hash := definitionHash(t)
		if ex != nil && importedUpToDate(ex, srv, hash) {
			continue
		}
		g.Go(func() error { return r.applyTool(gctx, srv, t, name, hash) })
	}

	removed := int32(0)
	for _, ex := range existing.Items {
		if accepted[ex.Name] {
			continue
		}
		if collectable(&ex) {
			g.Go(func() error { return r.deleteDisabled(gctx, &ex) })
			continue
		}
		reason := mcpv1alpha1.ReasonRemovedFromServer
		if why, ok := offeredButSkipped[ex.Name]; ok {
			reason = why
		}
		if ex.Spec.Enabled && reason == mcpv1alpha1.ReasonRemovedFromServer {
			removed++
		}
		if c := meta.FindStatusCondition(ex.Status.Conditions, mcpv1alpha1.ConditionImported); c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason {
			continue
		}
		g.Go(func() error { return r.markNotOffered(gctx, srv, &ex, reason) })
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}

	enabled := int32(0)
	for _, ex := range existing.Items {
		if ex.Spec.Enabled {
			enabled++
		}
	}
	counts := &mcpv1alpha1.ToolCounts{
		Offered:  int32(len(cat.Tools) + len(cat.Skipped)),
		Imported: int32(len(accepted)),
		Skipped:  int32(len(skipped)),
		Enabled:  enabled,
		Removed:  removed,
	}
	if len(skipped) > maxSkippedListed {
		skipped = skipped[:maxSkippedListed]
	}
	return counts, skipped, nil
}

// importedUpToDate reports whether an existing McpTool already carries
// everything an import would write.
func importedUpToDate(t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, hash string) bool {
	if t.Labels[mcpv1alpha1.LabelServer] != srv.Name || t.Labels[mcpv1alpha1.LabelShardKey] != srv.Labels[mcpv1alpha1.LabelShardKey] ||
		t.Status.DefinitionHash != hash {
		return false
	}
	return meta.IsStatusConditionTrue(t.Status.Conditions, mcpv1alpha1.ConditionImported)
}

// applyTool writes a tool's identity and the definition the server offers.
// No owner reference ties the tool to its server: the garbage collector
// would then delete enabled and Git-declared tools, and the approvals on
// them, with every delete or replacement of the server (docs/adr). Tools
// nobody decided anything about are removed by the importer when the server
// stops offering them, and by the tool controller when the server is gone.
//
// The status write is complete: it carries the tool controller's view of
// the tool as the write leaves it (withToolView), so that a new or changed
// tool costs two writes, not three.
func (r *McpServerReconciler) applyTool(ctx context.Context, srv *mcpv1alpha1.McpServer, t mcp.Tool, name, hash string) error {
	obj := mcpac.McpTool(name, srv.Namespace).
		WithLabels(toolLabels(srv)).
		WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName(srv.Name)).
			WithRemoteName(t.Name))
	// Never forced: the importer must not take a field from Git. A conflict
	// means another manager declared different values, which is an error.
	if err := r.Apply(ctx, obj, client.FieldOwner(FieldManagerImporter)); err != nil {
		return fmt.Errorf("applying McpTool %s: %w", name, err)
	}
	now := r.now()
	// status builds the write for the tool as cur shows it.
	status := func(cur *mcpv1alpha1.McpTool) *mcpac.McpToolStatusApplyConfiguration {
		s := mcpac.McpToolStatus().WithDefinitionHash(hash)
		if t.Title != "" {
			s.WithTitle(clip(t.Title, 256))
		}
		if t.Description != "" {
			s.WithDescription(clip(t.Description, 8192))
		}
		if len(t.InputSchema) > 0 {
			s.WithInputSchema(apiextensionsv1.JSON{Raw: t.InputSchema})
		}
		if h := hintsOf(t.Annotations); h != nil {
			s.WithHints(hintsApply(h))
		}
		// Every importer write carries the approved text it keeps: a write
		// without it would drop the field, which only this manager owns.
		if rec := approvedRecord(cur, hash); rec != nil {
			s.WithApprovedDefinition(definitionApply(rec))
		}
		s.WithConditions(importedCondition(cur, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "offered by the server at the last import", now))
		withToolView(s, cur, srv, now)
		return s
	}
	// The answer to the apply is the live tool: whether a definition is
	// replaced is decided from it, not from a cache that may lag (or, for
	// a tool that just joined this shard, not hold it at all).
	cur, err := appliedTool(obj)
	if err != nil {
		return fmt.Errorf("reading the applied McpTool %s: %w", name, err)
	}
	if cur.Status.DefinitionHash == "" || cur.Status.DefinitionHash == hash {
		if err := r.Status().Apply(ctx, mcpac.McpTool(name, srv.Namespace).WithStatus(status(cur)), client.FieldOwner(FieldManagerImporter), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying the status of McpTool %s: %w", name, err)
		}
		return nil
	}
	return r.replaceDefinition(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: name}, hash, status)
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

// appliedTool reads, from the answer to an apply, what the status write
// depends on: generation, spec and status (definition hash, conditions, the
// approved text kept).
func appliedTool(obj *mcpac.McpToolApplyConfiguration) (*mcpv1alpha1.McpTool, error) {
	cur := &mcpv1alpha1.McpTool{}
	if obj.Name != nil {
		cur.Name = *obj.Name
	}
	if obj.Namespace != nil {
		cur.Namespace = *obj.Namespace
	}
	if obj.Generation != nil {
		cur.Generation = *obj.Generation
	}
	if obj.Spec != nil {
		b, err := json.Marshal(obj.Spec)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &cur.Spec); err != nil {
			return nil, err
		}
	}
	if obj.Status != nil {
		b, err := json.Marshal(obj.Status)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &cur.Status); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// withToolView adds to an importer status write s the tool controller's
// view of the tool cur as s leaves it. The importer includes the view in
// every status write it makes: server-side apply removes a field its
// manager stops applying when no other manager holds it.
func withToolView(s *mcpac.McpToolStatusApplyConfiguration, cur *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, now time.Time) {
	after := cur.DeepCopy()
	if s.DefinitionHash != nil {
		after.Status.DefinitionHash = *s.DefinitionHash
	}
	for _, c := range s.Conditions {
		if c.Type != nil && *c.Type == mcpv1alpha1.ConditionImported {
			meta.SetStatusCondition(&after.Status.Conditions, metav1.Condition{Type: *c.Type, Status: *c.Status, Reason: *c.Reason, Message: *c.Message})
		}
	}
	addToolView(s, after, computeToolView(after, srv), now)
}

// replaceDefinitionAttempts bounds the retries of a definition change that
// races a change of the tool's spec.
const replaceDefinitionAttempts = 4

// replaceDefinition writes a changed definition. The approved text must be
// kept when it is the one being replaced, and a person may approve at any
// moment, so the decision is made on a live read and the write carries that
// read's resourceVersion: an approval landing in between makes the write
// fail, and it is decided again. Definitions change rarely, so the extra
// read costs little.
func (r *McpServerReconciler) replaceDefinition(ctx context.Context, key types.NamespacedName, hash string, build func(*mcpv1alpha1.McpTool) *mcpac.McpToolStatusApplyConfiguration) error {
	for range replaceDefinitionAttempts {
		live := &mcpv1alpha1.McpTool{}
		if err := r.APIReader.Get(ctx, key, live); err != nil {
			return fmt.Errorf("reading McpTool %s before changing its definition: %w", key.Name, err)
		}
		obj := mcpac.McpTool(key.Name, key.Namespace).WithResourceVersion(live.ResourceVersion).WithStatus(build(live))
		switch err := r.Status().Apply(ctx, obj, client.FieldOwner(FieldManagerImporter), client.ForceOwnership); {
		case err == nil:
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("applying the status of McpTool %s: %w", key.Name, err)
		}
	}
	return fmt.Errorf("applying the status of McpTool %s: its spec kept changing while its definition was replaced", key.Name)
}

// markNotOffered keeps an enabled tool the server stopped offering, with
// Imported=False. Its last definition stays, so people can see what it was.
// The definition is re-applied from a live read: the cache of a process
// without the gateway does not hold definitions (TrimForCache), and servers
// rarely stop offering a tool.
func (r *McpServerReconciler) markNotOffered(ctx context.Context, srv *mcpv1alpha1.McpServer, cached *mcpv1alpha1.McpTool, reason string) error {
	t := &mcpv1alpha1.McpTool{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading McpTool %s: %w", cached.Name, err)
	}
	status := mcpac.McpToolStatus()
	if t.Status.DefinitionHash != "" {
		status.WithDefinitionHash(t.Status.DefinitionHash)
	}
	if t.Status.Title != "" {
		status.WithTitle(t.Status.Title)
	}
	if t.Status.Description != "" {
		status.WithDescription(t.Status.Description)
	}
	if t.Status.InputSchema != nil {
		status.WithInputSchema(*t.Status.InputSchema)
	}
	if t.Status.Hints != nil {
		status.WithHints(hintsApply(t.Status.Hints))
	}
	if rec := approvedRecord(t, t.Status.DefinitionHash); rec != nil {
		status.WithApprovedDefinition(definitionApply(rec))
	}
	msg := "the server no longer offers this tool; it is kept because it is enabled, and is not served"
	if !t.Spec.Enabled {
		// Only a tool the import created is deleted when it goes away.
		msg = "the server does not offer this tool; it is kept because it was declared outside the import, and is not served"
	}
	if reason != mcpv1alpha1.ReasonRemovedFromServer {
		msg = "the server offers this tool, but the last import refused it (" + reason + "); it is not served"
	}
	now := r.now()
	status.WithConditions(importedCondition(t, metav1.ConditionFalse, reason, msg, now))
	withToolView(status, t, srv, now)
	if err := r.Status().Apply(ctx, mcpac.McpTool(t.Name, t.Namespace).WithStatus(status), client.FieldOwner(FieldManagerImporter), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("marking McpTool %s as not offered: %w", t.Name, err)
	}
	return nil
}

// declaredElsewhere reports whether a manager other than the operator's own
// controllers holds spec fields of the tool: Git, kubectl or kubectl-mcp
// declared it. Deleting such a tool would only make Argo CD or Flux create
// it again, import after import; it is kept with Imported=False instead.
func declaredElsewhere(t *mcpv1alpha1.McpTool) bool {
	for _, mf := range t.ManagedFields {
		if declaresSpec(mf) {
			return true
		}
	}
	return false
}

// deleteDisabled deletes a disabled tool the server no longer offers. The
// preconditions make the delete fail, harmlessly, if someone enabled the
// tool since the cache saw it.
func (r *McpServerReconciler) deleteDisabled(ctx context.Context, t *mcpv1alpha1.McpTool) error {
	uid, rv := t.UID, t.ResourceVersion
	err := r.Delete(ctx, t, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting McpTool %s: %w", t.Name, err)
}

func importedCondition(ex *mcpv1alpha1.McpTool, status metav1.ConditionStatus, reason, msg string, now time.Time) *metav1ac.ConditionApplyConfiguration {
	ltt := metav1.NewTime(now.Truncate(time.Second))
	if ex != nil {
		if c := meta.FindStatusCondition(ex.Status.Conditions, mcpv1alpha1.ConditionImported); c != nil && c.Status == status {
			ltt = c.LastTransitionTime
		}
	}
	return metav1ac.Condition().
		WithType(mcpv1alpha1.ConditionImported).
		WithStatus(status).
		WithReason(reason).
		WithMessage(msg).
		WithLastTransitionTime(ltt)
}

// approvedRecord is the approved definition's text that a status write
// replacing ex's definition with the one hashed newHash must keep, or nil.
// The importer is the only writer that replaces a definition, so it is the
// one place that can keep the text a person approved before it is gone.
func approvedRecord(ex *mcpv1alpha1.McpTool, newHash string) *mcpv1alpha1.ToolDefinition {
	if ex == nil {
		return nil
	}
	approved := ex.Spec.ApprovedDefinitionHash
	switch {
	case approved == "" || approved == newHash:
		// Nothing is approved, or the new definition is the approved one:
		// there is no other text to review.
		return nil
	case ex.Status.DefinitionHash == approved:
		// The approved definition is about to be replaced.
		return &mcpv1alpha1.ToolDefinition{
			Hash:        ex.Status.DefinitionHash,
			Title:       ex.Status.Title,
			Description: ex.Status.Description,
			InputSchema: ex.Status.InputSchema,
			Hints:       ex.Status.Hints,
		}
	case ex.Status.ApprovedDefinition != nil && ex.Status.ApprovedDefinition.Hash == approved:
		// Kept by an earlier import; a record of a definition that is no
		// longer the approved one is dropped.
		return ex.Status.ApprovedDefinition
	}
	return nil
}

func definitionApply(d *mcpv1alpha1.ToolDefinition) *mcpac.ToolDefinitionApplyConfiguration {
	a := mcpac.ToolDefinition().WithHash(d.Hash)
	if d.Title != "" {
		a.WithTitle(d.Title)
	}
	if d.Description != "" {
		a.WithDescription(d.Description)
	}
	if d.InputSchema != nil {
		a.WithInputSchema(*d.InputSchema)
	}
	if d.Hints != nil {
		a.WithHints(hintsApply(d.Hints))
	}
	return a
}

func hintsApply(h *mcpv1alpha1.ToolHints) *mcpac.ToolHintsApplyConfiguration {
	a := mcpac.ToolHints()
	if h.Title != "" {
		a.WithTitle(h.Title)
	}
	if h.ReadOnlyHint != nil {
		a.WithReadOnlyHint(*h.ReadOnlyHint)
	}
	if h.DestructiveHint != nil {
		a.WithDestructiveHint(*h.DestructiveHint)
	}
	if h.IdempotentHint != nil {
		a.WithIdempotentHint(*h.IdempotentHint)
	}
	if h.OpenWorldHint != nil {
		a.WithOpenWorldHint(*h.OpenWorldHint)
	}
	return a
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
