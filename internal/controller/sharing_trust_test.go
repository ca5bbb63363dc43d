package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// reservedSharingPrefix is the suite manager's reserved selector prefix
// (manager.Options.SharingTrust).
const reservedSharingPrefix = "sharing.mcp.catalog.dev/"

// Whom a sharing selector trusts (docs/adr/046-selector-trust.md): with a
// reserved prefix, a tenant who labels its own namespace gains nothing.
var _ = Describe("Sharing by namespace selector", func() {
	ctx := context.Background()

	sharedServerConditions := func(ns, name string) func(g Gomega) []metav1.Condition {
		return func(g Gomega) []metav1.Condition {
			ss := &mcpv1alpha1.McpSharedServer{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ss)).To(Succeed())
			return ss.Status.Conditions
		}
	}
	labelNamespace := func(name string, kv map[string]string) {
		ns := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: name}, ns)).To(Succeed())
		patch := client.MergeFrom(ns.DeepCopy())
		for k, v := range kv {
			ns.Labels[k] = v
		}
		Expect(k8sClient.Patch(ctx, ns, patch)).To(Succeed())
	}
	selectBy := func(owner, name, key string) {
		srv := getServer(owner, name)
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Sharing = &mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{}}
		if key != "" {
			srv.Spec.Sharing.NamespaceSelector.MatchExpressions = []mcpv1alpha1.NamespaceSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"docs"}}}
		}
		Expect(k8sClient.Patch(ctx, srv, patch)).To(Succeed())
	}

	It("grants nothing to a namespace that labels itself to match a key outside the reserved prefix", func() {
		owner, tenant := newNamespace(), newNamespace()
		// The server need not answer: sharing is decided from specs.
		createServer(owner, "docs", "https://127.0.0.1:1/mcp")
		selectBy(owner, "docs", "team")
		Expect(k8sClient.Create(ctx, &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "docs"},
			Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: owner, Name: "docs"}}})).To(Succeed())
		// The attack: the tenant, who may update its namespace on a
		// self-service platform, adds the label the selector asks for.
		labelNamespace(tenant, map[string]string{"team": "docs"})

		Eventually(serverConditions(owner, "docs")).Should(haveCondition(mcpv1alpha1.ConditionSharingWarning, metav1.ConditionTrue, mcpv1alpha1.ReasonSelectorNotTrusted))
		Eventually(sharedServerConditions(tenant, "docs")).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonNotShared))
		Consistently(sharedServerConditions(tenant, "docs"), settle).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonNotShared))

		// A reserved key, which only administrators set (the namespace
		// admission policy), grants; the warning goes.
		selectBy(owner, "docs", reservedSharingPrefix+"team")
		labelNamespace(tenant, map[string]string{reservedSharingPrefix + "team": "docs"})
		Eventually(sharedServerConditions(tenant, "docs")).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonShared))
		Eventually(func(g Gomega) {
			g.Expect(getServer(owner, "docs").Status.Conditions).NotTo(ContainElement(HaveField("Type", mcpv1alpha1.ConditionSharingWarning)))
		}).Should(Succeed())
	})

	It("warns the owner whose selector is {}, which shares with every namespace", func() {
		owner, tenant := newNamespace(), newNamespace()
		createServer(owner, "docs", "https://127.0.0.1:1/mcp")
		selectBy(owner, "docs", "")
		Expect(k8sClient.Create(ctx, &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "docs"},
			Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: owner, Name: "docs"}}})).To(Succeed())
		Eventually(serverConditions(owner, "docs")).Should(haveCondition(mcpv1alpha1.ConditionSharingWarning, metav1.ConditionTrue, mcpv1alpha1.ReasonSelectsEveryNamespace))
		Eventually(sharedServerConditions(tenant, "docs")).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonShared))
	})
})
