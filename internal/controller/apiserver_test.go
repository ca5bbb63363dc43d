package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/apifault"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// Faults of the API server and of an upstream that comes and goes: the
// controllers carry on by themselves once the fault is over, and say what
// happened while it lasted.
var _ = Describe("API server and upstream faults", func() {
	It("resumes an import the API server interrupted, with no duplicate and no lost tool, and says what happened", func() {
		const catalogSize = 300
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: catalogSize, PageSize: 100})
		DeferCleanup(api.Up)

		// The API server takes the import's first McpTool writes and then
		// cannot take more (an etcd leader election, an overloaded server):
		// the import stops part-way.
		api.Refuse(apifault.InNamespace(ns, apifault.Writes("mcptools")), 80)
		createServer(ns, "ri", up.URL, withMaxTools(1000))
		Eventually(func(g Gomega) {
			srv := getServer(ns, "ri")
			c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(mcpv1alpha1.ReasonImportFailed))
			g.Expect(c.Message).To(ContainSubstring("writing McpTools failed"))
			g.Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonImportFailed))
		}, bound(60*time.Second), 100*time.Millisecond).Should(Succeed())
		partial := len(listTools(ns))
		Expect(partial).To(BeNumerically(">", 0))
		Expect(partial).To(BeNumerically("<", catalogSize+5), "the import was interrupted")
		GinkgoWriter.Printf("the API server refused writes with %d of %d tools written\n", partial, catalogSize+5)

		// Then it goes away altogether, as in a restart: every request is
		// refused and every watch ends. The manager keeps trying.
		api.Down()
		failed := api.Failed()
		Eventually(api.Failed, bound(30*time.Second)).Should(BeNumerically(">=", failed+20))

		// Back: the import resumes by itself.
		api.Up()
		srv := waitReady(ns, "ri", 2*time.Minute)
		Expect(srv.Status.Tools.Imported).To(Equal(int32(catalogSize + 5)))
		Expect(meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced).Reason).To(Equal(mcpv1alpha1.ReasonSucceeded))

		// Exactly the server's tools, each once, each with the definition
		// the server offers.
		tools := listTools(ns)
		Expect(tools).To(HaveLen(catalogSize + 5))
		seen := map[string]int{}
		for _, t := range tools {
			seen[t.Spec.RemoteName]++
			Expect(t.Name).To(Equal(toolObjectName("ri", t.Spec.RemoteName)))
			Expect(t.Status.DefinitionHash).NotTo(BeEmpty(), "tool %s has no definition", t.Name)
			Expect(t.Spec.ServerRef.Name).To(Equal("ri"))
		}
		for _, name := range up.ToolNames() {
			Expect(seen).To(HaveKeyWithValue(name, 1))
		}
		Expect(seen).To(HaveLen(len(up.ToolNames())))
	})

	It("marks a flapping server not Ready and Ready again on each swing, without a storm of status writes", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		f := newFront(up.Handler())
		createServer(ns, "flap", f.url, withProbeInterval(probeInterval))
		waitReady(ns, "flap", 30*time.Second)
		settledTools(ns, 5)
		mark := requests.mark()

		// Each swing: the server goes away (503 from its load balancer, or
		// a crash in the middle of a request) for a few probes, and comes
		// back for a few.
		swings := []faultMode{faultUnavailable, faultReset, faultUnavailable, faultReset}
		for _, mode := range swings {
			f.set(mode)
			Eventually(func(g Gomega) {
				srv := getServer(ns, "flap")
				g.Expect(meta.IsStatusConditionFalse(srv.Status.Conditions, mcpv1alpha1.ConditionReady)).To(BeTrue())
				c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(BeElementOf(mcpv1alpha1.ReasonServerError, mcpv1alpha1.ReasonUnreachable, mcpv1alpha1.ReasonProtocolError))
				g.Expect(c.Message).NotTo(BeEmpty())
			}, bound(20*time.Second), 100*time.Millisecond).Should(Succeed())
			// A few more failed probes change nothing more.
			hits := f.hits.Load()
			Eventually(f.hits.Load, bound(20*time.Second)).Should(BeNumerically(">=", hits+3))

			f.set(faultNone)
			waitReady(ns, "flap", 20*time.Second)
			hits = f.hits.Load()
			Eventually(f.hits.Load, bound(20*time.Second)).Should(BeNumerically(">=", hits+3))
		}

		// One status write for each change of Ready, and a little slack
		// for a write that lost a conflict or an import the recovery
		// asked for: not one a probe.
		writes := requests.writes(mark, "/namespaces/"+ns+"/mcpservers/flap/status")
		GinkgoWriter.Printf("%d status writes over %d swings\n", len(writes), len(swings))
		Expect(len(writes)).To(BeNumerically("<=", 2*len(swings)+4))
	})
})
