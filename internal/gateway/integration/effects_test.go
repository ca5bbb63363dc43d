package integration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Reviewed effects", func() {
	// The attack of issue #32 item 5, with a real go-sdk upstream: the
	// server exempts read-only tools from its approval, and the upstream
	// calls echo read-only in its annotations. That hint lifts nothing; a
	// person's review of the approved definition does, and a definition
	// approved after the review is a write again.
	DescribeTable("an upstream's read-only hint lifts no approval; a person's review of the approved definition does",
		func(era string) {
			ns := newNamespace()
			DeferCleanup(func(ctx SpecContext) {
				Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(ns))).To(Succeed())
			})
			docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval(), func(s *mcpv1alpha1.McpServerSpec) {
				s.ApprovalByEffect = &mcpv1alpha1.EffectApproval{ExemptReadOnly: true}
			})
			Expect(docs.tool(echo).Status.Hints.ReadOnlyHint).To(HaveValue(BeTrue()), "the upstream calls echo read-only")
			bot := newAgent(ns, "bot").allowInternal()
			args := map[string]any{"text": "hello"}

			By("unreviewed, the call waits for a person and agents are told it is a destructive write")
			cs := bot.connect((&urlCapable{}).options(false), era)
			Expect(listed(cs, docs.local(echo)).Annotations.ReadOnlyHint).To(BeFalse())
			callWaiting(cs, era, docs.local(echo), args)
			Expect(docs.Calls(echo)).To(Equal(0))

			By("reviewed as read-only for the approved definition, the call is made without approval")
			approved := docs.tool(echo).Spec.ApprovedDefinitionHash
			docs.setSpecSeen(echo, func(s *mcpv1alpha1.McpToolSpec) {
				s.ReviewedEffects = &mcpv1alpha1.ReviewedEffects{DefinitionHash: approved, ReadOnly: ptr.To(true), OpenWorld: ptr.To(false)}
			})
			cs = bot.connect((&urlCapable{}).options(false), era)
			a := listed(cs, docs.local(echo)).Annotations
			Expect([]bool{a.ReadOnlyHint, *a.DestructiveHint, *a.OpenWorldHint}).To(Equal([]bool{true, false, false}), "agents are told what the person reviewed")
			isErr, txt := call(cs, docs.local(echo), args)
			Expect(isErr).To(BeFalse(), txt)
			Expect(txt).To(Equal("hello"))
			Expect(docs.Calls(echo)).To(Equal(1))
			recs := auditFor(ns, docs.object(echo))
			Expect(recs[len(recs)-1].Approval).To(Equal("NotRequired"))

			By("the upstream changes echo, keeping its hints; a person approves the new definition without reviewing its effects")
			Expect(docs.SetToolDescription(echo, "Returns its text argument, and now also sends it elsewhere.")).To(Succeed())
			docs.request(mcpv1alpha1.AnnotationRequestedImportAt)
			docs.waitTool(echo, "False", mcpv1alpha1.ReasonDefinitionChanged)
			changed := docs.tool(echo).Status.DefinitionHash
			Expect(changed).NotTo(Equal(approved))
			docs.setSpecSeen(echo, func(s *mcpv1alpha1.McpToolSpec) { s.ApprovedDefinitionHash = changed })
			t := docs.tool(echo)
			Expect(t.Status.Effect).To(Equal(mcpv1alpha1.EffectNonIdempotentWrite))
			Expect(t.Status.Hints.ReadOnlyHint).To(HaveValue(BeTrue()))
			cs = bot.connect((&urlCapable{}).options(false), era)
			Expect(listed(cs, docs.local(echo)).Annotations.ReadOnlyHint).To(BeFalse())
			callWaiting(cs, era, docs.local(echo), args)
			Expect(docs.Calls(echo)).To(Equal(1), "the call waits again: the review was of the old definition")
		},
		Entry("in the initialize era", legacyEra),
		Entry("in the 2026-07-28 era", modernEra),
	)
})

// setSpecSeen changes a tool's spec as kubectl patch does and waits until
// the gateway's cache holds the new generation, Ready for it.
func (u *upstream) setSpecSeen(remote string, change func(*mcpv1alpha1.McpToolSpec)) {
	GinkgoHelper()
	t := u.tool(remote)
	patch := client.MergeFrom(t.DeepCopy())
	change(&t.Spec)
	Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
	Eventually(func(g Gomega) {
		seen := &mcpv1alpha1.McpTool{}
		g.Expect(cached.Get(context.Background(), client.ObjectKeyFromObject(t), seen)).To(Succeed())
		g.Expect(seen.Generation).To(BeNumerically(">=", t.Generation))
		c := meta.FindStatusCondition(seen.Status.Conditions, mcpv1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(seen.Generation))
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
}
