package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// profile declares a delegation profile whose client secret lives in the
// Secret "idp" (key "token").
func profile(ns string) {
	Expect(k8sClient.Create(context.Background(), &mcpv1alpha1.McpDelegationProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp"},
		Spec: mcpv1alpha1.McpDelegationProfileSpec{
			TokenEndpoint: "https://idp.example.com/token", ClientID: "catalog",
			ClientSecretRef:  mcpv1alpha1.SecretKeySelector{Name: "idp", Key: "token"},
			AllowedAudiences: []string{"records-api"},
			Actors: []mcpv1alpha1.DelegationActor{{Identity: "system:serviceaccount:a:b", Enabled: ptr.To(true),
				SubjectTokenSecretRef: &mcpv1alpha1.SecretKeySelector{Name: "subject", Key: "token"}}},
		},
	})).To(Succeed())
}

func profileConditions(ns string) func(g Gomega) []metav1.Condition {
	return func(g Gomega) []metav1.Condition {
		var p mcpv1alpha1.McpDelegationProfile
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "idp"}, &p)).To(Succeed())
		return p.Status.Conditions
	}
}

func withDelegation(discoverySecret string) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) {
		s.AllowCredentialOverHTTP = true
		s.Auth = &mcpv1alpha1.McpServerAuth{Delegated: &mcpv1alpha1.DelegatedAuth{
			ProfileRef: mcpv1alpha1.LocalObjectReference{Name: "idp"}, Audience: "records-api",
		}}
		if discoverySecret != "" {
			s.Auth.Delegated.DiscoverySecretRef = &mcpv1alpha1.SecretKeySelector{Name: discoverySecret, Key: "token"}
		}
	}
}

var _ = Describe("Delegated authentication", func() {
	It("makes a profile Ready once its client secret resolves", func() {
		ns := newNamespace()
		profile(ns)
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound))
		putSecret(ns, "idp", newToken())
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})

	It("keeps a profile whose client secret has not opted in not Ready, and says why", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp"},
			Data:       map[string][]byte{"token": []byte(newToken())},
		})).To(Succeed())
		profile(ns)
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotOptedIn))
		putSecret(ns, "idp", newToken()) // labels it
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})

	It("never presents a discovery Secret that has not opted in", func() {
		ns := newNamespace()
		discovery := newToken()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: discovery})
		Expect(k8sClient.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "discovery"},
			Data:       map[string][]byte{"token": []byte(discovery)},
		})).To(Succeed())
		profile(ns)
		putSecret(ns, "idp", newToken())
		createServer(ns, "records", up.URL, withDelegation("discovery"))
		Eventually(serverConditions(ns, "records")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotOptedIn))
		Consistently(up.Requests, 2*credentialRetry).Should(BeZero(), "nothing is sent with or without the discovery token")
	})

	It("waits for the server's profile, then imports with the discovery credential", func() {
		ns := newNamespace()
		discovery := newToken()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: discovery})
		putSecret(ns, "discovery", discovery)
		createServer(ns, "records", up.URL, withDelegation("discovery"))

		Eventually(serverConditions(ns, "records")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonProfileNotFound))
		Expect(up.Requests()).To(BeZero(), "nothing is sent while the profile is missing")

		profile(ns)
		Eventually(serverConditions(ns, "records")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonProfileNotReady))
		putSecret(ns, "idp", newToken())
		// The profile turning Ready re-queues the server at once.
		Eventually(serverConditions(ns, "records")).Should(And(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
			haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
		))
		st := up.Stats()
		Expect(st.Rejected).To(BeZero())
		Expect(st.MethodsByCredential["Bearer "+discovery]["tools/list"]).To(BeNumerically(">=", 1), "the import presented the discovery credential")
	})

	It("reports a challenging server without a discovery credential as up but unauthenticated", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: newToken()})
		profile(ns)
		putSecret(ns, "idp", newToken())
		createServer(ns, "records", up.URL, withDelegation(""))
		Eventually(serverConditions(ns, "records")).Should(And(
			haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonUnauthenticated),
			haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonUnauthorized),
		))
		Expect(getServer(ns, "records").Status.LastContactTime).To(BeNil(), "a refused operation is no contact")
	})
})
