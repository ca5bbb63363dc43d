package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// An McpSharedServer reports Ready from its spec and the owner's grant:
// InvalidSpec (and Stalled) while its spec cannot be honoured, Shared or
// NotShared after, and NotShared always with one message, whatever the
// owner's server is or is not.
func TestSetSharedServerConditions(t *testing.T) {
	const gen = 3
	ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Generation: gen}}

	setSharedServerConditions(ss, "spec.server names an McpServer of this namespace", false, time.Now())
	assertConditions(t, ss.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec),
		want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec))

	setSharedServerConditions(ss, "", true, time.Now())
	assertConditions(t, ss.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonShared))

	setSharedServerConditions(ss, "", false, time.Now())
	assertConditions(t, ss.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonNotShared))
	notShared := ss.Status.Conditions[0].Message

	other := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Name: "another", Generation: 1},
		Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: "platform", Name: "secret-server"}}}
	setSharedServerConditions(other, "", false, time.Now())
	if got := other.Status.Conditions[0].Message; got != notShared {
		t.Errorf("NotShared says %q for one server and %q for another: the message must not depend on the owner's server", notShared, got)
	}
}

// ArgumentRulesValid is present only while the McpSharedServer adds rules,
// False naming what does not compile, True when everything does, and
// Unknown while the server is not shared (the rules are not compiled).
func TestSetSharedRulesCondition(t *testing.T) {
	const gen = 2
	ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
	setSharedRulesCondition(ss, true, nil, time.Now())
	if len(ss.Status.Conditions) != 0 {
		t.Fatalf("conditions without rules: %+v", ss.Status.Conditions)
	}
	ss.Spec.ArgumentRules = []mcpv1alpha1.SharedToolRules{{Tool: "send", Rules: []mcpv1alpha1.ArgumentRule{{Name: "x", Expression: "args.x <"}}}}
	setSharedRulesCondition(ss, true, []string{`tool "send": rule "mcpsharedserver/docs/x": does not compile`}, time.Now())
	assertConditions(t, ss.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid))
	if msg := ss.Status.Conditions[0].Message; !strings.Contains(msg, `tool "send": rule "mcpsharedserver/docs/x"`) {
		t.Errorf("message = %q", msg)
	}
	setSharedRulesCondition(ss, true, nil, time.Now())
	assertConditions(t, ss.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	// Not shared: nothing was compiled, and the condition does not say
	// that anything compiles.
	setSharedRulesCondition(ss, false, nil, time.Now())
	assertConditions(t, ss.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionUnknown, mcpv1alpha1.ReasonNotShared))
	if msg := ss.Status.Conditions[0].Message; strings.Contains(msg, "compiles") {
		t.Errorf("message of rules not compiled = %q", msg)
	}
	ss.Spec.ArgumentRules = nil
	setSharedRulesCondition(ss, true, nil, time.Now())
	if len(ss.Status.Conditions) != 0 {
		t.Errorf("the condition outlived the rules: %+v", ss.Status.Conditions)
	}
}
