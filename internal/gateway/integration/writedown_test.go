package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testenv"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// No write-down across replicas (issue #35 items 2 and 3). Two gateway
// replicas, each a process of its own as far as the gateway can tell (a
// manager, a cache, a client), serve one API server, stateless as the
// chart runs them. A proxy in front sends an agent's tool calls to them in
// turn, so that the call after a read is always served by the replica
// that did not return the read, right after it returned. The race is made
// the worst it can be: once the replicas are up, their caches are never
// told of an McpReadMark again (the watch events are held), as a replica
// whose watch lags would be; the guarantee must hold all the same.
var _ = Describe("No write-down", Ordered, func() {
	var replicas [2]string
	held := &heldWatches{resource: "/mcpreadmarks"}
	BeforeAll(func() {
		for i := range replicas {
			replicas[i] = startReplica(held)
		}
		held.hold()
	})

	// setup is a namespace with a Confidential CRM, reviewed as closed-world
	// and read-only, a Public web search nobody reviewed (so open-world),
	// and an agent allowed both, held to the write-down rule.
	setup := func(action mcpv1alpha1.WriteDownAction) (string, *upstream, *upstream, *agent) {
		ns := newNamespace()
		crm := newUpstream(ns, "crm", mcpserver.Options{}, []string{echo}, withDataClass(mcpv1alpha1.DataClassConfidential))
		approved := crm.tool(echo).Spec.ApprovedDefinitionHash
		crm.setSpecSeen(echo, func(s *mcpv1alpha1.McpToolSpec) {
			s.ReviewedEffects = &mcpv1alpha1.ReviewedEffects{DefinitionHash: approved, ReadOnly: ptr.To(true), OpenWorld: ptr.To(false)}
		})
		web := newUpstream(ns, "web", mcpserver.Options{}, []string{echo}, withDataClass(mcpv1alpha1.DataClassPublic))
		bot := newAgent(ns, "bot")
		bot.grant()
		p := &mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot"},
			Spec: mcpv1alpha1.McpAccessPolicySpec{
				ServiceAccounts: []string{"bot"}, MaxDataClass: mcpv1alpha1.DataClassConfidential,
				WriteDown: &mcpv1alpha1.WriteDownRule{Action: action, Window: &metav1.Duration{Duration: time.Hour}},
			},
		}
		Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
		for _, r := range mgrsOfReplicas {
			Eventually(func() error {
				return r.GetClient().Get(context.Background(), client.ObjectKeyFromObject(p), &mcpv1alpha1.McpAccessPolicy{})
			}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		}
		return ns, crm, web, bot
	}

	// refusedByTheMark checks the refusal of the open-world call: it names
	// the read that raised the mark and its time, never the value read,
	// and nothing was sent.
	refusedByTheMark := func(ns string, crm, web *upstream, isErr bool, txt, secret string) {
		GinkgoHelper()
		Expect(isErr).To(BeTrue(), txt)
		Expect(txt).To(HavePrefix("Refused by the MCP catalog gateway: "))
		Expect(txt).To(ContainSubstring("received Confidential data from the tool " + crm.local(echo) + " at "))
		Expect(txt).To(ContainSubstring("open-world"))
		Expect(txt).NotTo(ContainSubstring(secret))
		Expect(web.Calls(echo)).To(BeZero(), "nothing was sent to the open-world tool")
		denied := auditFor(ns, web.object(echo))
		Expect(denied).NotTo(BeEmpty())
		last := denied[len(denied)-1]
		Expect([]string{last.Phase, last.Reason, last.Detail, last.WriteDown, last.MarkClass, last.MarkTool}).To(Equal(
			[]string{audit.PhaseDenied, audit.DenyWriteDown, "Confidential", "Refused", "Confidential", crm.local(echo)}))
		Expect(txt).To(ContainSubstring(last.MarkReadAt))
	}

	DescribeTable("a read on one replica holds back the next call on the other (go-sdk)",
		func(era string, first int) {
			ns, crm, web, bot := setup(mcpv1alpha1.WriteDownRefuse)
			proxy := newCallAlternator(replicas, first)
			cs, err := connectTo(proxy.url, bot.token, era)
			Expect(err).NotTo(HaveOccurred())
			secret := fmt.Sprintf("customer-iban-%016x", rand.Uint64())

			By("reading the Confidential CRM: the result, once the caller's mark is raised")
			isErr, txt := call(cs, crm.local(echo), map[string]any{"text": secret})
			Expect(isErr).To(BeFalse(), txt)
			Expect(txt).To(Equal(secret))
			recs := auditFor(ns, crm.object(echo))
			Expect([]string{recs[len(recs)-1].WriteDown, recs[len(recs)-1].MarkClass}).To(Equal([]string{"Raised", "Confidential"}))

			By("passing it to the open-world web search, on the other replica, right away: refused")
			isErr, txt = call(cs, web.local(echo), map[string]any{"text": secret})
			refusedByTheMark(ns, crm, web, isErr, txt, secret)
			Expect(proxy.servedCalls()).To(Equal([]int{first, 1 - first}), "the read and the call were served by different replicas")

			By("the mark: one object, the caller's, naming the read")
			m := &mcpv1alpha1.McpReadMark{}
			Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: governance.ReadMarkName(bot.user())}, m)).To(Succeed())
			Expect(m.Spec.Caller).To(Equal(bot.user()))
			Expect(m.Spec.Marks).To(HaveLen(1))
			Expect([]string{string(m.Spec.Marks[0].DataClass), m.Spec.Marks[0].Tool}).To(Equal([]string{"Confidential", crm.local(echo)}))

			By("reading the CRM again, on either replica: allowed (closed-world, the same class), and no write")
			for range 2 {
				isErr, txt = call(cs, crm.local(echo), map[string]any{"text": "again"})
				Expect(isErr).To(BeFalse(), txt)
			}
			Expect(testutil.ToFloat64(metrics.GatewayReadMarkWrites.WithLabelValues(ns))).To(Equal(1.0), "the mark was written once: when it rose")

			By("a person resets the mark: the web search is allowed again")
			Expect(k8sClient.Delete(context.Background(), m)).To(Succeed())
			Eventually(func(g Gomega) {
				isErr, txt := call(cs, web.local(echo), map[string]any{"text": "public question"})
				g.Expect(isErr).To(BeFalse(), txt)
			}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
			Expect(web.Calls(echo)).To(Equal(1))
		},
		Entry("2025-11-25, read on replica 0", legacyEra, 0),
		Entry("2025-11-25, read on replica 1", legacyEra, 1),
		Entry("2026-07-28, read on replica 0", modernEra, 0),
		Entry("2026-07-28, read on replica 1", modernEra, 1),
	)

	DescribeTable("the TypeScript SDK's client reads a Confidential result and is refused the open-world tool on either replica",
		func(first int) {
			ns, crm, web, bot := setup(mcpv1alpha1.WriteDownRefuse)
			proxy := newCallAlternator(replicas, first)
			secret := fmt.Sprintf("customer-iban-%016x", rand.Uint64())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := tsagent.Run(ctx, proxy.url, bot.token,
				tsagent.Call(crm.local(echo), map[string]any{"text": secret}),
				tsagent.Call(web.local(echo), map[string]any{"text": secret}),
			)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Connect.Error).To(BeNil())
			Expect(res.Steps).To(HaveLen(2))
			for _, o := range res.Steps {
				Expect(o.Error).To(BeNil(), o.Op)
			}
			Expect(res.Steps[0].IsError).To(BeFalse(), res.Steps[0].Text())
			Expect(res.Steps[0].Text()).To(Equal(secret))
			refusedByTheMark(ns, crm, web, res.Steps[1].IsError, res.Steps[1].Text(), secret)
			Expect(proxy.servedCalls()).To(Equal([]int{first, 1 - first}))
		},
		Entry("read on replica 0, refused on replica 1", 0),
		Entry("read on replica 1, refused on replica 0", 1),
	)

	It("with RequireApproval, the call after the read waits for a person instead", func() {
		ns, crm, web, bot := setup(mcpv1alpha1.WriteDownRequireApproval)
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(ns))).To(Succeed())
		})
		proxy := newCallAlternator(replicas, 0)
		cs, err := connectTo(proxy.url, bot.token, modernEra)
		Expect(err).NotTo(HaveOccurred())
		isErr, txt := call(cs, crm.local(echo), map[string]any{"text": "read"})
		Expect(isErr).To(BeFalse(), txt)
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: web.local(echo), Arguments: map[string]any{"text": "read"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeTrue(), "a client without URL elicitation is told in words: %s", text(res))
		Expect(text(res)).To(ContainSubstring("approv"))
		Expect(web.Calls(echo)).To(BeZero())
		var approvals mcpv1alpha1.McpCallApprovalList
		Expect(k8sClient.List(context.Background(), &approvals, client.InNamespace(ns))).To(Succeed())
		Expect(approvals.Items).To(HaveLen(1))
		Expect(approvals.Items[0].Spec.LocalName).To(Equal(web.local(echo)))
		recs := auditFor(ns, web.object(echo))
		last := recs[len(recs)-1]
		Expect([]string{last.WriteDown, last.MarkTool, last.Approval}).To(Equal([]string{"ApprovalRequired", crm.local(echo), "Required"}))
	})
})

