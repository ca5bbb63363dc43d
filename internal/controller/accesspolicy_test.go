package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// accessPolicy declares the policy "agents" for the named ServiceAccounts.
func accessPolicy(ns string, serviceAccounts ...string) {
	Expect(k8sClient.Create(context.Background(), &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: serviceAccounts, MaxDataClass: mcpv1alpha1.DataClassInternal},
	})).To(Succeed())
}

func getAccessPolicy(g Gomega, ns string) *mcpv1alpha1.McpAccessPolicy {
	var p mcpv1alpha1.McpAccessPolicy
	g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "agents"}, &p)).To(Succeed())
	return &p
}

// reconciledPolicy polls the policy until its controller has observed its
// current generation.
func reconciledPolicy(ns string) func(g Gomega) *mcpv1alpha1.McpAccessPolicy {
	return func(g Gomega) *mcpv1alpha1.McpAccessPolicy {
		p := getAccessPolicy(g, ns)
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		return p
	}
}

var _ = Describe("McpAccessPolicy", func() {
	It("is Stalled while a wildcard stands beside names, and Ready once the spec is fixed, with one status write per generation", func() {
		ns := newNamespace()
		policyWrites := func() int { return len(requests.writes(0, "/namespaces/"+ns+"/mcpaccesspolicies/agents/status")) }

		// The API server accepts the spec; only the controller can say it
		// is contradictory.
		accessPolicy(ns, "support-agent", "*")
		p := reconciledPolicy(ns)
		Eventually(p).Should(HaveField("Status.Conditions", And(
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec),
			haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec))))
		invalid := getAccessPolicy(Default, ns)
		ready := meta.FindStatusCondition(invalid.Status.Conditions, mcpv1alpha1.ConditionReady)
		Expect(ready.Message).To(ContainSubstring(`spec.serviceAccounts lists "*"`), "the message names the field")
		Expect(ready.ObservedGeneration).To(Equal(invalid.Generation))
		Consistently(policyWrites, settle).Should(Equal(1), "the first reconcile writes status once, and a stall is not retried")

		// A label change (it may move the policy into a shard) is looked at
		// again, and writes nothing: the status depends on the spec alone.
		invalid.Labels = map[string]string{"team": "a"}
		Expect(k8sClient.Update(context.Background(), invalid)).To(Succeed())
		Consistently(policyWrites, settle).Should(Equal(1), "an unchanged spec writes no status")

		fixed := getAccessPolicy(Default, ns)
		before := fixed.DeepCopy()
		fixed.Spec.ServiceAccounts = []string{"*"}
		Expect(k8sClient.Patch(context.Background(), fixed, client.MergeFrom(before))).To(Succeed())
		Eventually(p).Should(HaveField("Status.Conditions", haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)))
		Expect(getAccessPolicy(Default, ns).Status.Conditions).NotTo(ContainElement(HaveField("Type", mcpv1alpha1.ConditionStalled)))
		Consistently(policyWrites, settle).Should(Equal(2), "one status write for the fixed generation")
	})
})
