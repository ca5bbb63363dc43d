package controller_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/internal/fairqueue"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/tenancy"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// featuresOf counts the McpPrompts and McpResources labelled with server.
func featuresOf(ns, server string) int {
	sel := client.MatchingLabels{mcpv1alpha1.LabelServer: server}
	var prompts mcpv1alpha1.McpPromptList
	Expect(k8sClient.List(context.Background(), &prompts, client.InNamespace(ns), sel)).To(Succeed())
	var resources mcpv1alpha1.McpResourceList
	Expect(k8sClient.List(context.Background(), &resources, client.InNamespace(ns), sel)).To(Succeed())
	return len(prompts.Items) + len(resources.Items)
}

// The guards of docs/adr/024-tenant-fairness.md, each proven by an attack
// from one namespace that fails to reach another namespace or the process.
var _ = Describe("Tenancy", func() {
	It("keeps probing a quiet namespace on schedule while another namespace's tarpits hold every worker they may", func() {
		// The suite's manager has 4 workers: a namespace holds at most 3.
		ceiling := fairqueue.DefaultMaxPerTenant(4)
		noisy, quiet := newNamespace(), newNamespace()
		tarpit := mcpserver.StartTarpit(GinkgoT())
		// Twice as many tarpit servers as there are workers, each holding a
		// worker for three minutes, longer than the spec takes: with every
		// worker open to one namespace they would hold all four, and the
		// quiet namespace would get none.
		for i := range 8 {
			createServer(noisy, fmt.Sprintf("tarpit-%d", i), tarpit.URL, withProbeInterval(probeInterval), withTimeout(3*time.Minute))
		}
		Eventually(tarpit.Open, bound(10*time.Second)).Should(Equal(ceiling), "the noisy namespace takes the workers it may")
		Consistently(tarpit.Open, time.Second).Should(Equal(ceiling), "and no more")

		healthy := make([]*mcpserver.Server, 8)
		for i := range healthy {
			healthy[i] = startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
			createServer(quiet, fmt.Sprintf("ok-%d", i), healthy[i].URL, withProbeInterval(probeInterval))
		}
		for i := range healthy {
			waitReady(quiet, fmt.Sprintf("ok-%d", i), 30*time.Second)
		}
		// Every quiet server is probed twice more within two intervals,
		// their jitter and a second of slack, beside the tarpits.
		start := make([]int, len(healthy))
		for i, s := range healthy {
			start[i] = handshakes(s)
		}
		Eventually(func(g Gomega) {
			for i, s := range healthy {
				g.Expect(handshakes(s)-start[i]).To(BeNumerically(">=", 2), "server ok-%d missed a probe", i)
			}
		}, 2*probeEvery+probeEvery/5+time.Second, 50*time.Millisecond).Should(Succeed())
		Expect(tarpit.MostOpen()).To(Equal(ceiling), "the noisy namespace never held more than its share of the workers")
		Expect(tarpit.Open()).To(Equal(ceiling), "the tarpits are still holding their workers: the quiet namespace was served beside them")
	})

	It("holds no more catalog bytes in flight than the budget while one namespace imports hostile catalogs at once", func() {
		budget := tenancy.NewBudget(4 << 20)
		restartManager(func(o *manager.Options) { o.CatalogBudget = budget })
		hostile := mcpserver.StartHostile(GinkgoT(), mcpserver.HostileOptions{})
		noisy, quiet := newNamespace(), newNamespace()
		twoMiB := func(s *mcpv1alpha1.McpServerSpec) { s.Import.MaxCatalogBytes = 2 << 20 }
		// Eight imports of a catalog of about 200 MiB, each allowed 2 MiB:
		// three workers would read 6 MiB at once, and a fourth the quiet
		// namespace's; the budget holds 4 MiB, one namespace 2 MiB.
		const servers = 8
		for i := range servers {
			createServer(noisy, fmt.Sprintf("bloat-%d", i), hostile.URL, twoMiB, withTimeout(time.Minute))
		}
		var waited atomic.Bool
		stop := make(chan struct{})
		DeferCleanup(func() { close(stop) })
		go func() {
			defer GinkgoRecover()
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				var list mcpv1alpha1.McpServerList
				if k8sClient.List(context.Background(), &list) != nil {
					continue
				}
				for _, s := range list.Items {
					if c := meta.FindStatusCondition(s.Status.Conditions, mcpv1alpha1.ConditionReconciling); s.Namespace == noisy && c != nil && c.Reason == mcpv1alpha1.ReasonWaitingForCatalogBudget {
						waited.Store(true)
					}
				}
			}
		}()

		good := startMCP(mcpserver.Options{Tools: 3})
		createServer(quiet, "good", good.URL, twoMiB)
		waitReady(quiet, "good", 60*time.Second)

		for i := range servers {
			Eventually(serverConditions(noisy, fmt.Sprintf("bloat-%d", i)), bound(2*time.Minute)).
				Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonCatalogTooLarge))
		}
		Expect(budget.Peak()).To(BeNumerically("<=", budget.Total()), "the catalogs in flight stayed within the budget")
		Expect(waited.Load()).To(BeTrue(), "imports waited for the budget instead of all reading at once")
		Expect(listTools(noisy)).To(BeEmpty())
		Expect(hostile.PagesServed()).To(BeNumerically("<", servers*100))
	})

	It("runs a spec that asks for more than the administrator allows under the caps, and says so", func() {
		restartManager(func(o *manager.Options) {
			o.Caps = tenancy.Caps{MaxTools: 3, MaxOperationTimeout: 3 * time.Second}
		})
		ns := newNamespace()
		// Five tools against a cap of three: the import stops at the cap.
		up := startMCP(mcpserver.Options{})
		createServer(ns, "many", up.URL)
		Eventually(serverConditions(ns, "many")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonCatalogTooLarge))
		c := meta.FindStatusCondition(getServer(ns, "many").Status.Conditions, mcpv1alpha1.ConditionCapped)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal(mcpv1alpha1.ReasonCappedByAdministrator))
		Expect(c.Message).To(ContainSubstring("spec.import.maxTools asks for 2000, the administrator allows 3"))
		Expect(listTools(ns)).To(BeEmpty())

		// A spec's minute against a tarpit ends at the administrator's 3s.
		tarpit := mcpserver.StartTarpit(GinkgoT())
		createServer(ns, "slow", tarpit.URL, withTimeout(time.Minute))
		Eventually(serverConditions(ns, "slow"), bound(20*time.Second)).Should(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonTimeout))
		Expect(getServer(ns, "slow").Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCapped, metav1.ConditionTrue, mcpv1alpha1.ReasonCappedByAdministrator))

		// A spec within the caps is not Capped.
		createServer(ns, "within", up.URL, withMaxTools(3))
		Eventually(serverConditions(ns, "within")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonCatalogTooLarge))
		Expect(getServer(ns, "within").Status.Conditions).NotTo(ContainElement(HaveField("Type", mcpv1alpha1.ConditionCapped)))
	})

	It("refuses an import that would take its namespace over its stored tools or definition bytes, changing nothing", func() {
		five := startMCP(mcpserver.Options{})
		seven := startMCP(mcpserver.Options{Tools: 2})
		// The limit on bytes is exactly what five built-in tools store.
		cat, err := mcp.New(mcp.Options{AllowPrivateNetworks: true}).ListTools(context.Background(), mcp.Endpoint{Name: "measure", URL: five.URL})
		Expect(err).NotTo(HaveOccurred())
		var fiveBytes int64
		for _, t := range cat.Tools {
			fiveBytes += mcp.DefinitionSize(t)
		}
		restartManager(func(o *manager.Options) {
			o.NamespaceStorage = tenancy.StorageLimits{Tools: 8, DefinitionBytes: fiveBytes}
		})

		// Tools: a second server of five would bring the namespace to ten.
		ns := newNamespace()
		createServer(ns, "first", five.URL, withProbeInterval(probeInterval))
		first := waitReady(ns, "first", 30*time.Second)
		Expect(first.Status.Tools.DefinitionBytes).To(Equal(fiveBytes))
		before := catalogOf(ns)
		createServer(ns, "second", five.URL, withProbeInterval(probeInterval))
		Eventually(serverConditions(ns, "second")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonNamespaceToolLimit))
		c := meta.FindStatusCondition(getServer(ns, "second").Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
		Expect(c.Message).To(ContainSubstring("10 McpTools, above the administrator's limit of 8 per namespace"))
		Consistently(func() map[string]importedTool { return catalogOf(ns) }, settle).Should(Equal(before), "the refused import wrote nothing")

		// Bytes: seven tools fit the tool limit, not the byte limit.
		other := newNamespace()
		createServer(other, "seven", seven.URL)
		Eventually(serverConditions(other, "seven")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonNamespaceDefinitionBytesLimit))
		Expect(listTools(other)).To(BeEmpty())

		// Another server's tools going away is what cures it: the refused
		// import is retried on its own after one health interval.
		Expect(k8sClient.Delete(context.Background(), getServer(ns, "first"))).To(Succeed())
		waitReady(ns, "second", 30*time.Second)
	})

	It("refuses an import whose prompts and resources would take its namespace over its limit, writing none of them", func() {
		// One server of the features upstream stores one McpPrompt and four
		// McpResources: a second would bring the namespace to ten.
		up := mcpserver.StartFeatures(GinkgoT(), 16)
		restartManager(func(o *manager.Options) {
			o.NamespaceStorage = tenancy.StorageLimits{PromptsAndResources: 7}
		})
		ns := newNamespace()
		createServer(ns, "docs", up.URL)
		waitReady(ns, "docs", 30*time.Second)
		Eventually(func() int { return featuresOf(ns, "docs") }, 30*time.Second, 100*time.Millisecond).Should(Equal(5))

		createServer(ns, "copy", up.URL)
		// Its tools are imported; its prompts and resources are not, and
		// the Event says why, with both numbers.
		waitReady(ns, "copy", 30*time.Second)
		Eventually(func() []string {
			var list eventsv1.EventList
			Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "McpServer" && e.Regarding.Name == "copy" && e.Reason == controller.EventFeatureImportFailed {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}, 30*time.Second, 100*time.Millisecond).Should(ContainElement(ContainSubstring("10 McpPrompts and McpResources, above the administrator's limit of 7 per namespace")))
		Consistently(func() int { return featuresOf(ns, "copy") }, settle).Should(BeZero(), "the refused import wrote nothing")
		Expect(featuresOf(ns, "docs")).To(Equal(5))

		// Another namespace has its own count.
		other := newNamespace()
		createServer(other, "docs", up.URL)
		Eventually(func() int { return featuresOf(other, "docs") }, 30*time.Second, 100*time.Millisecond).Should(Equal(5))
	})

	It("lets a ResourceQuota bound how many McpServers a namespace may create", func() {
		ns := newNamespace()
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mcp"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				"count/mcpservers.mcp.catalog.dev": resource.MustParse("2"),
				"count/mcptools.mcp.catalog.dev":   resource.MustParse("7"),
			}},
		}
		Expect(k8sClient.Create(context.Background(), quota)).To(Succeed())
		// kube-controller-manager's quota controller fills in status, which
		// admission counts from; envtest runs none, so the spec does what it
		// does for a new namespace: nothing used yet.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{
			"count/mcpservers.mcp.catalog.dev": resource.MustParse("0"),
			"count/mcptools.mcp.catalog.dev":   resource.MustParse("0"),
		}}
		Expect(k8sClient.Status().Update(context.Background(), quota)).To(Succeed())

		up := startMCP(mcpserver.Options{})
		createServer(ns, "one", up.URL)
		createServer(ns, "two", up.URL)
		third := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "three"}, Spec: serverSpec(up.URL)}
		err := k8sClient.Create(context.Background(), third)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the third McpServer: %v", err)
		Expect(err.Error()).To(ContainSubstring("exceeded quota"))
		// The McpTools the importer creates count too: two catalogs of five
		// against a count of seven. Creates beyond it are refused, and an
		// import that meets one fails as any failed write does.
		Eventually(func(g Gomega) {
			failed := 0
			for _, name := range []string{"one", "two"} {
				c := meta.FindStatusCondition(getServer(ns, name).Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
				g.Expect(c).NotTo(BeNil())
				if c.Status == metav1.ConditionFalse && c.Reason == mcpv1alpha1.ReasonImportFailed {
					failed++
				}
			}
			g.Expect(failed).To(BeNumerically(">=", 1))
		}, bound(30*time.Second)).Should(Succeed())
		// However the imports retry, the namespace never holds more than
		// the count. (How close to it they get depends on the quota
		// controller, which recounts what admission counted for creates
		// that then failed; envtest runs none.)
		Consistently(func() int { return len(listTools(ns)) }, settle).Should(BeNumerically("<=", 7))
	})
})

// restartManager replaces the suite's manager with one whose options
// mutate changes, until the spec ends.
func restartManager(mutate func(*manager.Options)) {
	mgr.Stop()
	DeferCleanup(func() {
		mgr.Stop()
		mgr = startManager()
	})
	mgr = startManager(mutate)
}
