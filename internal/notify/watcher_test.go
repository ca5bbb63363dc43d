package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Notify(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Type)
	}
	return out
}

// staticKeys are approval keys that never change.
type staticKeys struct{ current, previous []byte }

func (k staticKeys) SealKeys(context.Context, bool) ([]byte, []byte, error) {
	return k.current, k.previous, nil
}

var testKeys = staticKeys{current: []byte(strings.Repeat("k", 32))}

// seal seals a as the gateway does: HMAC-SHA256 under key of
// governance.SealMessage, base64url without padding.
func seal(a *mcpv1alpha1.McpCallApproval, key []byte) *mcpv1alpha1.McpCallApproval {
	m := hmac.New(sha256.New, key)
	m.Write(governance.SealMessage(a))
	a.Spec.Seal = base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	return a
}

func TestTheWatcherSendsWhatAPersonShouldLookAt(t *testing.T) {
	rec := &recorder{}
	w := &Watcher{Notifier: rec, Seals: testKeys}

	a := seal(approval("call-1"), testKeys.current)
	w.approvalAdded(a)
	expired := approval("call-0")
	expired.Spec.ExpiresAt.Time = time.Now().Add(-time.Minute)
	w.approvalAdded(seal(expired, testKeys.current))

	decided := a.DeepCopy()
	decided.Spec.Decision, decided.Spec.DecidedBy = mcpv1alpha1.CallApproved, "alice"
	w.approvalUpdated(a, decided)
	// Used afterwards: not a decision.
	used := decided.DeepCopy()
	used.Status.ConsumedAt = &used.CreationTimestamp
	w.approvalUpdated(decided, used)

	tool := &mcpv1alpha1.McpTool{}
	tool.Name, tool.Namespace = "docs.echo", "agents"
	tool.Spec.ApprovedDefinitionHash = hashOf("a")
	tool.Status.DefinitionHash = hashOf("a")
	drifted := tool.DeepCopy()
	drifted.Status.DefinitionHash = hashOf("b")
	drifted.Status.Drift = &mcpv1alpha1.DefinitionDrift{FromHash: hashOf("a"), ToHash: hashOf("b"), Categories: []mcpv1alpha1.DriftCategory{"SchemaWidened"}}
	w.toolUpdated(tool, drifted)
	// Approving the new definition is no drift, nor is a first import,
	// nor an update that keeps the definition.
	approved := drifted.DeepCopy()
	approved.Spec.ApprovedDefinitionHash = hashOf("b")
	w.toolUpdated(drifted, approved)
	fresh := &mcpv1alpha1.McpTool{}
	imported := fresh.DeepCopy()
	imported.Status.DefinitionHash = hashOf("c")
	w.toolUpdated(fresh, imported)
	w.toolUpdated(approved, approved.DeepCopy())
	// A new tool nobody approved changing its definition is nothing to
	// report either: nothing served changed.
	unapproved := imported.DeepCopy()
	unapproved.Status.DefinitionHash = hashOf("d")
	w.toolUpdated(imported, unapproved)

	got := rec.types()
	want := []string{TypeApprovalCreated, TypeApprovalDecided, TypeDefinitionDrifted}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	d := rec.events[2].Data.(DriftData)
	if d.PreviousHash != hashOf("a") || d.CurrentHash != hashOf("b") || d.ApprovedHash != hashOf("a") || len(d.Categories) != 1 || d.Categories[0] != "SchemaWidened" {
		t.Errorf("drift data %+v", d)
	}
	if dec := rec.events[1].Data.(ApprovalData); dec.Decision != "Approved" || dec.DecidedBy != "alice" {
		t.Errorf("decision data %+v", dec)
	}
}

// The attacks: a spent ClientElicitation answer (the gateway's mark of an
// approved call that already ran, created undecided) announced as a call
// that waits; an McpCallApproval written by whoever may create them, not
// by the gateway, announced as real, created or decided. Neither is
// announced; a sealed one is, under the current or the previous key.
func TestSpentAnswersAndUnsealedApprovalsAreNotAnnounced(t *testing.T) {
	rec := &recorder{}
	rotated := staticKeys{current: []byte(strings.Repeat("n", 32)), previous: testKeys.current}
	w := &Watcher{Notifier: rec, Seals: rotated}

	spent := seal(approval(governance.SpentAnswerPrefix+"3f2a9c"), testKeys.current)
	w.approvalAdded(spent)

	forged := approval("call-forged")
	forged.Spec.Seal = "bm90LWEtc2VhbA"
	w.approvalAdded(forged)
	decided := forged.DeepCopy()
	decided.Spec.Decision, decided.Spec.DecidedBy = mcpv1alpha1.CallApproved, "alice"
	w.approvalUpdated(forged, decided)
	// A real seal copied onto another call does not verify either.
	copied := approval("call-copied")
	copied.Spec.Seal = seal(approval("call-real"), testKeys.current).Spec.Seal
	w.approvalAdded(copied)
	if got := rec.types(); len(got) != 0 {
		t.Fatalf("announced %v for a spent answer, a forged and a copied seal", got)
	}

	// The previous key still verifies (a rotation just happened).
	w.approvalAdded(seal(approval("call-real"), testKeys.current))
	if got := rec.types(); len(got) != 1 || got[0] != TypeApprovalCreated {
		t.Fatalf("a sealed approval: %v", got)
	}
	// Without keys nothing about approvals is announced.
	none := &Watcher{Notifier: rec}
	none.approvalAdded(seal(approval("call-other"), testKeys.current))
	if got := rec.types(); len(got) != 1 {
		t.Errorf("announced without keys to check the seal: %v", got)
	}
}

func hashOf(c string) string {
	h := "sha256:"
	for range 64 {
		h += c
	}
	return h
}
