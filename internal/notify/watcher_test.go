package notify

import (
	"sync"
	"testing"
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
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

func TestTheWatcherSendsWhatAPersonShouldLookAt(t *testing.T) {
	rec := &recorder{}
	w := &Watcher{Notifier: rec}

	a := approval("call-1")
	w.approvalAdded(a)
	expired := approval("call-0")
	expired.Spec.ExpiresAt.Time = time.Now().Add(-time.Minute)
	w.approvalAdded(expired)

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

func hashOf(c string) string {
	h := "sha256:"
	for range 64 {
		h += c
	}
	return h
}
