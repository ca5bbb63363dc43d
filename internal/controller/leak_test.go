package controller_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// expectNoTokenIn fails when any credential value the suite handed out
// occurs in text.
func expectNoTokenIn(what, text string) {
	for _, t := range tokensUsed.All() {
		ExpectWithOffset(1, text).NotTo(ContainSubstring(t), "a credential value appears in %s", what)
	}
}

// namespaceText is every McpServer, McpTool and Event of a namespace as
// JSON: specs, statuses, conditions and event notes.
func namespaceText(ns string) string {
	ctx := context.Background()
	var servers mcpv1alpha1.McpServerList
	var tools mcpv1alpha1.McpToolList
	var events eventsv1.EventList
	var coreEvents corev1.EventList
	for _, l := range []client.ObjectList{&servers, &tools, &events, &coreEvents} {
		ExpectWithOffset(1, k8sClient.List(ctx, l, client.InNamespace(ns))).To(Succeed())
	}
	ExpectWithOffset(1, events.Items).NotTo(BeEmpty(), "the scenario recorded events")
	b, err := json.Marshal([]any{servers, tools, events, coreEvents})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("Credential leaks", func() {
	It("never shows a credential value in logs, events, conditions, status or errors", func() {
		ns := newNamespace()
		token := newToken()
		headerToken := newToken()
		putSecret(ns, "bearer", token)
		putSecret(ns, "header", headerToken)

		bearerUp := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: token})
		headerUp := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, RequireHeader: mcpserver.Header{Name: "X-Api-Key", Value: headerToken}})
		createServer(ns, "bearer", bearerUp.URL, withBearer("bearer"))
		createServer(ns, "header", headerUp.URL, func(s *mcpv1alpha1.McpServerSpec) {
			s.AllowCredentialOverHTTP = true
			s.Auth = &mcpv1alpha1.McpServerAuth{Header: &mcpv1alpha1.HeaderAuth{
				Name:      "X-Api-Key",
				SecretRef: mcpv1alpha1.SecretKeySelector{Name: "header", Key: "token"},
			}}
		})
		waitReady(ns, "bearer", 30*time.Second)
		waitReady(ns, "header", 30*time.Second)
		Expect(bearerUp.Stats().LastCredential).To(Equal("Bearer "+token), "the scenario really sent the value")
		Expect(headerUp.Stats().LastCredential).To(Equal(headerToken))

		// Every failure path that involves the credential: refused by the
		// server, and refused by the operator itself (http without opt-in
		// is rejected by the API server, so a Secret with a value that
		// cannot be a header is the client-side refusal).
		bearerUp.SetCredential(newToken())
		v := requestImport(ns, "bearer")
		waitImportHandled(ns, "bearer", v)
		Eventually(serverConditions(ns, "bearer")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonUnauthorized))

		bad := newToken() + "\r\nX-Injected: 1"
		putSecret(ns, "header", bad)
		v = requestImport(ns, "header")
		waitImportHandled(ns, "header", v)
		Eventually(serverConditions(ns, "header")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec))
		Expect(headerUp.Stats().LastCredential).To(Equal(headerToken), "the invalid value was never sent")

		expectNoTokenIn("the objects and events of the namespace", namespaceText(ns))
		expectNoTokenIn("the manager's log", logs.String())
	})
})
