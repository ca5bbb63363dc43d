package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// gauge reads one series of the manager's registry, as a scrape would; ok
// is false when the series does not exist.
func gauge(name string, labels map[string]string) (value float64, ok bool) {
	mfs, err := crmetrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func gaugeOf(name string, labels map[string]string) func() float64 {
	return func() float64 {
		v, ok := gauge(name, labels)
		if !ok {
			return -1
		}
		return v
	}
}

var _ = Describe("Per-object state metrics", func() {
	It("publish each server's Ready, Reachable and suspension, and its tools by Ready reason, while the objects exist", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "up", up.URL)
		waitReady(ns, "up", 30*time.Second)
		settledTools(ns, len(mcpserver.BuiltinTools()))
		createServer(ns, "down", "http://127.0.0.1:1/mcp")
		Eventually(serverConditions(ns, "down")).Should(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonUnreachable))

		upL := map[string]string{"namespace": ns, "server": "up"}
		downL := map[string]string{"namespace": ns, "server": "down"}
		Eventually(gaugeOf("mcp_catalog_server_ready", upL)).Should(Equal(1.0))
		Eventually(gaugeOf("mcp_catalog_server_reachable", upL)).Should(Equal(1.0))
		Eventually(gaugeOf("mcp_catalog_server_suspended", upL)).Should(Equal(0.0))
		Eventually(gaugeOf("mcp_catalog_server_ready", downL)).Should(Equal(0.0))
		Eventually(gaugeOf("mcp_catalog_server_reachable", downL)).Should(Equal(0.0))

		tools := func(reason string) func() float64 {
			return gaugeOf("mcp_catalog_tools_by_ready_reason", map[string]string{"namespace": ns, "server": "up", "reason": reason})
		}
		n := float64(len(mcpserver.BuiltinTools()))
		Eventually(tools(mcpv1alpha1.ReasonDisabled)).Should(Equal(n))
		echo := toolObjectName("up", mcpserver.ToolEcho)
		enableApproved(ns, echo)
		Eventually(tools(mcpv1alpha1.ReasonSucceeded)).Should(Equal(1.0))
		Eventually(tools(mcpv1alpha1.ReasonDisabled)).Should(Equal(n - 1))

		// Suspended, the server says so; deleted, its series are gone.
		srv := getServer(ns, "up")
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Suspend = true
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		Eventually(gaugeOf("mcp_catalog_server_suspended", upL)).Should(Equal(1.0))
		Expect(k8sClient.Delete(context.Background(), getServer(ns, "down"))).To(Succeed())
		Eventually(gaugeOf("mcp_catalog_server_ready", downL)).Should(Equal(-1.0), "no series for a deleted server")
	})
})
