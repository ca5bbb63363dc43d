package budget_test

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
)

// People of one namespace have a budget each: one person over theirs does
// not refuse another, though neither is a ServiceAccount.
func TestEachPersonHasABudgetOfTheirOwn(t *testing.T) {
	b := budget.NewBudgeter(budget.Budgets{ServiceAccountRate: 1, ServiceAccountBurst: 2}, testingclock.NewFakeClock(time.Now()))
	alice := &authn.Identity{Username: "alice@example.test", Groups: []string{"oidc:support"}, Namespace: "team-a"}
	bob := &authn.Identity{Username: "bob@example.test", Groups: []string{"oidc:support"}, Namespace: "team-a"}
	for range 2 {
		if _, over := b.Admit(alice, false); over != nil {
			t.Fatalf("alice within her burst: %+v", over)
		}
	}
	if _, over := b.Admit(alice, false); over == nil || over.Scope != budget.BudgetServiceAccount {
		t.Fatalf("alice past her burst: %+v, want refused by her own budget", over)
	}
	if _, over := b.Admit(bob, false); over != nil {
		t.Errorf("bob refused after alice spent her budget: %+v", over)
	}
}
