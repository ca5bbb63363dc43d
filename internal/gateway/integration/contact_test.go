package integration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Last contact", func() {
	It("records a completed call as the server's last contact and latency", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		a := newAgent(ns, "bot").allowInternal()
		key := types.NamespacedName{Namespace: ns, Name: "docs"}
		srv := &mcpv1alpha1.McpServer{}
		Expect(k8sClient.Get(context.Background(), key, srv)).To(Succeed())
		Expect(srv.Status.LastContactTime).NotTo(BeNil(), "the import made contact")
		imported := srv.Status.LastContactTime.Time
		// Status times have second precision: start the call in a later
		// second than the import's contact, so that only the call can
		// account for a later time. Probes are an hour apart in this suite.
		Eventually(func() bool { return time.Now().Truncate(time.Second).After(imported) }, 3*time.Second, 50*time.Millisecond).Should(BeTrue())
		called := time.Now().Truncate(time.Second)

		isErr, txt := call(a.connect(nil, legacyEra), docs.local(echo), map[string]any{"text": "hi"})
		Expect(isErr).To(BeFalse(), txt)

		Eventually(func(g Gomega) {
			got := &mcpv1alpha1.McpServer{}
			g.Expect(k8sClient.Get(context.Background(), key, got)).To(Succeed())
			g.Expect(got.Status.LastContactTime).NotTo(BeNil())
			g.Expect(got.Status.LastContactTime.Time).To(BeTemporally(">=", called))
			g.Expect(got.Status.LastContactLatency).NotTo(BeNil())
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	})
})
