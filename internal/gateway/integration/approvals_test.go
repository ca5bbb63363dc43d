package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// installPolicy creates every object of a manifest file and waits until
// the API server enforces the admission policy in it.
func installPolicy(path string) {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		if len(u.Object) == 0 {
			continue
		}
		Expect(k8sClient.Create(context.Background(), u)).To(Succeed())
	}
	// The API server loads a new policy asynchronously: wait until an
	// approval created already decided is refused.
	Expect(k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe"}})).To(Succeed())
	Eventually(func() error {
		a := forgedApproval("policy-probe", "system:serviceaccount:policy-probe:bot")
		a.Spec.Decision, a.Spec.DecidedBy = mcpv1alpha1.CallApproved, "admin"
		err := k8sClient.Create(context.Background(), a)
		if err == nil {
			_ = k8sClient.Delete(context.Background(), a)
			return errors.New("the admission policy is not enforced yet")
		}
		return nil
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// forgedApproval is an approval the gateway did not write (its seal is
// not the gateway's).
func forgedApproval(ns, caller string) *mcpv1alpha1.McpCallApproval {
	return &mcpv1alpha1.McpCallApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("forged-%08x", rand.Uint32())},
		Spec: mcpv1alpha1.McpCallApprovalSpec{
			Tool: "docs.echo", LocalName: "mcp_docs_echo", Server: "docs", Caller: caller,
			DataClass: mcpv1alpha1.DataClassInternal, ArgumentsHash: "sha256:" + strings.Repeat("0", 64),
			DefinitionHash: "sha256:x", ExpiresAt: metav1.Time{Time: time.Now().Add(time.Hour)}, Seal: "forged",
		},
	}
}

// person is a user acting on the API server, through impersonation.
type person struct {
	name string
	c    client.Client
}

func as(user string, groups ...string) *person {
	GinkgoHelper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cl, err := client.New(c, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return &person{name: user, c: cl}
}

// asServiceAccount acts as the ServiceAccount of an agent.
func asServiceAccount(a *agent) *person {
	return as("system:serviceaccount:"+a.ns+":"+a.name, "system:serviceaccounts", "system:serviceaccounts:"+a.ns, "system:authenticated")
}

// mayApprove binds the shipped call-approver ClusterRole to a user (or a
// ServiceAccount) in ns, and waits until RBAC allows it.
func mayApprove(ns string, p *person) {
	GinkgoHelper()
	ctx := context.Background()
	name := fmt.Sprintf("approver-%08x", rand.Uint32())
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: p.name}
	if sa, ok := strings.CutPrefix(p.name, "system:serviceaccount:"+ns+":"); ok {
		subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}
	}
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "call-approver"},
		Subjects:   []rbacv1.Subject{subject},
	})).To(Succeed())
	Eventually(func(g Gomega) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: p.name,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "update", Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcpcallapprovals",
			},
		}}
		g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
}

// decide sets the decision of an approval as p, naming decidedBy.
func (p *person) decide(ns, name string, d mcpv1alpha1.CallDecision, decidedBy, reason string) error {
	ctx := context.Background()
	a := &mcpv1alpha1.McpCallApproval{}
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
		return err
	}
	a.Spec.Decision, a.Spec.DecidedBy, a.Spec.Reason = d, decidedBy, reason
	return p.c.Update(ctx, a)
}

