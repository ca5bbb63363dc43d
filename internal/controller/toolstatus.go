package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// toolStatus is the one writer of McpTool status: every field of it is
// written here, under one field manager (governance.FieldManagerToolStatus),
// and computed by the functions of mcptool_status.go. Imports write through
// it when the server offers a new or changed definition, or stops offering
// a tool; the McpTool controller when something else the status depends on
// changed (the tool's spec, its server's declaration or readiness).
//
// Every write is a merge patch guarded by the resourceVersion it was decided
// on: an approval or a change of enabled landing in between makes it fail,
// and it is decided again on a live read.
type toolStatus struct {
	client client.Client
	// live reads a tool from the API server, with the definition texts the
	// controllers' cache drops.
	live  client.Reader
	clock clock.PassiveClock
	// views holds, per version of a tool, whether its reviewed text and
	// argument rules can be honoured, so that rules are compiled once per
	// version however often the view is written.
	views *toolview.Cache
}

// viewsOr is c, or a new cache when c is nil.
func viewsOr(c *toolview.Cache) *toolview.Cache {
	if c == nil {
		return &toolview.Cache{}
	}
	return c
}

// toolStatusAttempts bounds how often one write is decided again after a
// conflict.
const toolStatusAttempts = 4

// toolWritten is what a write left: the tool with its status as decided
// (nil when the tool is gone), and whether a write was needed.
type toolWritten struct {
	tool    *mcpv1alpha1.McpTool
	written bool
}

// write applies change to t (a tool read from the cache or the API server)
// and writes the result when it differs. On a conflict the tool is read live
// and change applied again.
func (w *toolStatus) write(ctx context.Context, t *mcpv1alpha1.McpTool, change func(*mcpv1alpha1.McpTool)) (toolWritten, error) {
	before := t
	for range toolStatusAttempts {
		after := before.DeepCopy()
		change(after)
		written, err := patchStatus(ctx, w.client, before, after, statusWrite{owner: governance.FieldManagerToolStatus, guarded: true})
		if !apierrors.IsConflict(err) {
			return toolWritten{tool: after, written: written}, err
		}
		live := &mcpv1alpha1.McpTool{}
		if err := w.live.Get(ctx, client.ObjectKeyFromObject(t), live); err != nil {
			return toolWritten{}, client.IgnoreNotFound(err)
		}
		before = live
	}
	return toolWritten{}, fmt.Errorf("writing the status of McpTool %s: it kept changing while it was written", t.Name)
}

// writeDefinition records a definition the server offers, and the view the
// tool then has. live must hold the definition texts (see setDefinition).
// removed are the places the import removed control characters from. It
// returns the tool as written and the explanation of the definition that
// the write recorded, if it recorded a new one.
func (w *toolStatus) writeDefinition(ctx context.Context, live *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, def *mcpv1alpha1.ToolDefinition, removed []string) (*mcpv1alpha1.McpTool, *mcpv1alpha1.DefinitionDrift, error) {
	var drifted *mcpv1alpha1.DefinitionDrift
	res, err := w.write(ctx, live, func(t *mcpv1alpha1.McpTool) {
		now := w.clock.Now()
		drifted = setDefinition(t, def, removed, now)
		setToolView(t, srv, w.honoured(t), now)
	})
	if err != nil || !res.written {
		return res.tool, nil, err
	}
	return res.tool, drifted, nil
}

// writeNotOffered records that the last import did not accept the tool.
func (w *toolStatus) writeNotOffered(ctx context.Context, t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer, reason string) error {
	if err := w.knowDefinition(ctx, t); err != nil {
		return err
	}
	_, err := w.write(ctx, t, func(t *mcpv1alpha1.McpTool) {
		now := w.clock.Now()
		setNotOffered(t, reason, now)
		setToolView(t, srv, w.honoured(t), now)
	})
	return err
}

// writeView brings the view of the tool (names, effective class and
// approval, Ready) up to date with its spec and its server; it writes
// nothing when the view is current.
func (w *toolStatus) writeView(ctx context.Context, t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer) (toolWritten, error) {
	if err := w.knowDefinition(ctx, t); err != nil {
		return toolWritten{}, err
	}
	return w.write(ctx, t, func(t *mcpv1alpha1.McpTool) { setToolView(t, srv, w.honoured(t), w.clock.Now()) })
}

// honoured is whether t's reviewed text and argument rules can be honoured
// (toolview.Build), computed once per version of t. A tool whose spec sets
// neither needs nothing computed.
func (w *toolStatus) honoured(t *mcpv1alpha1.McpTool) error {
	if t.Spec.ReviewedText == nil && t.Spec.ArgumentRules == nil {
		return nil
	}
	_, err := w.views.Get(t)
	return err
}

// knowDefinition makes sure honoured can answer for t, a tool read from the
// controllers' cache, which may have dropped its input schema: when the
// spec names arguments and this version was never checked, it is checked
// once on the tool read live. Should the live tool be another version, the
// write guarded by t's resourceVersion fails and is decided again on it.
func (w *toolStatus) knowDefinition(ctx context.Context, t *mcpv1alpha1.McpTool) error {
	if !toolview.NeedsSchema(t) || t.Status.InputSchema != nil || t.Status.DefinitionHash == "" {
		return nil
	}
	if _, _, ok := w.views.Lookup(t); ok {
		return nil
	}
	live := &mcpv1alpha1.McpTool{}
	if err := w.live.Get(ctx, client.ObjectKeyFromObject(t), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	_, _ = w.views.Get(live)
	return nil
}
