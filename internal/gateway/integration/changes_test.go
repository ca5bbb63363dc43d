package integration_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// told counts the notifications/tools/list_changed a go-sdk client
// session receives.
type told struct{ n atomic.Int32 }

func (t *told) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { t.n.Add(1) }}
}

func (t *told) count() int { return int(t.n.Load()) }

var _ = Describe("Agents told when what they may see changes", func() {
	var (
		ns   string
		docs *upstream
	)
	BeforeEach(func() {
		ns = newNamespace()
		docs = newUpstream(ns, "docs", mcpserver.Options{}, nil)
	})

	DescribeTable("tells a session when a tool it may see is disabled, and not when one it cannot see is",
		func(era string) {
			docs.enable(echo)
			docs.enable(fail)
			// bot may call echo only; peer may call fail only.
			bot, peer := newAgent(ns, "bot"), newAgent(ns, "peer")
			bot.grant(docs.object(echo))
			bot.ceiling(mcpv1alpha1.DataClassInternal)
			peer.grant(docs.object(fail))
			peer.ceiling(mcpv1alpha1.DataClassInternal)
			var botTold, peerTold told
			botSession := bot.connect(botTold.options(), era)
			peerSession := peer.connect(peerTold.options(), era)
			Expect(toolNames(botSession)).To(Equal([]string{docs.local(echo)}))
			Expect(toolNames(peerSession)).To(Equal([]string{docs.local(fail)}))

			By("fail, which bot cannot see, is disabled: peer is told, bot is not")
			docs.setEnabled(fail, false)
			Eventually(peerTold.count, 20*time.Second, 50*time.Millisecond).Should(Equal(1))
			Expect(toolNames(peerSession)).To(BeEmpty(), "peer's own session no longer offers it")

			By("echo, which bot may see, is disabled: bot is told, on the session it has")
			docs.setEnabled(echo, false)
			Eventually(botTold.count, 20*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 1))
			Expect(toolNames(botSession)).To(BeEmpty())
			// A session's notifications arrive in order: the one for echo
			// is the first bot got, so there was none for fail.
			Expect(botTold.count()).To(Equal(1))
			Expect(peerTold.count()).To(Equal(1), "peer cannot see echo")

			By("a call of echo all the same is refused, with the reason")
			isErr, txt := call(botSession, docs.local(echo), map[string]any{"text": "x"})
			Expect(isErr).To(BeTrue())
			Expect(txt).To(ContainSubstring("it is disabled"))
		},
		Entry("in an initialize-era session", legacyEra),
		Entry("on a 2026-07-28 subscriptions/listen stream", modernEra),
	)

	It("offers a tool enabled after an initialize-era session began, on that session, once it told it", func() {
		a := newAgent(ns, "bot").allowInternal()
		var t told
		cs := a.connect(t.options(), legacyEra)
		Expect(toolNames(cs)).To(BeEmpty())
		docs.enable(fail)
		Eventually(t.count, 20*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 1))
		Expect(toolNames(cs)).To(Equal([]string{docs.local(fail)}))
		isErr, txt := call(cs, docs.local(fail), nil)
		Expect(isErr).To(BeTrue())
		Expect(txt).To(Equal(mcpserver.FailText), "the session offers it, and the call is made")
	})

	It("tells a session a bounded number of times for a burst of a hundred updates", func() {
		docs.enable(echo)
		a := newAgent(ns, "bot").allowInternal()
		var t told
		cs := a.connect(t.options(), modernEra)
		Expect(toolNames(cs)).To(Equal([]string{docs.local(echo)}))

		// A hundred updates of the reviewed text agents read, as fast as
		// the API server takes them.
		start := time.Now()
		for i := range 100 {
			docs.patchSpec(echo, func(s *mcpv1alpha1.McpToolSpec) {
				s.ReviewedText = &mcpv1alpha1.ReviewedText{Description: fmt.Sprintf("Returns its text argument (%d).", i)}
			})
		}
		docs.waitTool(echo, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		Eventually(func() string {
			t := listed(cs, docs.local(echo))
			if t == nil {
				return ""
			}
			return t.Description
		}, 20*time.Second, 100*time.Millisecond).Should(Equal("Returns its text argument (99)."))
		Eventually(t.count, 20*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 1))
		// At most one round per debounce interval since the burst began,
		// and one notification per round.
		bound := int(time.Since(start)/gateway.DefaultListChangeDebounce) + 1
		Expect(t.count()).To(BeNumerically("<=", bound))
		Expect(t.count()).To(BeNumerically("<", 100))
	})

	It("marks 2026-07-28 list results private to the caller, with the list TTL", func() {
		docs.enable(echo)
		a := newAgent(ns, "bot").allowInternal()
		cs := a.connect(nil, modernEra)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.ListTools(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.CacheScope).To(Equal("private"))
		Expect(res.TTLMs).To(Equal(int(gateway.DefaultListTTL.Milliseconds())))
		Expect(cs.InitializeResult().Capabilities.Tools.ListChanged).To(BeTrue())
	})
})

// patchSpec changes an McpTool's spec without waiting for its controller.
func (u *upstream) patchSpec(remote string, change func(*mcpv1alpha1.McpToolSpec)) {
	GinkgoHelper()
	t := u.tool(remote)
	patch := client.MergeFrom(t.DeepCopy())
	change(&t.Spec)
	Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
}
