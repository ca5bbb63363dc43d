package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Manager restart", func() {
	It("converges after a restart in the middle of an import, with no duplicate and no lost tool", func() {
		const catalogSize = 1500
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: catalogSize, PageSize: 300})
		// One tool declared in Git beforehand, enabled: it must come through
		// the interruption still enabled and exactly once.
		applyFromGit(ns, "rs", mcpserver.CatalogToolName(1), true, "")
		createServer(ns, "rs", up.URL, withMaxTools(3000))

		// Stop the manager once the import has written some tools but not
		// all of them.
		Eventually(func() int { return len(listTools(ns)) }, bound(60*time.Second), 50*time.Millisecond).Should(BeNumerically(">", 100))
		mgr.Stop()
		// Whatever happens below, the specs after this one get a manager.
		DeferCleanup(func() {
			if mgr.Stopped() {
				mgr = startManager()
			}
		})
		partial := len(listTools(ns))
		Expect(partial).To(BeNumerically("<", catalogSize+5), "the import was interrupted")
		GinkgoWriter.Printf("stopped with %d of %d tools written\n", partial, catalogSize+5)

		mgr = startManager()
		srv := waitReady(ns, "rs", 2*time.Minute)
		Expect(srv.Status.Tools.Imported).To(Equal(int32(catalogSize + 5)))

		tools := listTools(ns)
		Expect(tools).To(HaveLen(catalogSize + 5))
		seen := map[string]int{}
		for _, t := range tools {
			seen[t.Spec.RemoteName]++
			Expect(t.Name).To(Equal(toolObjectName("rs", t.Spec.RemoteName)))
		}
		for _, name := range up.ToolNames() {
			Expect(seen).To(HaveKeyWithValue(name, 1))
		}
		first := getTool(ns, toolObjectName("rs", mcpserver.CatalogToolName(1)))
		Expect(first.Spec.Enabled).To(BeTrue())
		Eventually(toolConditions(ns, first.Name), bound(60*time.Second)).Should(haveCondition(mcpv1alpha1.ConditionReady, "False", mcpv1alpha1.ReasonDefinitionNotApproved))
		applyFromGit(ns, "rs", mcpserver.CatalogToolName(1), true, first.Status.DefinitionHash)
		Eventually(toolConditions(ns, first.Name), bound(60*time.Second)).Should(haveCondition(mcpv1alpha1.ConditionReady, "True", mcpv1alpha1.ReasonSucceeded))
	})
})
