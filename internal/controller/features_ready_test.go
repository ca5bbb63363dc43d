package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func TestFeatureReadyNamesTheFirstReasonThatApplies(t *testing.T) {
	offered := &metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded}
	gone := &metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionFalse, Reason: mcpv1alpha1.ReasonRemovedFromServer}
	cases := []struct {
		name   string
		s      featureReadiness
		status metav1.ConditionStatus
		reason string
	}{
		{"never imported", featureReadiness{enabled: true, approved: "h", textValid: true}, metav1.ConditionFalse, mcpv1alpha1.ReasonNotImported},
		{"disabled", featureReadiness{approved: "h", current: "h", imported: offered, textValid: true}, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled},
		{"not approved", featureReadiness{enabled: true, current: "h", imported: offered, textValid: true}, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved},
		{"drifted", featureReadiness{enabled: true, approved: "g", current: "h", imported: offered, textValid: true}, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged},
		{"gone from the server", featureReadiness{enabled: true, approved: "h", current: "h", imported: gone, textValid: true}, metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer},
		{"reviewed text not honoured", featureReadiness{enabled: true, approved: "h", current: "h", imported: offered}, metav1.ConditionFalse, mcpv1alpha1.ReasonReviewedTextInvalid},
		{"servable", featureReadiness{enabled: true, approved: "h", current: "h", imported: offered, textValid: true}, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded},
	}
	for _, c := range cases {
		status, reason, message := c.s.ready()
		if status != c.status || reason != c.reason || message == "" {
			t.Errorf("%s: %s %s %q, want %s %s", c.name, status, reason, message, c.status, c.reason)
		}
	}
}
