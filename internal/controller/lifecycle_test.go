package controller_test

import (
	"context"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	opmetrics "github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// settledTools waits until the tool controller has written the status of
// every McpTool of the namespace (Imported and Ready are both present).
func settledTools(ns string, n int) {
	EventuallyWithOffset(1, func() int {
		c := 0
		for _, t := range listTools(ns) {
			if len(t.Status.Conditions) == 2 && t.Status.ObservedGeneration == t.Generation {
				c++
			}
		}
		return c
	}, bound(30*time.Second), 100*time.Millisecond).Should(Equal(n))
}

// kstatusOf computes what kstatus (kubectl wait, Argo CD, Flux) reports for
// an McpServer.
func kstatusOf(ns, name string) func(g Gomega) status.Status {
	return func(g Gomega) status.Status {
		srv := &mcpv1alpha1.McpServer{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, srv)).To(Succeed())
		// As read by those tools: with its kind, which a typed Get drops.
		srv.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpServer"))
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(srv)
		g.Expect(err).NotTo(HaveOccurred())
		res, err := status.Compute(&unstructured.Unstructured{Object: m})
		g.Expect(err).NotTo(HaveOccurred())
		return res.Status
	}
}

var _ = Describe("Import requests", func() {
	It("runs exactly one import per request annotation value and echoes it in status", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "req", up.URL)
		waitReady(ns, "req", 30*time.Second)
		settledTools(ns, 5)
		Consistently(func() int { return handshakes(up) }, settle).Should(Equal(1), "the create imported once")

		lists := up.Stats().Methods["tools/list"]
		v := requestImport(ns, "req")
		srv := waitImportHandled(ns, "req", v)
		Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Consistently(func() int { return handshakes(up) }, settle).Should(Equal(2))
		Expect(up.Stats().Methods["tools/list"]).To(Equal(lists+1), "one catalog of one page")

		// Another annotation change that keeps the handled value asks for
		// nothing.
		annotate(ns, "req", map[string]string{"example.com/unrelated": "x"})
		Consistently(func() int { return handshakes(up) }, settle).Should(Equal(2))
	})

	It("handles a request value longer than status can echo exactly once", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "long", up.URL)
		waitReady(ns, "long", 30*time.Second)
		Consistently(func() int { return handshakes(up) }, settle).Should(Equal(1))

		// Annotation values may be far longer than the 256 characters
		// status.lastHandled*At holds.
		long := strings.Repeat("2026-01-01T00:00:00Z/", 20)
		annotate(ns, "long", map[string]string{
			mcpv1alpha1.AnnotationRequestedImportAt: long,
			mcpv1alpha1.AnnotationRequestedProbeAt:  long,
		})
		Eventually(func(g Gomega) {
			srv := getServer(ns, "long")
			g.Expect(srv.Status.LastHandledImportAt).NotTo(BeEmpty())
			g.Expect(srv.Status.LastHandledProbeAt).NotTo(BeEmpty())
		}).Should(Succeed())
		Consistently(func() int { return handshakes(up) }, settle).Should(Equal(3), "one import and one probe")
		Expect(getServer(ns, "long").Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		// Another long value with the same beginning is another request.
		annotate(ns, "long", map[string]string{mcpv1alpha1.AnnotationRequestedImportAt: long + "again"})
		Eventually(func() int { return handshakes(up) }).Should(Equal(4))
		Consistently(func() int { return handshakes(up) }, settle).Should(Equal(4))
	})
})

var _ = Describe("Suspend", func() {
	It("stops imports and probes without deleting anything, and resumes", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true})
		createServer(ns, "sus", up.URL, withProbeInterval(probeInterval))
		waitReady(ns, "sus", 30*time.Second)
		settledTools(ns, 5)

		srv := getServer(ns, "sus")
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Suspend = true
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		Eventually(serverConditions(ns, "sus")).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSuspended))
		tools := resourceVersions(ns)
		h := handshakes(up)

		// Upstream drops tools and an import is requested: while suspended,
		// neither the request nor the probe schedule reaches the server.
		up.RemoveTools(mcpserver.ToolFail, mcpserver.ToolSlow)
		requestImport(ns, "sus")
		Consistently(func() int { return handshakes(up) }, probeEvery+probeEvery/5+time.Second).Should(Equal(h))
		Expect(resourceVersions(ns)).To(Equal(tools), "nothing was deleted or written")
		Expect(getServer(ns, "sus").Status.LastHandledImportAt).To(BeEmpty(), "the request waits for the resume")

		srv = getServer(ns, "sus")
		patch = client.MergeFrom(srv.DeepCopy())
		srv.Spec.Suspend = false
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		waitReady(ns, "sus", 30*time.Second)
		Eventually(func() map[string]mcpv1alpha1.McpTool { return listTools(ns) }).Should(HaveLen(3), "the resumed import removed the disabled tools no longer offered")
	})
})

