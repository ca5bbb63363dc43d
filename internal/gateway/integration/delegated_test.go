package integration_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oauthserver"
)

const (
	delegationClientID     = "catalog-operator"
	delegationClientSecret = "dElEgAtIoN-client-secret-3f9a"
	delegatedAudience      = "records-api"
)

// delegated declares, in ns, a delegation profile mapping the given actors
// (identity -> subject token) and a delegated McpServer in front of a go-sdk
// upstream that accepts the discovery token and the token exchanged for
// mapped, the one actor expected to call.
func delegated(ns, mapped string, actors map[string]string) (up *mcpserver.Server, discovery, exchanged string) {
	GinkgoHelper()
	ctx := context.Background()
	discovery = newSecretValue()
	exchanged = oauthserver.TokenFor(mapped, delegatedAudience, []string{"records.read"})
	secretsUsed.Add(exchanged, delegationClientSecret)
	up = mcpserver.Start(GinkgoT(), mcpserver.Options{RequireBearer: discovery, AlsoAcceptBearer: []string{exchanged}})

	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}}, StringData: map[string]string{"secret": delegationClientSecret}})).To(Succeed())
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "discovery", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}}, StringData: map[string]string{"token": discovery}})).To(Succeed())
	var entries []mcpv1alpha1.DelegationActor
	for identity, subject := range actors {
		name := "subject-" + strings.ReplaceAll(identity[strings.LastIndex(identity, ":")+1:], ".", "-")
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}}, StringData: map[string]string{"token": subject}})).To(Succeed())
		tokenEndpoint.AddSubject(subject, identity)
		secretsUsed.Add(subject)
		entries = append(entries, mcpv1alpha1.DelegationActor{Identity: identity, Enabled: ptr.To(true), SubjectTokenSecretRef: &mcpv1alpha1.SecretKeySelector{Name: name, Key: "token"}})
	}
	Expect(k8sClient.Create(ctx, &mcpv1alpha1.McpDelegationProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
		Spec: mcpv1alpha1.McpDelegationProfileSpec{
			TokenEndpoint: tokenEndpoint.URL, ClientID: delegationClientID,
			ClientSecretRef:  mcpv1alpha1.SecretKeySelector{Name: "idp", Key: "secret"},
			AllowedAudiences: []string{delegatedAudience}, AllowedScopes: []string{"records.read"},
			Actors: entries,
		},
	})).To(Succeed())
	declare(ns, "records", up.URL, []string{"echo"}, func(s *mcpv1alpha1.McpServerSpec) {
		s.AllowCredentialOverHTTP = true
		s.Auth = &mcpv1alpha1.McpServerAuth{Delegated: &mcpv1alpha1.DelegatedAuth{
			ProfileRef: mcpv1alpha1.LocalObjectReference{Name: "idp"}, Audience: delegatedAudience, Scopes: []string{"records.read"},
			DiscoverySecretRef: &mcpv1alpha1.SecretKeySelector{Name: "discovery", Key: "token"},
		}}
	})
	return up, discovery, exchanged
}

var _ = Describe("Delegated servers", func() {
	It("import with the discovery credential and call with the token exchanged for the calling ServiceAccount", func() {
		ns := newNamespace()
		agent := newAgent(ns, "triage")
		identity := "system:serviceaccount:" + ns + ":triage"
		subject := "sUbJeCt-" + ns
		up, discovery, exchanged := delegated(ns, identity, map[string]string{identity: subject})
		agent.allowInternal()

		cs := agent.connect(nil, "2025-11-25")
		isError, out := call(cs, "mcp_records_echo", map[string]any{"text": "delegated hello"})
		Expect(isError).To(BeFalse(), out)
		Expect(out).To(Equal("delegated hello"))

		st := up.Stats()
		Expect(st.MethodsByCredential["Bearer "+exchanged]["tools/call"]).To(Equal(1), "the call carried the exchanged token")
		Expect(st.MethodsByCredential["Bearer "+discovery]["tools/call"]).To(BeZero(), "the discovery credential is never used for a call")
		Expect(st.MethodsByCredential["Bearer "+discovery]["tools/list"]).To(BeNumerically(">=", 1), "the import presented the discovery credential")
		Expect(st.MethodsByCredential["Bearer "+exchanged]["tools/list"]).To(BeZero(), "an actor's token is never used for an import")
		form := tokenEndpoint.LastForm()
		Expect(form.Get("subject_token")).To(Equal(subject))
		Expect(form.Get("audience")).To(Equal(delegatedAudience))
		Expect(form.Get("resource")).To(Equal(up.URL))

		// Nothing of the exchange is kept anywhere the operator writes: logs,
		// audit records, Events, metrics, or the status of its objects.
		haystacks := map[string]string{
			"manager logs":  logs.String(),
			"audit records": strings.Join(auditLog.all(), "\n"),
			"Events":        allEvents(),
			"metrics":       metricsText(),
			"status":        statusText(ns),
		}
		Expect(haystacks["metrics"]).To(ContainSubstring("mcp_catalog_gateway_calls_total"))
		for where, text := range haystacks {
			for _, s := range []string{exchanged, subject, delegationClientSecret} {
				Expect(strings.Contains(text, s)).To(BeFalse(), "a token or secret of the exchange appears in the %s", where)
			}
		}
	})

	It("refuses a ServiceAccount the profile does not map, before any token request", func() {
		ns := newNamespace()
		mappedIdentity := "system:serviceaccount:" + ns + ":someone-else"
		up, _, _ := delegated(ns, mappedIdentity, map[string]string{mappedIdentity: "sUbJeCt-other-" + ns})
		stranger := newAgent(ns, "stranger").allowInternal()
		before := tokenEndpoint.Requests()
		callsBefore := up.Stats().Methods["tools/call"]

		cs := stranger.connect(nil, "2025-11-25")
		isError, out := call(cs, "mcp_records_echo", map[string]any{"text": "x"})
		Expect(isError).To(BeTrue())
		Expect(out).To(ContainSubstring("ActorNotMapped"))
		Expect(tokenEndpoint.Requests()).To(Equal(before), "no token was requested for an unmapped actor")
		Expect(up.Stats().Methods["tools/call"]).To(Equal(callsBefore), "the upstream received nothing")
	})
})

// statusText renders the status of every McpServer, McpTool and
// McpDelegationProfile of ns.
func statusText(ns string) string {
	GinkgoHelper()
	ctx := context.Background()
	var b strings.Builder
	var servers mcpv1alpha1.McpServerList
	Expect(k8sClient.List(ctx, &servers, client.InNamespace(ns))).To(Succeed())
	for _, o := range servers.Items {
		fmt.Fprintf(&b, "%+v\n", o.Status)
	}
	var tools mcpv1alpha1.McpToolList
	Expect(k8sClient.List(ctx, &tools, client.InNamespace(ns))).To(Succeed())
	for _, o := range tools.Items {
		fmt.Fprintf(&b, "%+v\n", o.Status)
	}
	var profiles mcpv1alpha1.McpDelegationProfileList
	Expect(k8sClient.List(ctx, &profiles, client.InNamespace(ns))).To(Succeed())
	for _, o := range profiles.Items {
		fmt.Fprintf(&b, "%+v\n", o.Status)
	}
	return b.String()
}
