package integration_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// consumerNamespace is a namespace that consumes shared servers; its
// McpSharedServers and approvals go with it.
func consumerNamespace() string {
	ns := newNamespace()
	DeferCleanup(func(ctx SpecContext) {
		Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpSharedServer{}, client.InNamespace(ns))).To(Succeed())
		Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(ns))).To(Succeed())
	})
	return ns
}

// accept declares, in ns, an McpSharedServer named name for the owner's
// server, and waits until the gateway's cache holds it.
func accept(ns, name string, owner *upstream, narrow func(*mcpv1alpha1.McpSharedServerSpec)) *mcpv1alpha1.McpSharedServer {
	GinkgoHelper()
	ss := &mcpv1alpha1.McpSharedServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: owner.ns, Name: owner.name}},
	}
	if narrow != nil {
		narrow(&ss.Spec)
	}
	Expect(k8sClient.Create(context.Background(), ss)).To(Succeed())
	Eventually(func() error {
		return cached.Get(context.Background(), client.ObjectKeyFromObject(ss), &mcpv1alpha1.McpSharedServer{})
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return ss
}

// share sets the owner's spec.sharing and waits until the gateway's cache
// shows it.
func (u *upstream) share(sharing *mcpv1alpha1.ServerSharing) {
	GinkgoHelper()
	key := types.NamespacedName{Namespace: u.ns, Name: u.name}
	srv := &mcpv1alpha1.McpServer{}
	Expect(k8sClient.Get(context.Background(), key, srv)).To(Succeed())
	patch := client.MergeFrom(srv.DeepCopy())
	srv.Spec.Sharing = sharing
	Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
	u.settled(srv.Generation)
}

// settled waits until the server's import for generation is done (a new
// generation imports once) and the gateway's cache holds that generation.
func (u *upstream) settled(generation int64) {
	GinkgoHelper()
	key := types.NamespacedName{Namespace: u.ns, Name: u.name}
	Eventually(func(g Gomega) {
		c := &mcpv1alpha1.McpServer{}
		g.Expect(cached.Get(context.Background(), key, c)).To(Succeed())
		g.Expect(c.Generation).To(Equal(generation))
		synced := meta.FindStatusCondition(c.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
		g.Expect(synced).NotTo(BeNil())
		g.Expect(synced.ObservedGeneration).To(Equal(generation))
		ready := meta.FindStatusCondition(c.Status.Conditions, mcpv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect([]any{ready.ObservedGeneration, ready.Status}).To(Equal([]any{generation, metav1.ConditionTrue}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// labelNamespace sets a label of a namespace and waits until the
// gateway's cache shows it.
func labelNamespace(ns, key, value string) {
	GinkgoHelper()
	n := &corev1.Namespace{}
	Expect(k8sClient.Get(context.Background(), types.NamespacedName{Name: ns}, n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
	Expect(k8sClient.Patch(context.Background(), n, patch)).To(Succeed())
	Eventually(func(g Gomega) {
		c := &corev1.Namespace{}
		g.Expect(cached.Get(context.Background(), types.NamespacedName{Name: ns}, c)).To(Succeed())
		g.Expect(c.Labels).To(HaveKeyWithValue(key, value))
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

// sharedReady waits until the McpSharedServer's Ready condition, for its
// current generation, has the reason given, and returns it.
func sharedReady(ss *mcpv1alpha1.McpSharedServer, reason string) metav1.Condition {
	GinkgoHelper()
	var out metav1.Condition
	Eventually(func(g Gomega) {
		got := &mcpv1alpha1.McpSharedServer{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		out = *c
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	return out
}

// sharedAudit returns the audit records of calls from namespace ns of
// tools shared with it, in order.
func sharedAudit(ns string) []auditRecord {
	GinkgoHelper()
	var out []auditRecord
	for _, l := range auditLog.all() {
		var r auditRecord
		Expect(json.Unmarshal([]byte(l), &r)).To(Succeed())
		if r.Namespace == ns && r.SharedServer != "" {
			out = append(out, r)
		}
	}
	return out
}

var _ = Describe("A server shared with other namespaces", func() {
	It("is offered only with the owner's grant and the consumer's acceptance, and the next call stops when either is withdrawn", func() {
		owner, consumer := newNamespace(), consumerNamespace()
		docs := newUpstream(owner, "docs", mcpserver.Options{}, []string{echo})
		shared := toolname.SharedLocalName("platform-docs", echo)

		// The consumer's admins decide, with RBAC in their own namespace
		// only, which agent may call which shared tool: bot may call the
		// shared echo, nobody may call nothing.
		bot := newAgent(consumer, "bot")
		bot.grant(shared)
		bot.ceiling(mcpv1alpha1.DataClassInternal)
		nobody := newAgent(consumer, "nobody")
		nobody.ceiling(mcpv1alpha1.DataClassInternal)

		By("accepted but not granted: NotShared, not listed, refused like an unknown tool, nothing sent")
		ss := accept(consumer, "platform-docs", docs, nil)
		notGranted := sharedReady(ss, mcpv1alpha1.ReasonNotShared)
		cs := bot.connect(nil, legacyEra)
		Expect(toolNames(cs)).NotTo(ContainElement(shared))
		isErr, msg := call(cs, shared, map[string]any{"text": "hi"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("there is no tool of this name"))
		Expect(docs.Calls(echo)).To(BeZero())
		refusals := sharedAudit(consumer)
		Expect(refusals).NotTo(BeEmpty())
		first := refusals[len(refusals)-1]
		Expect([]string{first.Phase, first.Reason, first.Namespace, first.ServerNamespace, first.SharedServer}).To(
			Equal([]string{audit.PhaseDenied, audit.DenyNotShared, consumer, owner, "platform-docs"}))

		By("a server that does not exist reads exactly like one that is not granted")
		ghost := accept(consumer, "ghost", &upstream{ns: owner, name: "no-such-server"}, nil)
		absent := sharedReady(ghost, mcpv1alpha1.ReasonNotShared)
		Expect([]string{absent.Reason, absent.Message}).To(Equal([]string{notGranted.Reason, notGranted.Message}))

		By("the owner grants the namespace by name: listed and called with the owner's credential")
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}})
		sharedReady(ss, mcpv1alpha1.ReasonShared)
		cs = bot.connect(nil, legacyEra)
		Expect(toolNames(cs)).To(ContainElement(shared))
		isErr, msg = call(cs, shared, map[string]any{"text": "hello"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(msg).To(Equal("hello"))
		Expect(docs.Calls(echo)).To(Equal(1))
		recs := sharedAudit(consumer)
		Expect(recs).NotTo(BeEmpty())
		last := recs[len(recs)-1]
		Expect([]string{last.Phase, last.Namespace, last.ServerNamespace, last.SharedServer, last.Tool, last.LocalName}).To(
			Equal([]string{audit.PhaseAfter, consumer, owner, "platform-docs", docs.object(echo), shared}))

		By("the status of the consumer's object names nothing of the owner's server")
		got := &mcpv1alpha1.McpSharedServer{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
		raw, err := json.Marshal(got.Status)
		Expect(err).NotTo(HaveOccurred())
		for _, leak := range []string{docs.URL, docs.secret, "docs-token", "127.0.0.1"} {
			Expect(string(raw)).NotTo(ContainSubstring(leak))
		}

		By("an agent of the consumer without RBAC for it neither sees nor calls it")
		other := nobody.connect(nil, legacyEra)
		Expect(toolNames(other)).NotTo(ContainElement(shared))
		isErr, msg = call(other, shared, map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("there is no tool of this name"))
		Expect(docs.Calls(echo)).To(Equal(1))

		By("no McpTool is copied into the consumer's namespace")
		var tools mcpv1alpha1.McpToolList
		Expect(k8sClient.List(context.Background(), &tools, client.InNamespace(consumer))).To(Succeed())
		Expect(tools.Items).To(BeEmpty())

		By("the owner revokes the grant: the next call on the open session is refused")
		docs.share(nil)
		isErr, msg = call(cs, shared, map[string]any{"text": "again"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("there is no tool of this name"))
		Expect(docs.Calls(echo)).To(Equal(1))
		sharedReady(ss, mcpv1alpha1.ReasonNotShared)

		By("the owner grants by a label selector: the namespace's labels decide")
		docs.share(&mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{
			{Key: "catalog.example/docs", Operator: metav1.LabelSelectorOpIn, Values: []string{"yes"}}}}})
		isErr, _ = call(cs, shared, map[string]any{"text": "unlabelled"})
		Expect(isErr).To(BeTrue())
		labelNamespace(consumer, "catalog.example/docs", "yes")
		sharedReady(ss, mcpv1alpha1.ReasonShared)
		// The session's offer lost the tool when the grant went; the agent
		// lists again, as the refusal tells it to.
		Eventually(func() []string { return toolNames(cs) }, 10*time.Second, 100*time.Millisecond).Should(ContainElement(shared))
		isErr, msg = call(cs, shared, map[string]any{"text": "labelled"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(docs.Calls(echo)).To(Equal(2))
		labelNamespace(consumer, "catalog.example/docs", "no")
		isErr, _ = call(cs, shared, map[string]any{"text": "relabelled"})
		Expect(isErr).To(BeTrue())
		Expect(docs.Calls(echo)).To(Equal(2))
		labelNamespace(consumer, "catalog.example/docs", "yes")

		By("the consumer withdraws its acceptance: the next call is refused")
		Eventually(func() []string { return toolNames(cs) }, 10*time.Second, 100*time.Millisecond).Should(ContainElement(shared))
		isErr, msg = call(cs, shared, map[string]any{"text": "before"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(k8sClient.Delete(context.Background(), ss)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(cached.Get(context.Background(), client.ObjectKeyFromObject(ss), &mcpv1alpha1.McpSharedServer{}))
		}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
		isErr, msg = call(cs, shared, map[string]any{"text": "after"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("there is no tool of this name"))
		Expect(docs.Calls(echo)).To(Equal(3))
		Expect(toolNames(bot.connect(nil, modernEra))).NotTo(ContainElement(shared))
	})

	It("is imported once however many namespaces consume it, and each consumer narrows it for itself, never widens it", func() {
		owner := newNamespace()
		// fail is imported and left disabled by the owner.
		docs := newUpstream(owner, "docs", mcpserver.Options{}, []string{echo})
		quiet, strict := consumerNamespace(), consumerNamespace()
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{quiet, strict}})
		listsBefore := docs.Stats().Methods["tools/list"]

		q := accept(quiet, "docs", docs, nil)
		s := accept(strict, "docs", docs, func(spec *mcpv1alpha1.McpSharedServerSpec) {
			spec.DisabledTools = []string{echo}
		})
		sharedReady(q, mcpv1alpha1.ReasonShared)
		sharedReady(s, mcpv1alpha1.ReasonShared)
		qa := newAgent(quiet, "bot")
		qa.grant()
		qa.ceiling(mcpv1alpha1.DataClassRestricted)
		sa := newAgent(strict, "bot")
		sa.grant()
		sa.ceiling(mcpv1alpha1.DataClassRestricted)
		echoName, failName := toolname.SharedLocalName("docs", echo), toolname.SharedLocalName("docs", fail)

		By("the owner's disabled tool is offered to no consumer; each consumer's own disabling applies to it alone")
		Expect(toolNames(qa.connect(nil, legacyEra))).To(And(ContainElement(echoName), Not(ContainElement(failName))))
		scs := sa.connect(nil, legacyEra)
		Expect(toolNames(scs)).NotTo(Or(ContainElement(echoName), ContainElement(failName)))
		isErr, msg := call(scs, echoName, map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("this namespace disabled it"))
		Expect(docs.Calls(echo)).To(BeZero())

		By("a lower data-class ceiling in the McpSharedServer hides what is above it, whatever the access policy allows")
		patchShared(q, func(spec *mcpv1alpha1.McpSharedServerSpec) { spec.MaxDataClass = mcpv1alpha1.DataClassPublic })
		qcs := qa.connect(nil, legacyEra)
		Expect(toolNames(qcs)).NotTo(ContainElement(echoName))
		isErr, msg = call(qcs, echoName, map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("above the caller's ceiling"))
		Expect(docs.Calls(echo)).To(BeZero())

		By("one import and no copies, however many consume it")
		Expect(docs.Stats().Methods["tools/list"]).To(Equal(listsBefore))
		for _, ns := range []string{quiet, strict} {
			var tools mcpv1alpha1.McpToolList
			Expect(k8sClient.List(context.Background(), &tools, client.InNamespace(ns))).To(Succeed())
			Expect(tools.Items).To(BeEmpty())
		}
	})

	It("asks for approval in the agent's namespace, decided by that namespace's approvers, when only the consumer requires it", func() {
		owner, consumer := newNamespace(), consumerNamespace()
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(owner))).To(Succeed())
		})
		docs := newUpstream(owner, "docs", mcpserver.Options{}, []string{echo})
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}})
		ss := accept(consumer, "docs", docs, func(spec *mcpv1alpha1.McpSharedServerSpec) { spec.ApprovalRequired = true })
		sharedReady(ss, mcpv1alpha1.ReasonShared)
		bot := newAgent(consumer, "bot")
		bot.grant()
		bot.ceiling(mcpv1alpha1.DataClassInternal)
		name := toolname.SharedLocalName("docs", echo)
		cs := bot.connect((&urlCapable{}).options(false), legacyEra)
		args := map[string]any{"text": "needs a person"}

		By("the call waits on an McpCallApproval in the consumer's namespace, none in the owner's")
		e := callWaiting(cs, legacyEra, name, args)
		Expect(docs.Calls(echo)).To(BeZero())
		list := approvalsOf(consumer)
		Expect(list).To(HaveLen(1))
		Expect(approvalsOf(owner)).To(BeEmpty())
		a := list[0]
		Expect(e.ElicitationID).To(Equal(consumer + "/" + a.Name))
		Expect([]string{a.Spec.Tool, a.Spec.LocalName, a.Spec.Server}).To(Equal([]string{name, name, "docs"}))

		By("an approver of the owner's namespace cannot decide it; one of the consumer's can")
		ownersApprover := as("olivia", "system:authenticated")
		mayApprove(owner, ownersApprover)
		Expect(apierrors.IsForbidden(ownersApprover.decide(consumer, a.Name, mcpv1alpha1.CallApproved, "olivia", ""))).To(BeTrue())
		carol := as("carol", "system:authenticated")
		mayApprove(consumer, carol)
		Expect(carol.decide(consumer, a.Name, mcpv1alpha1.CallApproved, "carol", "")).To(Succeed())
		res, err := retry(cs, legacyEra, name, args)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(docs.Calls(echo)).To(Equal(1))
		recs := sharedAudit(consumer)
		before := recs[len(recs)-2]
		Expect([]string{before.Phase, before.ApprovalName, before.ApprovedBy, before.ServerNamespace}).To(Equal([]string{audit.PhaseBefore, a.Name, "carol", owner}))

		By("approvalRequired false in the consumer never lifts the owner's requirement, which the owner's people decide")
		patchShared(ss, func(spec *mcpv1alpha1.McpSharedServerSpec) { spec.ApprovalRequired = false })
		srv := &mcpv1alpha1.McpServer{}
		Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: owner, Name: "docs"}, srv)).To(Succeed())
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.ApprovalRequired = ptr.To(true)
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		docs.settled(srv.Generation)
		docs.waitTool(echo, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		e = callWaiting(cs, legacyEra, name, map[string]any{"text": "again"})
		Expect(strings.HasPrefix(e.ElicitationID, owner+"/")).To(BeTrue())
		Expect(docs.Calls(echo)).To(Equal(1))
	})

	It("keeps the owner's approval from a consumer that opts its agent into ClientElicitation: the owner's people decide", func() {
		owner, consumer := newNamespace(), consumerNamespace()
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(owner))).To(Succeed())
		})
		docs := newUpstream(owner, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}})
		docs.waitTool(echo, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		ss := accept(consumer, "docs", docs, nil)
		sharedReady(ss, mcpv1alpha1.ReasonShared)
		// The consumer's admin opts its agent into approving by its own
		// client, and the agent's client approves whatever it is asked.
		bot := newAgent(consumer, "bot")
		bot.grant()
		bot.ceiling(mcpv1alpha1.DataClassInternal, mcpv1alpha1.ApprovalClientElicitation)
		name := toolname.SharedLocalName("docs", echo)
		yes := &approver{action: "accept", approve: true}
		cs := bot.connect(&sdk.ClientOptions{ElicitationHandler: yes.handle}, legacyEra)
		args := map[string]any{"text": "the owner's people decide"}

		By("the agent is not asked; the call waits on an McpCallApproval in the owner's namespace and is not made")
		isErr, msg := call(cs, name, args)
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("waits for a person's approval"))
		Expect(yes.asked()).To(BeEmpty())
		Expect(docs.Calls(echo)).To(BeZero())
		Expect(approvalsOf(consumer)).To(BeEmpty())
		list := approvalsOf(owner)
		Expect(list).To(HaveLen(1))
		a := list[0]
		Expect([]string{a.Spec.Tool, a.Spec.LocalName, a.Spec.Server, a.Spec.Caller}).To(
			Equal([]string{docs.object(echo), name, "docs", "system:serviceaccount:" + consumer + ":bot"}))
		recs := sharedAudit(consumer)
		last := recs[len(recs)-1]
		Expect([]string{last.Phase, last.Reason, last.Approval}).To(Equal([]string{audit.PhaseDenied, audit.DenyApprovalPending, "Required"}))

		By("the consumer's approvers cannot decide it; the owner's can, and the call is made once")
		carol := as("carol", "system:authenticated")
		mayApprove(consumer, carol)
		Expect(apierrors.IsForbidden(carol.decide(owner, a.Name, mcpv1alpha1.CallApproved, "carol", ""))).To(BeTrue())
		olivia := as("olivia", "system:authenticated")
		mayApprove(owner, olivia)
		Expect(olivia.decide(owner, a.Name, mcpv1alpha1.CallApproved, "olivia", "")).To(Succeed())
		isErr, msg = call(cs, name, args)
		Expect(isErr).To(BeFalse(), msg)
		Expect(docs.Calls(echo)).To(Equal(1))
		recs = sharedAudit(consumer)
		before := recs[len(recs)-2]
		Expect([]string{before.Phase, before.Approval, before.ApprovalName, before.ApprovedBy}).To(Equal([]string{audit.PhaseBefore, "Approved", a.Name, "olivia"}))
		Expect(yes.asked()).To(BeEmpty())

		By("the API server wrote the safe terms")
		srv := &mcpv1alpha1.McpServer{}
		Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: owner, Name: "docs"}, srv)).To(Succeed())
		Expect(srv.Spec.Sharing.ApprovalModes).To(Equal([]mcpv1alpha1.ApprovalMode{mcpv1alpha1.ApprovalPerson}))
		Expect(srv.Spec.Sharing.Approvers).To(Equal(mcpv1alpha1.SharedApproversOwner))

		By("the owner accepts ClientElicitation: the consumer's client approves its own call")
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{consumer},
			ApprovalModes: []mcpv1alpha1.ApprovalMode{mcpv1alpha1.ApprovalPerson, mcpv1alpha1.ApprovalClientElicitation}})
		docs.waitTool(echo, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		isErr, msg = call(cs, name, map[string]any{"text": "by the client"})
		Expect(isErr).To(BeFalse(), msg)
		Expect(docs.Calls(echo)).To(Equal(2))
		Expect(yes.asked()).To(HaveLen(1))

		By("the owner lets the consumer's people decide: Person again, in the consumer's namespace")
		docs.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}, Approvers: mcpv1alpha1.SharedApproversConsumer})
		docs.waitTool(echo, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		isErr, msg = call(cs, name, map[string]any{"text": "the consumer's people"})
		Expect(isErr).To(BeTrue())
		Expect(msg).To(ContainSubstring("waits for a person's approval"))
		Expect(docs.Calls(echo)).To(Equal(2))
		Expect(yes.asked()).To(HaveLen(1))
		var pending []mcpv1alpha1.McpCallApproval
		for _, a := range approvalsOf(consumer) {
			if !strings.HasPrefix(a.Name, "answer-") {
				pending = append(pending, a)
			}
		}
		Expect(pending).To(HaveLen(1))
		Expect([]string{pending[0].Spec.Tool, pending[0].Spec.Server}).To(Equal([]string{name, "docs"}))
		Expect(approvalsOf(owner)).To(HaveLen(1))
	})

	It("reports an McpSharedServer that cannot be honoured, and the API server refuses a grant it cannot evaluate", func() {
		owner := newNamespace()
		docs := declare(owner, "docs", "http://127.0.0.1:1/mcp", nil)
		self := accept(owner, "self", docs, nil)
		c := sharedReady(self, mcpv1alpha1.ReasonInvalidSpec)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Message).To(ContainSubstring("spec.server names an McpServer of this namespace"))

		srv := &mcpv1alpha1.McpServer{}
		Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: owner, Name: "docs"}, srv)).To(Succeed())
		Expect(docs).NotTo(BeNil())
		for _, bad := range []*mcpv1alpha1.ServerSharing{
			{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists, Values: []string{"a"}}}}},
			{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}}},
			{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{{Key: "not a key", Operator: metav1.LabelSelectorOpExists}}}},
			{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{{Key: "team", Operator: "Matches", Values: []string{"a"}}}}},
			{Namespaces: []string{"Not_A_Namespace"}},
		} {
			s := srv.DeepCopy()
			s.Spec.Sharing = bad
			err := k8sClient.Patch(context.Background(), s, client.MergeFrom(srv))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: %v", bad, err)
		}
	})
})

// patchShared changes an McpSharedServer's spec and waits until the
// gateway's cache shows the change.
func patchShared(ss *mcpv1alpha1.McpSharedServer, f func(*mcpv1alpha1.McpSharedServerSpec)) {
	GinkgoHelper()
	got := &mcpv1alpha1.McpSharedServer{}
	Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
	patch := client.MergeFrom(got.DeepCopy())
	f(&got.Spec)
	Expect(k8sClient.Patch(context.Background(), got, patch)).To(Succeed())
	Eventually(func(g Gomega) {
		c := &mcpv1alpha1.McpSharedServer{}
		g.Expect(cached.Get(context.Background(), client.ObjectKeyFromObject(ss), c)).To(Succeed())
		g.Expect(c.Generation).To(Equal(got.Generation))
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}
