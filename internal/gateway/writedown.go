package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// The write-down stage (ADR 057). A caller an McpAccessPolicy holds to
// spec.writeDown has an McpReadMark in its namespace: the most sensitive
// class it read, per class when and from which tool, and until when that
// holds. The record stage raises the mark, at the API server, before the
// result that raises it is returned; a write that fails withholds the
// result. The decide stage reads the mark before a call the rule could
// hold back: from the cache first, and when the cache holds nothing that
// holds the call back, from the API server, so that a result returned by
// one replica holds back the next call on any other, however late that
// replica's cache is. A caller whose mark does not rise costs no write.

// Audit values of the write-down rule (audit.Record.WriteDown).
const (
	// writeDownRaised: the result raised the caller's mark.
	writeDownRaised = "Raised"
	// writeDownUnrecorded: the mark could not be written, and the
	// result was withheld.
	writeDownUnrecorded = "Unrecorded"
	// writeDownApproval: the mark made the call need a person's approval.
	writeDownApproval = "ApprovalRequired"
	// writeDownRefused: the mark refused the call.
	writeDownRefused = "Refused"
)

// holdWriteDown is the write-down check of the decide stage, for a call
// the gate allowed: it refuses the call, or makes it need approval, when
// the caller's mark holds it back; it answers nil when the call goes on.
func (g *Gateway) holdWriteDown(ctx context.Context, id *authn.Identity, c *callScope) *sdk.CallToolResult {
	rule, ok := governance.WriteDownOf(c.policies, id.PolicyCaller())
	if !ok {
		return nil
	}
	effects := governance.EffectsOf(c.tool)
	// Only a mark of a class this caller can be served now could have
	// been raised since the cache was told: a closed-world tool of that
	// class or higher needs no read at the API server.
	readable := ceilingFor(id, c.policies).For(governance.Effects{Reviewed: true, ReadOnly: true, Idempotent: true})
	fresh := effects.OpenWorld || c.class.Rank() < readable.Rank()
	now := g.now()
	mark, held, err := g.markHolding(ctx, id, rule, c.class, effects, now, fresh)
	if err != nil {
		return undecided(ctx, err)
	}
	if !held {
		return nil
	}
	c.rec.WriteDown, c.rec.MarkClass, c.rec.MarkTool, c.rec.MarkReadAt = writeDownRefused, string(mark.DataClass), mark.Tool, mark.ReadAt.UTC().Format(time.RFC3339)
	if rule.Action == mcpv1alpha1.WriteDownRequireApproval {
		c.rec.WriteDown = writeDownApproval
		c.approval = true
		return nil
	}
	return g.deny(ctx, c.rec, c.tool, audit.DenyWriteDown, string(mark.DataClass), writeDownMessage(mark, c.class, effects))
}

// markHolding reads the caller's mark and reports the mark that holds a
// call of a tool of class with effects back, if one does: from the cache,
// and when the cache has none and fresh is set, from the API server.
func (g *Gateway) markHolding(ctx context.Context, id *authn.Identity, rule governance.WriteDown, class mcpv1alpha1.DataClass, effects governance.Effects, now time.Time, fresh bool) (mcpv1alpha1.ReadMark, bool, error) {
	key := types.NamespacedName{Namespace: id.Namespace, Name: governance.ReadMarkName(id.Username)}
	holding := func(m *mcpv1alpha1.McpReadMark) (mcpv1alpha1.ReadMark, bool) {
		hw, ok := rule.HighWater(m, now)
		return hw, ok && m.Spec.Caller == id.Username && governance.HoldsBack(hw.DataClass, class, effects)
	}
	m := &mcpv1alpha1.McpReadMark{}
	switch err := g.Reader.Get(ctx, key, m, readOnly); {
	case err == nil:
		if hw, ok := holding(m); ok {
			return hw, true, nil
		}
	case !apierrors.IsNotFound(err):
		return mcpv1alpha1.ReadMark{}, false, fmt.Errorf("reading the read mark from the cache: %w", err)
	}
	if !fresh || g.Marks == nil {
		return mcpv1alpha1.ReadMark{}, false, nil
	}
	m = &mcpv1alpha1.McpReadMark{}
	if err := g.Marks.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			return mcpv1alpha1.ReadMark{}, false, nil
		}
		return mcpv1alpha1.ReadMark{}, false, fmt.Errorf("reading the read mark: %w", err)
	}
	hw, ok := holding(m)
	return hw, ok, nil
}

