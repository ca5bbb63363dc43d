package integration_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// setSpec changes a tool's spec as kubectl patch does and waits until the
// gateway's cache holds the tool Ready (or not, with reason) for the new
// generation.
func (u *upstream) setSpec(remote string, change func(*mcpv1alpha1.McpToolSpec), status metav1.ConditionStatus, reason string) {
	GinkgoHelper()
	t := u.tool(remote)
	patch := client.MergeFrom(t.DeepCopy())
	change(&t.Spec)
	Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
	u.waitTool(remote, status, reason)
}

// listed is the tool of that name the session is offered, or nil.
func listed(cs *sdk.ClientSession, name string) *sdk.Tool {
	GinkgoHelper()
	for t, err := range cs.Tools(context.Background(), nil) {
		Expect(err).NotTo(HaveOccurred())
		if t.Name == name {
			return t
		}
	}
	return nil
}

// hashOf is the gateway's hash of arguments: sha256 of their JSON, keys
// sorted.
func hashOf(args map[string]any) string {
	b, err := json.Marshal(args)
	Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var _ = Describe("Reviewed text and argument rules", func() {
	const greeting = "hello from the platform"

	DescribeTable("serve the reviewed text, hide a fixed argument, set it upstream and refuse an agent that sends it",
		func(era string) {
			ns := newNamespace()
			docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
			docs.setSpec(echo, func(s *mcpv1alpha1.McpToolSpec) {
				s.ReviewedText = &mcpv1alpha1.ReviewedText{Title: "Greet", Description: "Says the platform's greeting."}
				s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Fixed: []mcpv1alpha1.FixedArgument{{Name: "text", Value: `"` + greeting + `"`}}}
			}, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
			bot := newAgent(ns, "bot").allowInternal()
			cs := bot.connect(nil, era)

			By("the agent reads the reviewed text and a schema without the fixed argument")
			t := listed(cs, docs.local(echo))
			Expect(t).NotTo(BeNil())
			Expect([]string{t.Title, t.Description}).To(Equal([]string{"Greet", "Says the platform's greeting."}))
			schema, err := json.Marshal(t.InputSchema)
			Expect(err).NotTo(HaveOccurred())
			Expect(schema).To(MatchJSON(`{"type":"object","properties":{}}`))
			stored := docs.tool(echo)
			Expect(stored.Status.Description).To(Equal("Returns its text argument."), "status keeps the server's text")
			Expect(string(stored.Status.InputSchema.Raw)).To(ContainSubstring(`"text"`))

			By("the gateway sets the fixed argument upstream")
			isErr, txt := call(cs, docs.local(echo), map[string]any{})
			Expect(isErr).To(BeFalse(), txt)
			Expect(txt).To(Equal(greeting))
			Expect(docs.Calls(echo)).To(Equal(1))
			recs := auditFor(ns, docs.object(echo))
			Expect(recs[0].ArgumentsHash).To(Equal(hashOf(map[string]any{"text": greeting})), "the record hashes the arguments as sent upstream")

			By("an agent that sends it is refused, not overridden")
			const chosen = "zq-agent-chosen-value"
			isErr, txt = call(cs, docs.local(echo), map[string]any{"text": chosen})
			Expect(isErr).To(BeTrue())
			Expect(txt).To(ContainSubstring(`the argument "text" is set by the platform and may not be sent`))
			Expect(txt).NotTo(ContainSubstring(chosen))
			Expect(docs.Calls(echo)).To(Equal(1), "nothing was sent")
			recs = auditFor(ns, docs.object(echo))
			last := recs[len(recs)-1]
			Expect([]string{last.Phase, last.Reason, last.Detail}).To(Equal([]string{audit.PhaseDenied, audit.DenyFixedArgumentSent, "text"}))
			Expect(strings.Join(auditLog.all(), "\n")).NotTo(ContainSubstring(chosen))
		},
		Entry("in the initialize era", legacyEra),
		Entry("in the 2026-07-28 era", modernEra),
	)

	It("refuse a call a rule does not allow, naming the rule and never the arguments, and audit it", func() {
		ns := newNamespace()
		nested := mcpserver.ToolNested
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{nested})
		docs.setSpec(nested, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{
				{Name: "no-high-priority", Expression: `!has(args.ticket.priority) || args.ticket.priority != 'high'`, Message: "high-priority tickets are opened by people"},
				{Name: "known-labels", Expression: `!has(args.ticket.labels) || args.ticket.labels.all(l, l in ['bug', 'docs'])`},
			}}
		}, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect(nil, modernEra)

		const title = "zq-title-marker"
		isErr, txt := call(cs, docs.local(nested), map[string]any{"ticket": map[string]any{"title": title, "priority": "high"}})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring(`the arguments break the rule "no-high-priority": high-priority tickets are opened by people`))
		isErr, txt = call(cs, docs.local(nested), map[string]any{"ticket": map[string]any{"title": title, "labels": []any{"bug", "zq-label-marker"}}})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring(`"known-labels"`))
		Expect(docs.Calls(nested)).To(Equal(0), "no refused call reaches the server")

		isErr, txt = call(cs, docs.local(nested), map[string]any{"ticket": map[string]any{"title": "fine", "priority": "low", "labels": []any{"docs"}}})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("ticket created: fine"))
		Expect(docs.Calls(nested)).To(Equal(1))

		recs := auditFor(ns, docs.object(nested))
		var refusals [][]string
		for _, r := range recs {
			if r.Phase == audit.PhaseDenied {
				refusals = append(refusals, []string{r.Reason, r.Detail})
			}
		}
		Expect(refusals).To(Equal([][]string{
			{audit.DenyArgumentRuleFailed, "no-high-priority"},
			{audit.DenyArgumentRuleFailed, "known-labels"},
		}))
		all := strings.Join(auditLog.all(), "\n")
		Expect(all).NotTo(ContainSubstring(title))
		Expect(all).NotTo(ContainSubstring("zq-label-marker"))
	})

	It("offer no tool whose rule does not compile, and say so on the McpTool", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		bot := newAgent(ns, "bot").allowInternal()
		Expect(toolNames(bot.connect(nil, modernEra))).To(ContainElement(docs.local(echo)))

		docs.setSpec(echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{{Name: "short", Expression: `args.text.size() <`}}}
		}, metav1.ConditionFalse, mcpv1alpha1.ReasonArgumentRulesInvalid)
		c := docs.tool(echo).Status.Conditions
		Expect(c).To(ContainElement(And(
			HaveField("Type", mcpv1alpha1.ConditionArgumentRulesValid),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring(`rule "short": does not compile`)))))

		for _, era := range []string{legacyEra, modernEra} {
			cs := bot.connect(nil, era)
			Expect(toolNames(cs)).NotTo(ContainElement(docs.local(echo)), era)
			isErr, txt := call(cs, docs.local(echo), map[string]any{"text": "x"})
			Expect(isErr).To(BeTrue(), era)
			Expect(txt).To(ContainSubstring("not servable"), era)
		}
		Expect(docs.Calls(echo)).To(Equal(0))

		By("fixed, the tool is served again")
		docs.setSpec(echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules.Rules[0].Expression = `args.text.size() < 10`
		}, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		cs := bot.connect(nil, modernEra)
		isErr, txt := call(cs, docs.local(echo), map[string]any{"text": "short"})
		Expect(isErr).To(BeFalse(), txt)
		isErr, txt = call(cs, docs.local(echo), map[string]any{"text": "far too long for the rule"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring(`"short"`))
	})

	It("ask a person to approve the arguments as sent upstream", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		docs.setSpec(echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ArgumentRules = &mcpv1alpha1.ArgumentRules{Fixed: []mcpv1alpha1.FixedArgument{{Name: "text", Value: `"` + greeting + `"`}}}
		}, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect(nil, legacyEra)

		isErr, txt := call(cs, docs.local(echo), nil)
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring("waits for a person's approval"))
		list := approvalsOf(ns)
		Expect(list).To(HaveLen(1))
		Expect(list[0].Spec.ArgumentsHash).To(Equal(hashOf(map[string]any{"text": greeting})))

		By("a call the rules refuse asks nobody")
		isErr, _ = call(cs, docs.local(echo), map[string]any{"text": "mine"})
		Expect(isErr).To(BeTrue())
		Expect(approvalsOf(ns)).To(HaveLen(1))

		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		Expect(alice.decide(ns, list[0].Name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		isErr, txt = call(cs, docs.local(echo), nil)
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal(greeting))
		Expect(docs.Calls(echo)).To(Equal(1))
	})
})
