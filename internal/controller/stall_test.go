package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Stalled", func() {
	// Stalled means a person has to act: nothing is scheduled for a stalled
	// server, and the person's change to the spec is what tries again.
	It("is not requeued, and a change to the spec tries again at once", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		f := newFront(up.Handler())
		f.set(faultRedirect)
		createServer(ns, "moved", f.url, withProbeInterval(probeInterval))
		Eventually(serverConditions(ns, "moved")).Should(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected))

		// A server that waits is probed every interval (see Faults); a
		// stalled one is not contacted at all for more than two.
		hits := f.hits.Load()
		Consistently(f.hits.Load, 2*probeEvery+probeEvery/5+time.Second, 250*time.Millisecond).Should(Equal(hits),
			"a stalled server was contacted without anything changing")
		Expect(getServer(ns, "moved").Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected))

		// The person fixes what was wrong and changes the spec: the import
		// runs again at once, with no request annotation.
		f.set(faultNone)
		srv := getServer(ns, "moved")
		before := srv.DeepCopy()
		srv.Spec.OperationTimeout = &metav1.Duration{Duration: operationTimeout + time.Second}
		Expect(k8sClient.Patch(context.Background(), srv, client.MergeFrom(before))).To(Succeed())
		after := waitReady(ns, "moved", 30*time.Second)
		Expect(after.Status.Conditions).NotTo(ContainElement(HaveField("Type", mcpv1alpha1.ConditionStalled)))
		Expect(f.hits.Load()).To(BeNumerically(">", hits))
	})
})