// writeDownMessage tells the agent which read holds its call back, and
// until the window passes or a person resets it; never a value.
func writeDownMessage(mark mcpv1alpha1.ReadMark, class mcpv1alpha1.DataClass, effects governance.Effects) string {
	why := fmt.Sprintf("its data class (%s) is lower", class)
	if effects.OpenWorld {
		why = "it is open-world (no person reviewed it as closed-world)"
	}
	return fmt.Sprintf("this caller received %s data from the tool %s at %s, and %s: no write-down "+
		"(McpAccessPolicy spec.writeDown) until that read is older than the policy's window, or a person resets the mark with kubectl mcp reset-mark",
		mark.DataClass, mark.Tool, mark.ReadAt.UTC().Format(time.RFC3339), why)
}

// raiseMark is the write-down part of the record stage, for a result the
// agent is about to read: the caller's mark raised to the result's class,
// at the API server, before the result is returned. It reports false when
// the mark could not be written; the result must then be withheld.
func (g *Gateway) raiseMark(ctx context.Context, id *authn.Identity, c *callScope) bool {
	rule, ok := governance.WriteDownOf(c.policies, id.PolicyCaller())
	if !ok || !rule.Counts(c.class) {
		return true
	}
	now := g.now()
	name := c.rec.LocalName
	if name == "" {
		name = c.key.Name
	}
	key := types.NamespacedName{Namespace: id.Namespace, Name: governance.ReadMarkName(id.Username)}
	// The cache says whether the mark must rise (most reads of a caller
	// that goes on reading need no write, and no copy); a write that finds
	// the object changed reads it again from the API server.
	m := &mcpv1alpha1.McpReadMark{}
	err := g.Reader.Get(ctx, key, m, readOnly)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return g.unrecorded(ctx, c, fmt.Errorf("reading the read mark from the cache: %w", err))
	}
	if exists && m.Spec.Caller == id.Username && !rule.MustRaise(&m.Spec, c.class, now) {
		return true
	}
	if exists {
		m = m.DeepCopy()
	}
	for attempt := 0; ; attempt++ {
		if !exists {
			m = &mcpv1alpha1.McpReadMark{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		}
		if m.Spec.Caller != id.Username {
			// Not this caller's (a digest collision, or a forgery): made
			// this caller's, with its own marks only.
			m.Spec = mcpv1alpha1.McpReadMarkSpec{Caller: id.Username}
		}
		if !rule.RaiseMark(&m.Spec, c.class, name, now) {
			return true
		}
		if g.Marks == nil {
			return g.unrecorded(ctx, c, errors.New("no client for read marks is configured"))
		}
		if exists {
			err = g.Marks.Update(ctx, m)
		} else {
			err = g.Marks.Create(ctx, m)
		}
		if err == nil {
			c.rec.WriteDown, c.rec.MarkClass = writeDownRaised, string(c.class)
			metrics.GatewayReadMarkWrites.WithLabelValues(id.Namespace).Inc()
			return true
		}
		if attempt == 2 || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)) {
			return g.unrecorded(ctx, c, fmt.Errorf("writing the read mark: %w", err))
		}
		// Another replica wrote it, or a person reset it, since it was
		// read: read it again and decide again.
		m = &mcpv1alpha1.McpReadMark{}
		err = g.Marks.Get(ctx, key, m)
		exists = err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return g.unrecorded(ctx, c, fmt.Errorf("reading the read mark: %w", err))
		}
	}
}

// unrecorded logs why the mark could not be raised and records it.
func (g *Gateway) unrecorded(ctx context.Context, c *callScope, err error) bool {
	logging.FromContext(ctx, logging.Gateway).Error(err, "the caller's read mark could not be raised; the result is withheld", "tool", c.key.String(), "callID", c.rec.CallID)
	c.rec.WriteDown, c.rec.MarkClass = writeDownUnrecorded, string(c.class)
	return false
}

// withheldUnrecorded is the result an agent gets in place of one whose
// mark could not be raised.
func withheldUnrecorded() *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "The gateway withheld this result: " +
		"it could not record that this caller read it (McpReadMark), which the write-down rule (McpAccessPolicy spec.writeDown) needs before any result is returned. The call was made."}}}
}

// writeDownAsks reports whether a call decided by pre may need a person's
// approval through the write-down rule: the gateway's own call path then
// leaves it to the SDK's, which asks.
func (g *Gateway) writeDownAsks(id *authn.Identity, pre *decided) bool {
	rule, ok := governance.WriteDownOf(pre.policies, id.PolicyCaller())
	return ok && rule.Action == mcpv1alpha1.WriteDownRequireApproval
}
