package controller_test

import (
	"github.com/prometheus/client_golang/prometheus/testutil"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Metrics", func() {
	It("publish tool counts per server, import durations and probe failures by reason", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: 7})
		importsBefore := testutil.CollectAndCount(metrics.ImportDuration)
		createServer(ns, "counted", up.URL)
		waitReady(ns, "counted", operationTimeout*4)
		want := float64(7 + len(mcpserver.BuiltinTools()))
		Eventually(func() float64 {
			return testutil.ToFloat64(metrics.Tools.WithLabelValues(ns, "counted", "imported"))
		}).Should(Equal(want))
		Expect(testutil.ToFloat64(metrics.Tools.WithLabelValues(ns, "counted", "enabled"))).To(BeZero())
		Expect(testutil.CollectAndCount(metrics.ImportDuration)).To(BeNumerically(">=", max(importsBefore, 1)))

		failuresBefore := testutil.ToFloat64(metrics.ProbeFailures.WithLabelValues(mcpv1alpha1.ReasonUnreachable))
		createServer(ns, "nowhere", "http://127.0.0.1:1/mcp")
		Eventually(serverConditions(ns, "nowhere")).Should(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonUnreachable))
		Expect(testutil.ToFloat64(metrics.ProbeFailures.WithLabelValues(mcpv1alpha1.ReasonUnreachable))).To(BeNumerically(">", failuresBefore))
	})
})
