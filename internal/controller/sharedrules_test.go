package controller_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// sharedServerStatus polls an McpSharedServer until its controller has
// observed its current generation.
func sharedServerStatus(ns, name string) func(g Gomega) []metav1.Condition {
	return func(g Gomega) []metav1.Condition {
		ss := &mcpv1alpha1.McpSharedServer{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ss)).To(Succeed())
		g.Expect(ss.Status.ObservedGeneration).To(Equal(ss.Generation))
		return ss.Status.Conditions
	}
}

var _ = Describe("McpSharedServer argument rules", func() {
	// The attack: any namespace can name any server in an McpSharedServer,
	// and the controllers compiled its rules on every reconcile whether
	// or not the owner shared the server. Four rules of a legal
	// 3,600-byte pattern, (?:a?){1000} three hundred times, each compiled
	// to 600,000 instructions, took the controllers from 52 to 284 MiB,
	// and the status said every rule compiles.
	It("are not compiled while the server is not shared, and are refused for their patterns once it is", func() {
		ctx := context.Background()
		owner, consumer := newNamespace(), newNamespace()
		srv := createServer(owner, "mail", "http://127.0.0.1:1/mcp")

		pattern := strings.Repeat(`(?:a?){1000}`, 300)
		var rules []mcpv1alpha1.ArgumentRule
		for i := range 4 {
			rules = append(rules, mcpv1alpha1.ArgumentRule{Name: fmt.Sprintf("r%d", i), Expression: `args.to.matches('` + pattern + `')`})
		}
		Expect(k8sClient.Create(ctx, &mcpv1alpha1.McpSharedServer{
			ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "mail"},
			Spec: mcpv1alpha1.McpSharedServerSpec{
				Server:        mcpv1alpha1.SharedServerReference{Namespace: owner, Name: "mail"},
				ArgumentRules: []mcpv1alpha1.SharedToolRules{{Tool: "send", Rules: rules}},
			},
		})).To(Succeed())

		// No grant: nothing is compiled, and the condition says so.
		Eventually(sharedServerStatus(consumer, "mail")).Should(And(
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonNotShared),
			haveCondition(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionUnknown, mcpv1alpha1.ReasonNotShared)))
		cs := sharedServerStatus(consumer, "mail")(Default)
		Expect(meta.FindStatusCondition(cs, mcpv1alpha1.ConditionArgumentRulesValid).Message).NotTo(ContainSubstring("compiles"))

		// The owner grants the namespace: the rules are checked, and
		// refused for their patterns, before any pattern is compiled.
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Sharing = &mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}}
		Expect(k8sClient.Patch(ctx, srv, patch)).To(Succeed())
		Eventually(sharedServerStatus(consumer, "mail")).Should(And(
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonShared),
			haveCondition(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid)))
		cs = sharedServerStatus(consumer, "mail")(Default)
		msg := meta.FindStatusCondition(cs, mcpv1alpha1.ConditionArgumentRulesValid).Message
		Expect(msg).To(ContainSubstring(`tool "send": rule "mcpsharedserver/mail/r0": a regular expression is 3600 bytes long`))

		// The grant is withdrawn: the rules are dropped, and not
		// reported on.
		patch = client.MergeFrom(srv.DeepCopy())
		srv.Spec.Sharing = nil
		Expect(k8sClient.Patch(ctx, srv, patch)).To(Succeed())
		Eventually(sharedServerStatus(consumer, "mail")).Should(
			haveCondition(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionUnknown, mcpv1alpha1.ReasonNotShared))
	})
})
