package validation

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

var _ = Describe("McpCallApproval", func() {
	newApproval := func(ns string) *mcpv1alpha1.McpCallApproval {
		a := &mcpv1alpha1.McpCallApproval{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-1"},
			Spec: mcpv1alpha1.McpCallApprovalSpec{
				Tool: "docs.echo", LocalName: "mcp_docs_echo", Server: "docs", Caller: "system:serviceaccount:team:bot",
				CallerGroups: []string{"system:serviceaccounts"}, DataClass: mcpv1alpha1.DataClassInternal,
				ArgumentsHash: "sha256:" + strings.Repeat("a", 64), DefinitionHash: "sha256:d",
				ExpiresAt: metav1.Time{Time: time.Now().Add(time.Hour).Truncate(time.Second)}, Seal: "seal",
			},
		}
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		return a
	}

	It("defaults the decision to Pending", func() {
		a := newApproval(newNamespace())
		got := &mcpv1alpha1.McpCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), got)).To(Succeed())
		Expect(got.Spec.Decision).To(Equal(mcpv1alpha1.CallPending))
	})

	DescribeTable("refuses a change to the call it is for",
		func(edit func(*mcpv1alpha1.McpCallApprovalSpec)) {
			a := newApproval(newNamespace())
			edit(&a.Spec)
			err := k8sClient.Update(ctx, a)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("the call an approval is for cannot be changed"))
		},
		Entry("the caller", func(s *mcpv1alpha1.McpCallApprovalSpec) { s.Caller = "system:serviceaccount:team:other" }),
		Entry("the caller's groups", func(s *mcpv1alpha1.McpCallApprovalSpec) { s.CallerGroups = nil }),
		Entry("the arguments hash", func(s *mcpv1alpha1.McpCallApprovalSpec) { s.ArgumentsHash = "sha256:" + strings.Repeat("b", 64) }),
		Entry("the expiry", func(s *mcpv1alpha1.McpCallApprovalSpec) { s.ExpiresAt.Time = s.ExpiresAt.Add(time.Hour) }),
		Entry("the tool", func(s *mcpv1alpha1.McpCallApprovalSpec) { s.Tool = "docs.other" }),
	)

	It("takes a decision once, with who made it", func() {
		a := newApproval(newNamespace())
		a.Spec.Decision = mcpv1alpha1.CallApproved
		err := k8sClient.Update(ctx, a)
		Expect(err).To(HaveOccurred(), "a decision without decidedBy")
		Expect(err.Error()).To(ContainSubstring("decidedBy names who decided"))

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		a.Spec.Reason = "a note before any decision"
		Expect(k8sClient.Update(ctx, a)).NotTo(Succeed())

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		a.Spec.Decision, a.Spec.DecidedBy = mcpv1alpha1.CallApproved, "alice"
		Expect(k8sClient.Update(ctx, a)).To(Succeed())

		for what, edit := range map[string]func(*mcpv1alpha1.McpCallApprovalSpec){
			"to Denied":   func(s *mcpv1alpha1.McpCallApprovalSpec) { s.Decision = mcpv1alpha1.CallDenied },
			"to Pending":  func(s *mcpv1alpha1.McpCallApprovalSpec) { s.Decision, s.DecidedBy = mcpv1alpha1.CallPending, "" },
			"its decider": func(s *mcpv1alpha1.McpCallApprovalSpec) { s.DecidedBy = "bob" },
			"its reason":  func(s *mcpv1alpha1.McpCallApprovalSpec) { s.Reason = "later" },
		} {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
			edit(&a.Spec)
			err := k8sClient.Update(ctx, a)
			Expect(err).To(HaveOccurred(), what)
			Expect(err.Error()).To(ContainSubstring("a decision is final"), what)
		}
	})

	It("refuses a decision that is not Pending, Approved or Denied", func() {
		a := newApproval(newNamespace())
		a.Spec.Decision, a.Spec.DecidedBy = "Maybe", "alice"
		Expect(k8sClient.Update(ctx, a)).NotTo(Succeed())
	})

	It("keeps an approval used once it is: consumedAt and callID cannot be cleared or changed", func() {
		a := newApproval(newNamespace())
		used := metav1.NewTime(time.Now().Truncate(time.Second))
		a.Status.ConsumedAt, a.Status.CallID = &used, "call-1"
		Expect(k8sClient.Status().Update(ctx, a)).To(Succeed())

		for what, edit := range map[string]func(*mcpv1alpha1.McpCallApprovalStatus){
			"cleared":         func(s *mcpv1alpha1.McpCallApprovalStatus) { s.ConsumedAt = nil },
			"cleared with ID": func(s *mcpv1alpha1.McpCallApprovalStatus) { *s = mcpv1alpha1.McpCallApprovalStatus{} },
			"moved": func(s *mcpv1alpha1.McpCallApprovalStatus) {
				later := metav1.NewTime(used.Add(time.Hour))
				s.ConsumedAt = &later
			},
			"another call's ID": func(s *mcpv1alpha1.McpCallApprovalStatus) { s.CallID = "call-2" },
		} {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
			edit(&a.Status)
			err := k8sClient.Status().Update(ctx, a)
			Expect(err).To(HaveOccurred(), what)
			Expect(err.Error()).To(ContainSubstring("an approval once used stays used"), what)
		}
		// A merge patch that drops the whole status is refused too.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		err := k8sClient.Status().Patch(ctx, a, client.RawPatch(types.MergePatchType, []byte(`{"status":null}`)))
		Expect(err).To(HaveOccurred())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		Expect(a.Status.ConsumedAt).NotTo(BeNil())
	})
})
