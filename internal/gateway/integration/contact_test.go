package integration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Last contact", func() {
	It("records a completed call in the gateway's metric and leaves McpServer status to the controller", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		a := newAgent(ns, "bot").allowInternal()
		key := types.NamespacedName{Namespace: ns, Name: "docs"}
		srv := &mcpv1alpha1.McpServer{}
		Expect(k8sClient.Get(context.Background(), key, srv)).To(Succeed())
		Expect(srv.Status.LastContactTime).NotTo(BeNil(), "the import made contact")
		imported := srv.Status.LastContactTime.Time
		// Status times have second precision: start the call in a later
		// second than the import's contact, so that a status write by the
		// call would show. Probes are an hour apart in this suite, and an
		// import too: the controller has no reason to write the time again.
		Eventually(func() bool { return time.Now().Truncate(time.Second).After(imported) }, 3*time.Second, 50*time.Millisecond).Should(BeTrue())
		called := clock.now()
		contact := metrics.GatewayLastContact.WithLabelValues(ns, docs.name)
		Expect(testutil.ToFloat64(contact)).To(BeZero(), "no call was made yet")

		isErr, txt := call(a.connect(nil, legacyEra), docs.local(echo), map[string]any{"text": "hi"})
		Expect(isErr).To(BeFalse(), txt)

		// The gauge is set before the call is answered.
		Expect(testutil.ToFloat64(contact)).To(BeNumerically(">=", float64(called.UnixMilli())/1e3))
		got := &mcpv1alpha1.McpServer{}
		Expect(k8sClient.Get(context.Background(), key, got)).To(Succeed())
		Expect(got.Status.LastContactTime.Time).To(Equal(imported), "the gateway wrote the server's status")
	})
})