// mgrsOfReplicas are the managers of the write-down specs' replicas.
var mgrsOfReplicas []*testenv.Manager

// startReplica starts a manager running only the gateway, stateless, for
// every namespace, its watches passing through held, and returns its MCP
// endpoint. It stops when the container ends.
func startReplica(held *heldWatches) string {
	GinkgoHelper()
	ready := make(chan string, 1)
	opts := gatewayOptions(ready)
	opts.Components = manager.ComponentsGateway
	opts.GatewayStateless = true
	rc := rest.CopyConfig(cfg)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return held.wrap(rt) })
	r := testenv.StartManager(rc, opts)
	DeferCleanup(r.Stop)
	mgrsOfReplicas = append(mgrsOfReplicas, r)
	var addr string
	Eventually(ready, 30*time.Second).Should(Receive(&addr))
	return "http://" + addr + "/mcp"
}

// user is the agent's user name.
func (a *agent) user() string { return "system:serviceaccount:" + a.ns + ":" + a.name }

// callAlternator is a reverse proxy to two gateway replicas: the n-th
// tools/call goes to replica (first+n) mod 2, every other request to the
// replica of the first call.
type callAlternator struct {
	url     string
	proxies [2]*httputil.ReverseProxy
	first   int

	mu    sync.Mutex
	calls []int
}

