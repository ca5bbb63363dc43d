package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// A policy reports the conditions its type documents: Ready and Stalled,
// both InvalidSpec with the problem as message, while its spec is invalid,
// and Ready alone once it is valid.
func TestSetPolicyConditions(t *testing.T) {
	const gen = 4
	p := &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Generation: gen}}

	setPolicyConditions(p, "spec.maxDataClass is none of Public, Internal, Confidential, Restricted", time.Now())
	assertConditions(t, p.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec),
		want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec))
	for _, c := range p.Status.Conditions {
		if c.Message != "spec.maxDataClass is none of Public, Internal, Confidential, Restricted" {
			t.Errorf("%s says %q, want the problem", c.Type, c.Message)
		}
	}

	setPolicyConditions(p, "", time.Now())
	assertConditions(t, p.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
}