var _ = Describe("No-op reconciles", func() {
	It("writes no McpTool for an unchanged re-import, and nothing at all for an idle reconcile", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: 20})
		createServer(ns, "idle", up.URL)
		waitReady(ns, "idle", 30*time.Second)
		settledTools(ns, 25)
		echo := toolObjectName("idle", mcpserver.ToolEcho)
		enableApproved(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Eventually(func() int32 { return getServer(ns, "idle").Status.Tools.Enabled }).Should(Equal(int32(1)))
		tools := resourceVersions(ns)

		// An unchanged re-import: the server's status records the import
		// (one write); no McpTool is written.
		mark := requests.mark()
		v := requestImport(ns, "idle")
		waitImportHandled(ns, "idle", v)
		Consistently(func() []apiRequest { return requests.writes(mark, "/namespaces/"+ns+"/mcptools") }, settle).Should(BeEmpty())
		Expect(requests.writes(mark, "/namespaces/"+ns+"/mcpservers")).To(HaveLen(1))
		Expect(resourceVersions(ns)).To(Equal(tools))

		// An idle reconcile of the server: removing the request annotation
		// passes the controller's event filter, and nothing is due. (The
		// servers of earlier specs are suspended and never requeue, so the
		// reconcile counted is this one.)
		mark = requests.mark()
		reconciles := reconcileCount("mcpserver")
		srv := getServer(ns, "idle")
		patch := client.MergeFrom(srv.DeepCopy())
		delete(srv.Annotations, mcpv1alpha1.AnnotationRequestedImportAt)
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		Eventually(func() float64 { return reconcileCount("mcpserver") }).Should(BeNumerically(">", reconciles), "the server was reconciled")
		Consistently(func() []apiRequest { return requests.writes(mark, "/namespaces/"+ns+"/") }, settle).Should(BeEmpty())

		// An idle reconcile of every tool: the server's Ready condition did
		// not change, so a label on each tool is what wakes the tool
		// controller.
		mark = requests.mark()
		before := reconcileCount("mcptool")
		for name := range tools {
			t := getTool(ns, name)
			patch := client.MergeFrom(t.DeepCopy())
			t.Labels["example.com/touched"] = "yes"
			Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
		}
		Eventually(func() float64 { return reconcileCount("mcptool") - before }).Should(BeNumerically(">=", len(tools)))
		Consistently(func() []apiRequest { return requests.writes(mark, "/namespaces/"+ns+"/") }, settle).Should(BeEmpty())
		Expect(handshakes(up)).To(Equal(2), "the create and the one request imported; nothing else reached the server")
	})
})

var _ = Describe("kstatus", func() {
	It("computes Current for a healthy server", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "fine", up.URL)
		waitReady(ns, "fine", 30*time.Second)
		Eventually(kstatusOf(ns, "fine")).Should(Equal(status.CurrentStatus))
	})

	It("computes InProgress while a Secret is awaited", func() {
		ns := newNamespace()
		createServer(ns, "waits", "http://127.0.0.1:1/mcp", withBearer("absent"))
		Eventually(serverConditions(ns, "waits")).Should(haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound))
		Consistently(kstatusOf(ns, "waits"), settle).Should(Equal(status.InProgressStatus))
	})

	It("computes Failed for a stalled server", func() {
		ns := newNamespace()
		f := newFront(nil)
		f.set(faultRedirect)
		createServer(ns, "moved", f.url)
		Eventually(serverConditions(ns, "moved")).Should(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected))
		Eventually(kstatusOf(ns, "moved")).Should(Equal(status.FailedStatus))

		// And one the operator may not dial at all: a link-local address.
		createServer(ns, "metadata", "http://169.254.169.254/mcp")
		Eventually(serverConditions(ns, "metadata")).Should(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonBlockedAddress))
		Eventually(kstatusOf(ns, "metadata")).Should(Equal(status.FailedStatus))
	})
})

// reconcileCount is the number of reconciles a controller has finished, from
// controller-runtime's metrics registry (which collects even with the
// metrics endpoint disabled).
func reconcileCount(controller string) float64 {
	mfs, err := metrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

var _ = Describe("Scheduled probes of an unchanged server", func() {
	It("read the server from the cache, record every contact in the metrics, and write no status until the contact is due a refresh", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: 1})
		createServer(ns, "steady", up.URL, withProbeInterval(probeInterval))
		waitReady(ns, "steady", 30*time.Second)
		settledTools(ns, 1+len(mcpserver.BuiltinTools()))
		// The first scheduled probe after the create's write, then count
		// from the next.
		h := handshakes(up)
		Eventually(func() int { return handshakes(up) }, bound(3*probeEvery)).Should(BeNumerically(">", h))
		before := getServer(ns, "steady")
		mark := requests.mark()
		contact := testutil.ToFloat64(opmetrics.LastContact.WithLabelValues(ns, "steady"))
		h = handshakes(up)

		Eventually(func() int { return handshakes(up) }, bound(3*probeEvery)).Should(BeNumerically(">=", h+1), "a scheduled probe")
		Eventually(func() float64 { return testutil.ToFloat64(opmetrics.LastContact.WithLabelValues(ns, "steady")) }).
			Should(BeNumerically(">", contact), "the metric records the probe's contact")
		Expect(requests.writes(mark, "/namespaces/"+ns+"/mcpservers")).To(BeEmpty(), "no status write: nothing a reader acts on changed")
		reads := requests.match(mark, func(r apiRequest) bool { return r.method == http.MethodGet }, []string{"/namespaces/" + ns + "/mcpservers/steady"})
		Expect(reads).To(BeEmpty(), "the reconcile read the server from the cache")
		after := getServer(ns, "steady")
		Expect(after.Status.LastContactTime).To(Equal(before.Status.LastContactTime))
		Expect(after.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		// A requested probe is someone asking: it refreshes the contact.
		v := time.Now().Format(time.RFC3339Nano)
		annotate(ns, "steady", map[string]string{mcpv1alpha1.AnnotationRequestedProbeAt: v})
		Eventually(func() string { return getServer(ns, "steady").Status.LastHandledProbeAt }).Should(Equal(v))
		Expect(getServer(ns, "steady").Status.LastContactTime.Time).To(BeTemporally(">", before.Status.LastContactTime.Time))
	})
})