func newCallAlternator(replicas [2]string, first int) *callAlternator {
	GinkgoHelper()
	a := &callAlternator{first: first}
	for i, r := range replicas {
		u, err := url.Parse(r)
		Expect(err).NotTo(HaveOccurred())
		u.Path = ""
		a.proxies[i] = httputil.NewSingleHostReverseProxy(u)
	}
	srv := httptest.NewServer(a)
	DeferCleanup(srv.Close)
	a.url = srv.URL + "/mcp"
	return a
}

func (a *callAlternator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	to := a.first
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.Contains(string(body), `"method":"tools/call"`) {
			a.mu.Lock()
			to = (a.first + len(a.calls)) % 2
			a.calls = append(a.calls, to)
			a.mu.Unlock()
		}
	}
	a.proxies[to].ServeHTTP(w, r)
}

// servedCalls are the replicas the tools/calls went to, in order.
func (a *callAlternator) servedCalls() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.calls...)
}

// heldWatches holds back, once hold is called, every event of the watches
// of one resource: a cache that lists and watches through it stays as it
// was, as the cache of a replica whose watch lags.
type heldWatches struct {
	resource string
	holding  atomic.Bool
}

func (h *heldWatches) hold() { h.holding.Store(true) }

func (h *heldWatches) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil && r.URL.Query().Get("watch") == "true" && strings.HasSuffix(r.URL.Path, h.resource) {
			resp.Body = &heldBody{ReadCloser: resp.Body, h: h, closed: make(chan struct{})}
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// heldBody is a watch's body: what it reads once the watches are held is
// never handed on, and a read ends only when the body is closed.
type heldBody struct {
	io.ReadCloser
	h         *heldWatches
	closeOnce sync.Once
	closed    chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.h.holding.Load() {
		<-b.closed
		return 0, io.EOF
	}
	return n, err
}

func (b *heldBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return b.ReadCloser.Close()
}
