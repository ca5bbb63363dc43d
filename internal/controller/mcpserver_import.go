package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/logging"
)

// reconcileImport imports the catalog when it is due and the process's
// catalog budget admits it, in three stages: fetch it (one MCP operation
// under one budget), apply it to the McpTools, and record the outcome in
// status. A failed or refused import changes no
// McpTool and records no contact: the last good catalog stays. A failure
// only a spec change cures stalls.
func (r *McpServerReconciler) reconcileImport(ctx context.Context, sc *serverScope) error {
	sc.importChecked = true
	sc.importInterval = importInterval(sc.server)
	if !importDue(sc) {
		return nil
	}
	release, admitted := r.admitImport(sc)
	if !admitted {
		return nil
	}
	defer release()
	sc.imported = true
	if v := requestedImport(sc.server); v != "" {
		// A request is handled once, whatever its outcome.
		sc.server.Status.LastHandledImportAt = v
	}
	start := time.Now()
	cat, err := r.MCP.ListTools(ctx, sc.endpoint)
	sc.now = realOr(r.Clock).Now()
	var applied *appliedCatalog
	var applyErr error
	if err == nil {
		applied, applyErr = r.applyCatalog(ctx, sc.server, cat)
		if applyErr == nil {
			r.importFeatures(ctx, sc, cat.Probe)
		}
		if r.Listeners != nil {
			r.Listeners.Imported(sc.key, cat.TTL)
		}
	}
	took := time.Since(start)
	result := recordImport(sc, cat, err, applied, applyErr, took)
	synced := meta.FindStatusCondition(sc.server.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
	logging.FromContext(ctx, logging.Importer).V(logging.Debug).Info("imported", "took", took.Round(time.Millisecond),
		"synced", synced.Status, "reason", synced.Reason, "tools", importedTools(sc.server))
	return result
}

// importedTools is how many tools the last successful import accepted.
func importedTools(srv *mcpv1alpha1.McpServer) int32 {
	if srv.Status.Tools == nil {
		return 0
	}
	return srv.Status.Tools.Imported
}

// importDue says whether the catalog should be imported now. When it
// should not, it sets when it next should (sc.nextImport; zero: not until
// something changes or a failed import's retry, which the schedule keeps).
func importDue(sc *serverScope) bool {
	srv := sc.server
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
	switch {
	case c == nil, c.ObservedGeneration != srv.Generation:
		return true
	case requestedImport(srv) != "":
		return true
	case c.Status != metav1.ConditionTrue:
		return sc.plan.ImportRetryDue
	case sc.plan.ImportRequested:
		// The server announced a change of its tools (ToolListeners). A
		// failing import keeps its retry schedule instead.
		return true
	}
	if srv.Status.LastImportTime != nil {
		next := srv.Status.LastImportTime.Add(sc.importInterval)
		if !sc.now.Before(next) {
			return true
		}
		sc.nextImport = next
	}
	return false
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

func importInterval(srv *mcpv1alpha1.McpServer) time.Duration {
	if iv := srv.Spec.Import.Interval; iv != nil && iv.Duration > 0 {
		return iv.Duration
	}
	return mcpv1alpha1.DefaultImportInterval
}
