package governance

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// The no-write-down rule (McpAccessPolicy spec.writeDown, ADR 057): once a
// caller has received a result of a class the rule counts, it may not call
// a tool of a lower class, or one whose reviewed effects are open-world,
// until the rule's window has passed since that read. What a caller has
// read is an McpReadMark in its namespace, which the gateway raises before
// it returns the result.

// Defaults of a write-down rule, as the CRD defaults them.
const (
	DefaultWriteDownWindow = time.Hour
	DefaultWriteDownFrom   = mcpv1alpha1.DataClassInternal
)

// WriteDown is the write-down rule a caller is held to: the strictest of
// the rules of the policies that name it.
type WriteDown struct {
	// Action is Refuse when any of the rules refuses, else
	// RequireApproval.
	Action mcpv1alpha1.WriteDownAction
	// Window is the longest of the rules' windows.
	Window time.Duration
	// From is the lowest class any of the rules counts.
	From mcpv1alpha1.DataClass
}

// WriteDownOf is the rule the policies naming caller hold it to, and
// whether any does. A value the CRD forbids (an unknown action or class)
// never loosens it: an unknown action refuses, an unknown class counts
// every class above Public.
func WriteDownOf(policies []mcpv1alpha1.McpAccessPolicy, caller Caller) (WriteDown, bool) {
	var w WriteDown
	found := false
	for i := range policies {
		p := &policies[i]
		r := p.Spec.WriteDown
		if r == nil || !Names(p, caller) {
			continue
		}
		action, window, from := r.Action, DefaultWriteDownWindow, r.FromDataClass
		if action != mcpv1alpha1.WriteDownRequireApproval {
			action = mcpv1alpha1.WriteDownRefuse
		}
		if r.Window != nil && r.Window.Duration > 0 {
			window = r.Window.Duration
		}
		switch {
		case from == "":
			from = DefaultWriteDownFrom
		case !from.Valid() || from == mcpv1alpha1.DataClassPublic:
			from = mcpv1alpha1.DataClassInternal
		}
		if !found {
			w, found = WriteDown{Action: action, Window: window, From: from}, true
			continue
		}
		if action == mcpv1alpha1.WriteDownRefuse {
			w.Action = action
		}
		w.Window = max(w.Window, window)
		if from.Rank() < w.From.Rank() {
			w.From = from
		}
	}
	return w, found
}

// Counts reports whether a result of class raises the caller's mark.
func (w WriteDown) Counts(class mcpv1alpha1.DataClass) bool {
	return class.Rank() >= w.From.Rank()
}

// HighWater is the mark of the most sensitive class the rule counts that
// still holds at now; ok is false when none does.
func (w WriteDown) HighWater(m *mcpv1alpha1.McpReadMark, now time.Time) (mark mcpv1alpha1.ReadMark, ok bool) {
	if m == nil {
		return mark, false
	}
	for _, e := range m.Spec.Marks {
		if !w.Counts(e.DataClass) || !now.Before(e.ExpiresAt.Time) {
			continue
		}
		if !ok || e.DataClass.Rank() > mark.DataClass.Rank() {
			mark, ok = e, true
		}
	}
	return mark, ok
}

// HoldsBack reports whether a mark of class markClass holds back a call of
// a tool of class class with the given effects: a lower class, or an
// open-world tool whatever its class.
func HoldsBack(markClass, class mcpv1alpha1.DataClass, e Effects) bool {
	return e.OpenWorld || class.Rank() < markClass.Rank()
}

// RaiseMark records in spec that the caller read a result of class from
// tool at now, and reports whether spec changed (and so must be written).
// A write is needed only when no mark of that class or a higher one holds
// for at least the window from now: a mark is set to hold for one and a
// half windows, so that a caller that goes on reading is written at most
// once every half window, and every read is held back for at least the
// window. Marks that have passed are dropped.
func (w WriteDown) RaiseMark(spec *mcpv1alpha1.McpReadMarkSpec, class mcpv1alpha1.DataClass, tool string, now time.Time) bool {
	if !w.MustRaise(spec, class, now) {
		return false
	}
	kept := spec.Marks[:0]
	for _, e := range spec.Marks {
		if e.DataClass != class && now.Before(e.ExpiresAt.Time) {
			kept = append(kept, e)
		}
	}
	spec.Marks = append(kept, mcpv1alpha1.ReadMark{
		DataClass: class,
		Tool:      tool,
		ReadAt:    metav1.NewTime(now.UTC().Truncate(time.Second)),
		ExpiresAt: metav1.NewTime(now.Add(w.Window + w.Window/2).UTC().Truncate(time.Second).Add(time.Second)),
	})
	return true
}

// MustRaise reports whether a read of class at now must be written to
// spec (RaiseMark), without changing it.
func (w WriteDown) MustRaise(spec *mcpv1alpha1.McpReadMarkSpec, class mcpv1alpha1.DataClass, now time.Time) bool {
	if !w.Counts(class) {
		return false
	}
	needed := now.Add(w.Window)
	for _, e := range spec.Marks {
		if e.DataClass.Rank() >= class.Rank() && !e.ExpiresAt.Time.Before(needed) {
			return false
		}
	}
	return true
}

// ReadMarkName is the name of the McpReadMark of the caller with user
// name caller: a digest, since a user name need not be a valid object
// name.
func ReadMarkName(caller string) string {
	h := sha256.Sum256([]byte(caller))
	return "caller-" + hex.EncodeToString(h[:20])
}
