package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// patchToolSpec changes an McpTool's spec the way kubectl patch does.
func patchToolSpec(ns, name string, change func(*mcpv1alpha1.McpToolSpec)) {
	t := getTool(ns, name)
	patch := client.MergeFrom(t.DeepCopy())
	change(&t.Spec)
	ExpectWithOffset(1, k8sClient.Patch(context.Background(), t, patch, client.FieldOwner("kubectl-patch"))).To(Succeed())
}

// conditionMessage polls the message of one condition of a tool.
func conditionMessage(ns, name, typ string) func(g Gomega) string {
	return func(g Gomega) string {
		c := meta.FindStatusCondition(toolConditions(ns, name)(g), typ)
		g.Expect(c).NotTo(BeNil(), typ)
		return c.Message
	}
}

var _ = Describe("Reviewed text and argument rules", func() {
	It("keeps a tool whose rules or reviewed text cannot be honoured unservable, with a condition that says why", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "gh", up.URL)
		waitReady(ns, "gh", 30*time.Second)
		echo := toolObjectName("gh", mcpserver.ToolEcho)
		enableApproved(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Expect(getTool(ns, echo).Status.Conditions).NotTo(ContainElement(HaveField("Type", mcpv1alpha1.ConditionArgumentRulesValid)),
			"a spec without rules has no rules condition")

		By("a rule that does not compile")
		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{
				{Name: "short-text", Expression: `args.text.size() < `, Message: "keep it short"},
			}}
		})
		Eventually(toolConditions(ns, echo)).Should(And(
			haveCondition(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid)))
		Expect(conditionMessage(ns, echo, mcpv1alpha1.ConditionArgumentRulesValid)(Default)).To(ContainSubstring(`rule "short-text": does not compile`))

		By("a fixed argument the server's schema does not have, and one of the wrong type")
		const marker = "zq-fixed-value-marker"
		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{
				Fixed: []mcpv1alpha1.FixedArgument{{Name: "channel", Value: `"ops"`}, {Name: "text", Value: `{"k":"` + marker + `"}`}},
				Rules: []mcpv1alpha1.ArgumentRule{{Name: "short-text", Expression: `args.text.size() < 100`}},
			}
		})
		Eventually(conditionMessage(ns, echo, mcpv1alpha1.ConditionArgumentRulesValid)).Should(And(
			ContainSubstring(`fixed argument "channel": the tool's input schema has no top-level argument of this name`),
			ContainSubstring(`fixed argument "text": the value is not of the argument's type (string)`)))
		Expect(conditionMessage(ns, echo, mcpv1alpha1.ConditionArgumentRulesValid)(Default)).NotTo(ContainSubstring(marker), "a condition never shows a fixed value")
		Expect(toolConditions(ns, echo)(Default)).To(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid))

		By("rules that can be honoured")
		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules.Fixed = []mcpv1alpha1.FixedArgument{{Name: "text", Value: `"hello"`}}
		})
		Eventually(toolConditions(ns, echo)).Should(And(
			haveCondition(mcpv1alpha1.ConditionArgumentRulesValid, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)))

		By("reviewed text of a parameter the schema does not have")
		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ReviewedText = &mcpv1alpha1.ReviewedText{
				Description: "Returns the text it is given. Nothing else.",
				Parameters:  []mcpv1alpha1.ParameterText{{Name: "language", Description: "unused"}},
			}
		})
		Eventually(toolConditions(ns, echo)).Should(And(
			haveCondition(mcpv1alpha1.ConditionReviewedTextValid, metav1.ConditionFalse, mcpv1alpha1.ReasonReviewedTextInvalid),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonReviewedTextInvalid)))
		Expect(conditionMessage(ns, echo, mcpv1alpha1.ConditionReviewedTextValid)(Default)).To(ContainSubstring(`parameter "language"`))

		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) { s.ReviewedText.Parameters = nil })
		Eventually(toolConditions(ns, echo)).Should(And(
			haveCondition(mcpv1alpha1.ConditionReviewedTextValid, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)))

		By("removing both: their conditions go with them")
		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) { s.ReviewedText, s.ArgumentRules = nil, nil })
		Eventually(func(g Gomega) []string {
			var types []string
			for _, c := range toolConditions(ns, echo)(g) {
				types = append(types, c.Type)
			}
			return types
		}).Should(ConsistOf(mcpv1alpha1.ConditionReady, mcpv1alpha1.ConditionImported))
	})

	It("still needs a new approval when the server changes a definition whose text is reviewed", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true})
		createServer(ns, "gh", up.URL)
		waitReady(ns, "gh", 30*time.Second)
		echo := toolObjectName("gh", mcpserver.ToolEcho)
		approved := enableApproved(ns, echo)
		patchToolSpec(ns, echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ReviewedText = &mcpv1alpha1.ReviewedText{Title: "Echo", Description: "Returns the text it is given."}
		})
		Eventually(toolConditions(ns, echo)).Should(And(
			haveCondition(mcpv1alpha1.ConditionReviewedTextValid, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)))
		Expect(getTool(ns, echo).Status.DefinitionHash).To(Equal(approved), "reviewed text leaves the server's definition, and its hash, alone")

		// The agent would never read the new text, but the server's tool
		// is not the one approved any more.
		changed := "Returns its text argument, and now also mails it to someone."
		Expect(up.SetToolDescription(mcpserver.ToolEcho, changed)).To(Succeed())
		waitImportHandled(ns, "gh", requestImport(ns, "gh"))
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged))
		t := getTool(ns, echo)
		Expect(t.Status.Description).To(Equal(changed), "status keeps the server's own text for reviewers")
		Expect(t.Status.ApprovedDefinition).NotTo(BeNil())
		Expect(t.Status.ApprovedDefinition.Description).To(Equal("Returns its text argument."))
		Expect(t.Spec.ReviewedText.Description).To(Equal("Returns the text it is given."))

		approve(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})
})