// approvalsOf lists the approvals of a namespace, oldest first.
func approvalsOf(ns string) []mcpv1alpha1.McpCallApproval {
	GinkgoHelper()
	var list mcpv1alpha1.McpCallApprovalList
	Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// urlCapable is a client that declares URL-mode elicitation and counts
// what it is shown; onAsk, if set, runs when it is asked.
type urlCapable struct {
	mu    sync.Mutex
	asked []*sdk.ElicitParams
	onAsk func(*sdk.ElicitParams)
}

func (u *urlCapable) options(mrtr bool) *sdk.ClientOptions {
	return &sdk.ClientOptions{
		Capabilities:       &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: u.handle,
		MultiRoundTrip:     &sdk.MultiRoundTripOptions{Disabled: !mrtr},
	}
}

func (u *urlCapable) handle(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	u.mu.Lock()
	u.asked = append(u.asked, req.Params)
	f := u.onAsk
	u.mu.Unlock()
	if f != nil {
		f(req.Params)
	}
	return &sdk.ElicitResult{Action: "accept"}, nil
}

// callWaiting calls a tool that needs approval and expects to be told to
// wait, the way the era tells it: the URLElicitationRequired error in
// 2025-11-25, an input-required result in 2026-07-28. It returns the URL
// elicitation the agent was given.
func callWaiting(cs *sdk.ClientSession, era, name string, args map[string]any) *sdk.ElicitParams {
	GinkgoHelper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if era == legacyEra {
		var rpc *jsonrpc.Error
		Expect(errors.As(err, &rpc)).To(BeTrue(), "the agent is told with a protocol error: %v", err)
		Expect(rpc.Code).To(Equal(int64(sdk.CodeURLElicitationRequired)))
		var data struct {
			Elicitations []*sdk.ElicitParams `json:"elicitations"`
		}
		Expect(json.Unmarshal(rpc.Data, &data)).To(Succeed())
		Expect(data.Elicitations).To(HaveLen(1))
		Expect(data.Elicitations[0].Mode).To(Equal("url"))
		return data.Elicitations[0]
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(res.NeedsInput()).To(BeTrue(), "an input-required result: %s", text(res))
	Expect(res.InputRequests).To(HaveKey("approval"))
	e, ok := res.InputRequests["approval"].(*sdk.ElicitParams)
	Expect(ok).To(BeTrue())
	Expect(e.Mode).To(Equal("url"))
	return e
}

// retry makes the same call again once the approval is decided, as the
// agent does after being told to wait, and returns the tool's answer.
func retry(cs *sdk.ClientSession, era, name string, args map[string]any) (*sdk.CallToolResult, error) {
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if era == modernEra {
		// The answer to the URL elicitation: the client's user went to see
		// it. Only the McpCallApproval decides.
		p.InputResponses = sdk.InputResponseMap{"approval": &sdk.ElicitResult{Action: "accept"}}
	}
	return cs.CallTool(context.Background(), p)
}

var _ = Describe("Approval by a person", func() {
	DescribeTable("a call waits for an McpCallApproval that someone other than the caller decides, and is made once",
		func(era string) {
			ctx := context.Background()
			ns := newNamespace()
			DeferCleanup(func(ctx SpecContext) {
				Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(ns))).To(Succeed())
			})
			docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
			bot := newAgent(ns, "bot").allowInternal()
			cs := bot.connect((&urlCapable{}).options(false), era)
			args := map[string]any{"text": "secret-ish argument value"}
			requested := metrics.GatewayApprovalEvents.WithLabelValues("requested")
			usedCount := metrics.GatewayApprovalEvents.WithLabelValues("used")
			waited := metrics.GatewayCalls.WithLabelValues(ns, docs.name, docs.object(echo), audit.OutcomeDenied, audit.DenyApprovalPending)
			requestedBefore, usedBefore := counterValue(requested), counterValue(usedCount)

			By("the call waits: an McpCallApproval is created and the agent is told where")
			e := callWaiting(cs, era, docs.local(echo), args)
			Expect(counterValue(requested)).To(Equal(requestedBefore + 1))
			Expect(counterValue(waited)).To(Equal(1.0))
			Expect(docs.Calls(echo)).To(BeZero())
			list := approvalsOf(ns)
			Expect(list).To(HaveLen(1))
			a := list[0]
			Expect(e.ElicitationID).To(Equal(ns + "/" + a.Name))
			Expect(e.URL).To(HaveSuffix("/namespaces/" + ns + "/mcpcallapprovals/" + a.Name))
			Expect(e.Message).To(ContainSubstring("kubectl mcp approve-call " + a.Name + " -n " + ns))
			Expect(a.Spec.Caller).To(Equal("system:serviceaccount:" + ns + ":bot"))
			Expect(a.Spec.CallerGroups).To(ContainElement("system:serviceaccounts:" + ns))
			Expect(a.Spec.Tool).To(Equal(docs.object(echo)))
			Expect(a.Spec.Server).To(Equal("docs"))
			Expect(a.Spec.DataClass).To(Equal(mcpv1alpha1.DataClassInternal))
			Expect(a.Spec.Decision).To(Equal(mcpv1alpha1.CallPending))
			recs := auditFor(ns, docs.object(echo))
			last := recs[len(recs)-1]
			Expect([]string{last.Phase, last.Reason, last.ApprovalName}).To(Equal([]string{audit.PhaseDenied, audit.DenyApprovalPending, a.Name}))
			Expect(a.Spec.ArgumentsHash).To(Equal(last.ArgumentsHash))
			raw, err := json.Marshal(a)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(raw)).NotTo(ContainSubstring("secret-ish"), "arguments are never stored, only their hash")

			By("a retry before anyone decided waits on the same approval")
			Expect(callWaiting(cs, era, docs.local(echo), args).ElicitationID).To(Equal(ns + "/" + a.Name))
			Expect(approvalsOf(ns)).To(HaveLen(1))
			Expect(docs.Calls(echo)).To(BeZero())

			By("the caller's own identity cannot approve, even with RBAC to update approvals")
			self := asServiceAccount(bot)
			mayApprove(ns, self)
			err = self.decide(ns, a.Name, mcpv1alpha1.CallApproved, self.name, "")
			Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("cannot decide its own approval"))

			By("nobody can record another person as the approver")
			mallory := as("mallory", "system:authenticated")
			mayApprove(ns, mallory)
			err = mallory.decide(ns, a.Name, mcpv1alpha1.CallApproved, "alice", "")
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("decidedBy must be the user name"))

			By("a user without RBAC on approvals cannot decide at all")
			eve := as("eve", "system:authenticated")
			Expect(apierrors.IsForbidden(eve.decide(ns, a.Name, mcpv1alpha1.CallApproved, "eve", ""))).To(BeTrue())

			By("another person approves; the retry is made, once")
			alice := as("alice", "system:authenticated")
			mayApprove(ns, alice)
			Expect(alice.decide(ns, a.Name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
			By("a decision is final")
			Expect(alice.decide(ns, a.Name, mcpv1alpha1.CallDenied, "alice", "changed my mind")).NotTo(Succeed())

			res, err := retry(cs, era, docs.local(echo), args)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(text(res)).To(Equal("secret-ish argument value"))
			Expect(docs.Calls(echo)).To(Equal(1))
			recs = auditFor(ns, docs.object(echo))
			before := recs[len(recs)-2]
			Expect([]string{before.Phase, before.Approval, before.ApprovalName, before.ApprovedBy}).To(Equal([]string{audit.PhaseBefore, "Approved", a.Name, "alice"}))
			used := &mcpv1alpha1.McpCallApproval{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&a), used)).To(Succeed())
			Expect(used.Status.ConsumedAt).NotTo(BeNil())
			Expect(used.Status.CallID).To(Equal(before.CallID))
			Expect(counterValue(usedCount)).To(Equal(usedBefore + 1))
			Expect(counterValue(metrics.GatewayCalls.WithLabelValues(ns, docs.name, docs.object(echo), audit.OutcomeSucceeded, ""))).To(Equal(1.0))

			By("a second retry is not made on the same approval: it waits for a new one")
			e2 := callWaiting(cs, era, docs.local(echo), args)
			Expect(e2.ElicitationID).NotTo(Equal(ns + "/" + a.Name))
			Expect(docs.Calls(echo)).To(Equal(1))
			second, _ := strings.CutPrefix(e2.ElicitationID, ns+"/")

			By("a denial refuses the call, saying who denied it and why")
			Expect(alice.decide(ns, second, mcpv1alpha1.CallDenied, "alice", "not during the freeze")).To(Succeed())
			res, err = retry(cs, era, docs.local(echo), args)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.IsError).To(BeTrue())
			Expect(text(res)).To(ContainSubstring("denied by alice (McpCallApproval " + second + "): not during the freeze"))
			Expect(docs.Calls(echo)).To(Equal(1))
			recs = auditFor(ns, docs.object(echo))
			last = recs[len(recs)-1]
			Expect([]string{last.Phase, last.Reason, last.ApprovedBy}).To(Equal([]string{audit.PhaseDenied, audit.DenyApprovalDeclined, "alice"}))
			Expect(counterValue(metrics.GatewayCalls.WithLabelValues(ns, docs.name, docs.object(echo), audit.OutcomeDenied, audit.DenyApprovalDeclined))).To(Equal(1.0))
			Expect(counterValue(requested)).To(Equal(requestedBefore + 2))
			Expect(counterValue(usedCount)).To(Equal(usedBefore + 1))
		},
		Entry("in the initialize era (URLElicitationRequired error)", legacyEra),
		Entry("in the 2026-07-28 era (input-required result)", modernEra),
	)

	It("lets the go-sdk client wait and retry by itself in 2026-07-28", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		// The client's user is shown the URL and comes back once the
		// approval is decided; here the person decides meanwhile.
		u := &urlCapable{onAsk: func(e *sdk.ElicitParams) {
			_, name, _ := strings.Cut(e.ElicitationID, "/")
			Expect(alice.decide(ns, name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		}}
		isErr, txt := call(bot.connect(u.options(true), modernEra), docs.local(echo), map[string]any{"text": "hello"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("hello"))
		Expect(docs.Calls(echo)).To(Equal(1))
		Expect(u.asked).To(HaveLen(1))
	})

	It("tells a client without URL elicitation in a tool result, and makes the call on its retry", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect(nil, legacyEra)
		isErr, txt := call(cs, docs.local(echo), map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		list := approvalsOf(ns)
		Expect(list).To(HaveLen(1))
		Expect(txt).To(ContainSubstring("waits for a person's approval"))
		Expect(txt).To(ContainSubstring("kubectl mcp approve-call " + list[0].Name + " -n " + ns))
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		Expect(alice.decide(ns, list[0].Name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		isErr, txt = call(cs, docs.local(echo), map[string]any{"text": "x"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(docs.Calls(echo)).To(Equal(1))
	})

	It("uses an approval for exactly one of many concurrent retries", func() {
		ctx := context.Background()
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		args := map[string]any{"text": "once"}
		callWaiting(bot.connect((&urlCapable{}).options(false), modernEra), modernEra, docs.local(echo), args)
		name := approvalsOf(ns)[0].Name
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		Expect(alice.decide(ns, name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		stale := &mcpv1alpha1.McpCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, stale)).To(Succeed())

		const n = 6
		sessions := make([]*sdk.ClientSession, n)
		for i := range sessions {
			sessions[i] = bot.connect((&urlCapable{}).options(false), modernEra)
		}
		var wg sync.WaitGroup
		made := make(chan bool, n)
		for _, cs := range sessions {
			wg.Go(func() {
				defer GinkgoRecover()
				res, err := retry(cs, modernEra, docs.local(echo), args)
				Expect(err).NotTo(HaveOccurred())
				made <- !res.IsError && !res.NeedsInput()
			})
		}
		wg.Wait()
		close(made)
		succeeded := 0
		for ok := range made {
			if ok {
				succeeded++
			}
		}
		Expect(succeeded).To(Equal(1))
		Expect(docs.Calls(echo)).To(Equal(1))

		By("the API server refuses a second use of the approval as read before the first")
		stale.Status.ConsumedAt = &metav1.Time{Time: time.Now()}
		stale.Status.CallID = "second"
		Expect(apierrors.IsConflict(k8sClient.Status().Update(ctx, stale))).To(BeTrue())
	})

	It("does not use an expired approval, and the sweeper deletes expired ones", func() {
		ctx := context.Background()
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect((&urlCapable{}).options(false), modernEra)
		args := map[string]any{"text": "late"}
		callWaiting(cs, modernEra, docs.local(echo), args)
		name := approvalsOf(ns)[0].Name
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		Expect(alice.decide(ns, name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())

		clock.advance(gateway.DefaultApprovalTTL + time.Minute)
		e := callWaiting(cs, modernEra, docs.local(echo), args)
		Expect(e.ElicitationID).NotTo(Equal(ns+"/"+name), "an expired approval is not used; the call waits for a new one")
		Expect(docs.Calls(echo)).To(BeZero())

		sweeper := &approvals.Sweeper{Client: k8sClient, Clock: testingclock.NewFakePassiveClock(time.Now().Add(gateway.DefaultApprovalTTL + 2*time.Hour))}
		_, err := sweeper.Sweep(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(approvalsOf(ns)).To(BeEmpty(), "both the expired and the newer one are past expiry plus the hour kept")
	})

	It("never uses an approval object the gateway did not write", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect((&urlCapable{}).options(false), modernEra)
		args := map[string]any{"text": "x"}
		callWaiting(cs, modernEra, docs.local(echo), args)
		real := approvalsOf(ns)[0]
		// A copy of the real approval with another name and seal, written
		// by someone else and approved.
		fake := forgedApproval(ns, real.Spec.Caller)
		fake.Labels = real.Labels
		fake.Spec = real.Spec
		fake.Spec.Seal = "forged"
		Expect(k8sClient.Create(context.Background(), fake)).To(Succeed())
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		Expect(alice.decide(ns, fake.Name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		Expect(callWaiting(cs, modernEra, docs.local(echo), args).ElicitationID).To(Equal(ns + "/" + real.Name))
		Expect(docs.Calls(echo)).To(BeZero())
	})
})

var _ = Describe("The approval signing key", func() {
	It("is rotated without refusing an approval sealed before, and a key dropped from the Secret no longer counts", func() {
		ctx := context.Background()
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		cs := bot.connect((&urlCapable{}).options(false), modernEra)
		setKeys := func(current, previous string) {
			s := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: keyNamespace, Name: "approval-key"}, s)).To(Succeed())
			s.Data = map[string][]byte{"current": []byte(current)}
			if previous != "" {
				s.Data["previous"] = []byte(previous)
			}
			Expect(k8sClient.Update(ctx, s)).To(Succeed())
			// Past the gateway's one-minute cache of the keys.
			clock.advance(2 * time.Minute)
		}
		before := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: keyNamespace, Name: "approval-key"}, before)).To(Succeed())
		old := string(before.Data["current"])
		next, third := strings.Repeat("n", 32)+fmt.Sprint(rand.Uint32()), strings.Repeat("t", 32)+fmt.Sprint(rand.Uint32())

		one := map[string]any{"text": "sealed before the rotation"}
		callWaiting(cs, modernEra, docs.local(echo), one)
		first := approvalsOf(ns)[0].Name

		By("current moves to previous: the approval sealed with it is still used")
		setKeys(next, old)
		Expect(alice.decide(ns, first, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		res, err := retry(cs, modernEra, docs.local(echo), one)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(docs.Calls(echo)).To(Equal(1))

		By("a key no longer in the Secret seals nothing the gateway will use")
		two := map[string]any{"text": "sealed with the second key"}
		e := callWaiting(cs, modernEra, docs.local(echo), two)
		_, second, _ := strings.Cut(e.ElicitationID, "/")
		setKeys(third, "")
		Expect(alice.decide(ns, second, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		Expect(callWaiting(cs, modernEra, docs.local(echo), two).ElicitationID).NotTo(Equal(ns + "/" + second))
		Expect(docs.Calls(echo)).To(Equal(1))
	})
})
