package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("A server that amplifies its catalog", func() {
	It("fails the import with CatalogTooLarge, writes nothing, and keeps the last good catalog", func(ctx SpecContext) {
		ns := newNamespace()
		// 100 pages near 2 MiB each, every definition a deep schema whose
		// nested descriptions survive normalisation: about 200 MiB offered
		// under the API's default ceilings.
		hostile := mcpserver.StartHostile(GinkgoT(), mcpserver.HostileOptions{})
		Expect(hostile.ToolsPerPage()*100).To(BeNumerically("<=", 2000), "the catalog fits the default maxTools, so only the byte budget stops it")
		// Reading up to 64 MiB takes long on a small machine: the bounds are
		// generous, the assertions exact. The operation timeout has a
		// ceiling of 5m.
		wait := bound(90 * time.Second)
		slow := withTimeout(min(wait, 5*time.Minute))

		// A server that was never good: nothing is written for it.
		createServer(ns, "bloat", hostile.URL, slow)
		Eventually(serverConditions(ns, "bloat"), wait).
			Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonCatalogTooLarge))
		Expect(listTools(ns)).To(BeEmpty(), "no McpTool is written for a refused import")
		Expect(hostile.PagesServed()).To(BeNumerically("<", 100), "the import stopped at the page that crossed the budget")
		srv := getServer(ns, "bloat")
		Expect(srv.Spec.Import.MaxCatalogBytes).To(Equal(int64(16<<20)), "the API defaults the budget")
		Expect(srv.Status.LastImportTime).To(BeNil())
		// Only a change to the spec cures it: the server stalls rather than
		// reading the catalog again every interval.
		Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonCatalogTooLarge))

		// A server with a good catalog that turns hostile: its tools stay
		// exactly as they were.
		good := startMCP(mcpserver.Options{Tools: 3})
		createServer(ns, "turns", good.URL, slow)
		waitReady(ns, "turns", 90*time.Second)
		Expect(listTools(ns)).To(HaveLen(3 + len(mcpserver.BuiltinTools())))
		before := catalogOf(ns)
		imported := getServer(ns, "turns").Status.LastImportTime

		s := getServer(ns, "turns")
		patch := client.MergeFrom(s.DeepCopy())
		s.Spec.URL = hostile.URL
		Expect(k8sClient.Patch(context.Background(), s, patch)).To(Succeed())
		Eventually(serverConditions(ns, "turns"), wait).
			Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonCatalogTooLarge))
		// The McpTool controller may still note that the server is not
		// Ready; what the import writes (the definitions, their Imported
		// condition) and the set of tools do not change.
		Consistently(func() map[string]importedTool { return catalogOf(ns) }, settle).Should(Equal(before),
			"no McpTool imported, changed or deleted on a refused import")
		after := getServer(ns, "turns")
		Expect(after.Status.LastImportTime).To(Equal(imported), "the last good import is still the one on record")
		Expect(after.Status.Tools.Imported).To(Equal(int32(3 + len(mcpserver.BuiltinTools()))))

		// A budget raised to its maximum is the spec change that imports
		// again at once; it still refuses ~200 MiB.
		s = getServer(ns, "bloat")
		patch = client.MergeFrom(s.DeepCopy())
		s.Spec.Import.MaxCatalogBytes = 64 << 20
		Expect(k8sClient.Patch(context.Background(), s, patch)).To(Succeed())
		Eventually(func(g Gomega) int64 {
			c := getServer(ns, "bloat")
			for _, cd := range c.Status.Conditions {
				if cd.Type == mcpv1alpha1.ConditionCatalogSynced && cd.ObservedGeneration == c.Generation {
					g.Expect(cd.Reason).To(Equal(mcpv1alpha1.ReasonCatalogTooLarge))
					return cd.ObservedGeneration
				}
			}
			return 0
		}, wait).Should(BeNumerically(">", 1))
		Expect(listTools(ns)).To(HaveLen(3 + len(mcpserver.BuiltinTools())))
	})
})

// importedTool is what an import writes to one McpTool.
type importedTool struct {
	Spec        mcpv1alpha1.McpToolSpec
	Hash        string
	Description string
	Schema      string
	Imported    metav1.Condition
}

// catalogOf is what the imports wrote to the McpTools of a namespace.
func catalogOf(ns string) map[string]importedTool {
	out := map[string]importedTool{}
	for n, t := range listTools(ns) {
		it := importedTool{Spec: t.Spec, Hash: t.Status.DefinitionHash, Description: t.Status.Description}
		if t.Status.InputSchema != nil {
			it.Schema = string(t.Status.InputSchema.Raw)
		}
		if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionImported); c != nil {
			it.Imported = *c
		}
		out[n] = it
	}
	return out
}
