package integration_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// consumerRules are rules a consuming namespace adds to the shared echo.
func consumerRules(rules ...mcpv1alpha1.ArgumentRule) func(*mcpv1alpha1.McpSharedServerSpec) {
	return func(spec *mcpv1alpha1.McpSharedServerSpec) {
		spec.ArgumentRules = []mcpv1alpha1.SharedToolRules{{Tool: echo, Rules: rules}}
	}
}

// sharedRulesValid waits until the McpSharedServer's ArgumentRulesValid,
// for its current generation, has the status given, and returns it.
func sharedRulesValid(ss *mcpv1alpha1.McpSharedServer, status metav1.ConditionStatus) metav1.Condition {
	GinkgoHelper()
	var out metav1.Condition
	Eventually(func(g Gomega) {
		got := &mcpv1alpha1.McpSharedServer{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionArgumentRulesValid)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(c.Status).To(Equal(status))
		out = *c
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	return out
}

// lastShared is the last audit record of a call from ns of a shared tool.
func lastShared(ns string) auditRecord {
	GinkgoHelper()
	recs := sharedAudit(ns)
	Expect(recs).NotTo(BeEmpty())
	return recs[len(recs)-1]
}

var _ = Describe("A consuming namespace's argument rules for a shared tool", func() {
	It("apply after the owner's, in that namespace only, and can never remove the owner's", func() {
		owner := newNamespace()
		docs := newUpstream(owner, "docs", mcpserver.Options{}, []string{echo})
		docs.setSpec(echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{
				{Name: "no-secrets", Expression: `!args.text.contains('secret')`, Message: "no secrets in greetings"},
			}}
		}, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		strict, lax := consumerNamespace(), consumerNamespace()
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{strict, lax}})
		// Both consumers name their McpSharedServer alike: only the
		// namespace tells their rules apart.
		s := accept(strict, "docs", docs, consumerRules(mcpv1alpha1.ArgumentRule{
			Name: "short", Expression: `args.text.size() <= 12`, Message: "keep greetings short",
		}))
		l := accept(lax, "docs", docs, nil)
		sharedReady(s, mcpv1alpha1.ReasonShared)
		sharedReady(l, mcpv1alpha1.ReasonShared)
		valid := sharedRulesValid(s, metav1.ConditionTrue)
		Expect(valid.Reason).To(Equal(mcpv1alpha1.ReasonSucceeded))
		sa, la := newAgent(strict, "bot").allowInternal(), newAgent(lax, "bot").allowInternal()
		name := toolname.SharedLocalName("docs", echo)
		scs, lcs := sa.connect(nil, legacyEra), la.connect(nil, modernEra)
		Expect(toolNames(scs)).To(ContainElement(name), "a tool with valid added rules is listed")

		By("the consumer's rule refuses a call the owner's rules allow, naming the rule and whose it is, never the arguments")
		const long = "zq-long-greeting-marker"
		isErr, msg := call(scs, name, map[string]any{"text": long})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring(`the arguments break the rule "mcpsharedserver/docs/short": keep greetings short`))
		Expect(msg).NotTo(ContainSubstring(long))
		Expect(docs.Calls(echo)).To(BeZero(), "nothing was sent")
		r := lastShared(strict)
		Expect([]string{r.Phase, r.Reason, r.Detail, r.SharedServer, r.ServerNamespace}).To(Equal(
			[]string{audit.PhaseDenied, audit.DenyArgumentRuleFailed, "mcpsharedserver/docs/short", "docs", owner}))
		Expect(r.ArgumentsHash).To(Equal(hashOf(map[string]any{"text": long})))

		By("another consumer of the same server is not bound by them")
		isErr, msg = call(lcs, name, map[string]any{"text": long})
		Expect(isErr).To(BeFalse(), msg)
		Expect(msg).To(Equal(long))
		Expect(docs.Calls(echo)).To(Equal(1))

		By("a call both allow is sent, its record hashing the arguments as sent upstream")
		isErr, msg = call(scs, name, map[string]any{"text": "hi"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(docs.Calls(echo)).To(Equal(2))
		r = lastShared(strict)
		Expect([]string{r.Phase, r.ArgumentsHash}).To(Equal([]string{audit.PhaseAfter, hashOf(map[string]any{"text": "hi"})}))

		By("the owner's rules apply first, in every consuming namespace")
		isErr, msg = call(scs, name, map[string]any{"text": "zq-secret"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring(`the arguments break the rule "no-secrets"`))
		Expect(msg).NotTo(ContainSubstring("zq-secret"))
		Expect([]string{lastShared(strict).Reason, lastShared(strict).Detail}).To(Equal([]string{audit.DenyArgumentRuleFailed, "no-secrets"}))
		isErr, _ = call(lcs, name, map[string]any{"text": "zq-secret"})
		Expect(isErr).To(BeTrue())
		Expect(lastShared(lax).Detail).To(Equal("no-secrets"))

		By("a consumer rule named like the owner's, allowing anything, removes nothing")
		patchShared(s, consumerRules(
			mcpv1alpha1.ArgumentRule{Name: "no-secrets", Expression: `true`},
			mcpv1alpha1.ArgumentRule{Name: "short", Expression: `args.text.size() <= 12`, Message: "keep greetings short"},
		))
		sharedRulesValid(s, metav1.ConditionTrue)
		isErr, msg = call(scs, name, map[string]any{"text": "zq-secret"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring(`the arguments break the rule "no-secrets"`))
		Expect(lastShared(strict).Detail).To(Equal("no-secrets"), "the owner's rule refused it")
		Expect(docs.Calls(echo)).To(Equal(2))

		By("the API has no field through which a consumer fixes an argument")
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(mcpv1alpha1.GroupVersion.String())
		u.SetKind("McpSharedServer")
		u.SetNamespace(strict)
		u.SetName("fixer")
		u.Object["spec"] = map[string]any{
			"server": map[string]any{"namespace": owner, "name": "docs"},
			"argumentRules": []any{map[string]any{
				"tool":  echo,
				"fixed": []any{map[string]any{"name": "text", "value": `"zq-fixed"`}},
				"rules": []any{map[string]any{"name": "any", "expression": "true"}},
			}},
		}
		err := k8sClient.Create(context.Background(), u, client.FieldValidation("Strict"), client.DryRunAll)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`unknown field "spec.argumentRules[0].fixed"`))

		all := strings.Join(auditLog.all(), "\n")
		Expect(all).NotTo(ContainSubstring(long))
		Expect(all).NotTo(ContainSubstring("zq-secret"))
	})

	It("that do not compile are a condition on the McpSharedServer, and the tool is neither listed nor called there", func() {
		owner := newNamespace()
		docs := newUpstream(owner, "docs", mcpserver.Options{}, []string{echo})
		broken, other := consumerNamespace(), consumerNamespace()
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{broken, other}})
		b := accept(broken, "docs", docs, consumerRules(
			mcpv1alpha1.ArgumentRule{Name: "fine", Expression: `args.text.size() < 100`},
			mcpv1alpha1.ArgumentRule{Name: "unfinished", Expression: `args.text.size() <`},
		))
		o := accept(other, "docs", docs, nil)
		sharedReady(b, mcpv1alpha1.ReasonShared)
		sharedReady(o, mcpv1alpha1.ReasonShared)
		name := toolname.SharedLocalName("docs", echo)

		c := sharedRulesValid(b, metav1.ConditionFalse)
		Expect(c.Reason).To(Equal(mcpv1alpha1.ReasonArgumentRulesInvalid))
		Expect(c.Message).To(ContainSubstring(`tool "echo": rule "mcpsharedserver/docs/unfinished": does not compile`))
		Expect(c.Message).NotTo(ContainSubstring(`"mcpsharedserver/docs/fine"`))

		ba, oa := newAgent(broken, "bot").allowInternal(), newAgent(other, "bot").allowInternal()
		for _, era := range []string{legacyEra, modernEra} {
			cs := ba.connect(nil, era)
			Expect(toolNames(cs)).NotTo(ContainElement(name), era)
			isErr, msg := call(cs, name, map[string]any{"text": "x"})
			Expect(isErr).To(BeTrue(), era)
			Expect(msg).To(ContainSubstring("a rule this namespace adds to it does not compile"), era)
			r := lastShared(broken)
			Expect([]string{r.Reason, r.Detail}).To(Equal([]string{audit.DenyNotServable, mcpv1alpha1.ReasonConsumerRulesInvalid}), era)
		}
		Expect(docs.Calls(echo)).To(BeZero(), "never half-applied: not sent with the rule that compiles alone")

		By("the other consumer is served as before")
		ocs := oa.connect(nil, legacyEra)
		Expect(toolNames(ocs)).To(ContainElement(name))
		isErr, msg := call(ocs, name, map[string]any{"text": "x"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(docs.Calls(echo)).To(Equal(1))

		By("fixed, the tool is offered again with both rules")
		patchShared(b, consumerRules(
			mcpv1alpha1.ArgumentRule{Name: "fine", Expression: `args.text.size() < 100`},
			mcpv1alpha1.ArgumentRule{Name: "unfinished", Expression: `args.text.size() < 5`},
		))
		sharedRulesValid(b, metav1.ConditionTrue)
		cs := ba.connect(nil, modernEra)
		Expect(toolNames(cs)).To(ContainElement(name))
		isErr, msg = call(cs, name, map[string]any{"text": "toolong"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring(`"mcpsharedserver/docs/unfinished"`))
		isErr, msg = call(cs, name, map[string]any{"text": "ok"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(docs.Calls(echo)).To(Equal(2))

		By("without rules the condition goes")
		patchShared(b, func(spec *mcpv1alpha1.McpSharedServerSpec) { spec.ArgumentRules = nil })
		Eventually(func(g Gomega) {
			got := &mcpv1alpha1.McpSharedServer{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(b), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionArgumentRulesValid)).To(BeNil())
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})
})
