package controller_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Faults", func() {
	// Each fault hits a server whose catalog was imported successfully
	// before; the failed import and probe must leave that catalog and the
	// record of the last good contact exactly as they were.
	DescribeTable("a failing server keeps the last good catalog and records no contact",
		func(breakIt func(up *mcpserver.Server, f *front), reason string, stalled bool) {
			ns := newNamespace()
			token := newToken()
			putSecret(ns, "cred", token)
			up, err := mcpserver.New(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: token})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(up.Close)
			f := newFront(up.Handler())
			createServer(ns, "flaky", f.url, withBearer("cred"))
			before := waitReady(ns, "flaky", 30*time.Second)
			settledTools(ns, 5)
			tools := resourceVersions(ns)
			Expect(tools).To(HaveLen(5))

			// A contact recorded after this point would show a later second.
			Eventually(func() bool { return time.Now().After(before.Status.LastContactTime.Add(time.Second)) }, 2*time.Second).Should(BeTrue())
			mark := requests.mark()
			hits := f.hits.Load()

			breakIt(up, f)
			v := time.Now().Format(time.RFC3339Nano)
			annotate(ns, "flaky", map[string]string{
				mcpv1alpha1.AnnotationRequestedImportAt: v,
				mcpv1alpha1.AnnotationRequestedProbeAt:  v,
			})
			Eventually(func(g Gomega) {
				srv := &mcpv1alpha1.McpServer{}
				g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "flaky"}, srv)).To(Succeed())
				g.Expect(srv.Status.LastHandledImportAt).To(Equal(v))
				g.Expect(srv.Status.LastHandledProbeAt).To(Equal(v))
				g.Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, reason))
				g.Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, reason))
				g.Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, reason))
			}, bound(20*time.Second), 100*time.Millisecond).Should(Succeed())

			after := getServer(ns, "flaky")
			Expect(after.Status.LastContactTime).To(Equal(before.Status.LastContactTime), "a failed operation is not a contact")
			Expect(after.Status.LastContactLatency).To(Equal(before.Status.LastContactLatency))
			Expect(after.Status.ServerInfo).To(Equal(before.Status.ServerInfo))
			Expect(after.Status.LastImportTime).To(Equal(before.Status.LastImportTime))
			Expect(after.Status.Tools).To(Equal(before.Status.Tools))
			Consistently(func() map[string]string { return resourceVersions(ns) }, settle).Should(Equal(tools), "no McpTool was written")
			Expect(requests.writes(mark, ns, "/mcptools")).To(BeEmpty())
			if stalled {
				Expect(after.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, reason))
			} else {
				Expect(after.Status.Conditions).NotTo(ContainElement(HaveField("Type", mcpv1alpha1.ConditionStalled)))
			}
			if reason != mcpv1alpha1.ReasonUnreachable {
				Expect(f.hits.Load()).To(BeNumerically(">", hits), "the operations reached the server")
			}
		},
		Entry("server down", func(_ *mcpserver.Server, f *front) { f.Close() }, mcpv1alpha1.ReasonUnreachable, false),
		Entry("401: the server no longer accepts the credential", func(up *mcpserver.Server, _ *front) { up.SetCredential(newToken()) }, mcpv1alpha1.ReasonUnauthorized, false),
		Entry("403", func(_ *mcpserver.Server, f *front) { f.set(faultForbidden) }, mcpv1alpha1.ReasonForbidden, false),
		Entry("oversized answer", func(_ *mcpserver.Server, f *front) { f.set(faultOversized) }, mcpv1alpha1.ReasonResponseTooLarge, false),
		Entry("redirect", func(_ *mcpserver.Server, f *front) { f.set(faultRedirect) }, mcpv1alpha1.ReasonRedirected, true),
		Entry("protocol violation: an HTML maintenance page", func(_ *mcpserver.Server, f *front) { f.set(faultHTML) }, mcpv1alpha1.ReasonProtocolError, false),
		Entry("protocol violation: an answer to another request", func(_ *mcpserver.Server, f *front) { f.set(faultForeignID) }, mcpv1alpha1.ReasonProtocolError, false),
		Entry("hung", func(_ *mcpserver.Server, f *front) { f.set(faultHang) }, mcpv1alpha1.ReasonTimeout, false),
	)

	It("keeps probing ten healthy servers on schedule while an eleventh hangs", func() {
		ns := newNamespace()
		hung := newFront(nil)
		hung.set(faultHang)
		createServer(ns, "hung", hung.url, withProbeInterval(probeInterval), withTimeout(time.Second))

		healthy := make([]*mcpserver.Server, 10)
		for i := range healthy {
			healthy[i] = startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
			createServer(ns, fmt.Sprintf("ok-%d", i), healthy[i].URL, withProbeInterval(probeInterval))
		}
		for i := range healthy {
			waitReady(ns, fmt.Sprintf("ok-%d", i), 30*time.Second)
		}
		Eventually(serverConditions(ns, "hung"), bound(10*time.Second)).Should(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonTimeout))
		Expect(getServer(ns, "hung").Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonTimeout))

		// Probes are due every interval plus up to a tenth of jitter, so
		// two intervals and a bit more hold at least two probes of each.
		start := make([]int, len(healthy))
		for i, s := range healthy {
			start[i] = handshakes(s)
		}
		hungStart := hung.hits.Load()
		// Every healthy server is probed twice more within two intervals,
		// their jitter and a second of slack.
		Eventually(func(g Gomega) {
			for i, s := range healthy {
				g.Expect(handshakes(s)-start[i]).To(BeNumerically(">=", 2), "server ok-%d missed a probe", i)
			}
		}, 2*probeEvery+probeEvery/5+time.Second, 50*time.Millisecond).Should(Succeed())
		for i := range healthy {
			Expect(getServer(ns, fmt.Sprintf("ok-%d", i)).Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		}
		// The hung server is retried on its own schedule, once per
		// interval: a failed import's handshake answers the probe too, so
		// each retry holds a worker for one budget, not two.
		Eventually(func() int64 { return hung.hits.Load() - hungStart }, 2*(probeEvery+time.Second)+time.Second).Should(BeNumerically(">=", 2))
		Expect(hung.minGap()).To(BeNumerically(">=", probeEvery*9/10), "retried once per interval, not at once")
	})
})
