package controller_test

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// startTLSMCP serves a real go-sdk MCP server over TLS with a certificate
// from httptest's CA, which the system roots do not trust, and returns the
// server, its endpoint URL and that CA's PEM.
func startTLSMCP() (*mcpserver.Server, string, []byte) {
	s, err := mcpserver.New(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	Expect(err).NotTo(HaveOccurred())
	ts := httptest.NewTLSServer(s.Handler())
	DeferCleanup(ts.Close)
	DeferCleanup(s.Close)
	return s, ts.URL + mcpserver.Path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
}

func withCABundleFrom(ref mcpv1alpha1.CABundleReference) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) {
		s.TLS = &mcpv1alpha1.TLSSettings{CABundleRef: &ref}
	}
}

var _ = Describe("Private CA bundles", func() {
	It("refuses a server with a private CA's certificate without a bundle, with the TLS reason", func() {
		ns := newNamespace()
		_, url, _ := startTLSMCP()
		createServer(ns, "untrusted", url)
		Eventually(serverConditions(ns, "untrusted")).Should(And(
			haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonUntrustedCertificate),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonUntrustedCertificate),
		))
		Expect(meta.IsStatusConditionTrue(getServer(ns, "untrusted").Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeFalse(),
			"a certificate is fixed on the server's side or in a ConfigMap, neither watched: it must not stall")
		Expect(listTools(ns)).To(BeEmpty())
	})

	It("waits for a missing ConfigMap and imports the catalog once it appears", func() {
		ns := newNamespace()
		up, url, caPEM := startTLSMCP()
		created := createServer(ns, "pki", url, withCABundleFrom(mcpv1alpha1.CABundleReference{
			ConfigMapKeyRef: &mcpv1alpha1.ConfigMapKeySelector{Name: "corporate-ca", Key: "ca.crt"},
		}))
		Eventually(serverConditions(ns, "pki")).Should(And(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotFound),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotFound),
		))
		Expect(up.Requests()).To(BeZero(), "nothing is sent before the bundle is there")

		Expect(k8sClient.Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "corporate-ca"},
			Data:       map[string]string{"ca.crt": string(caPEM)},
		})).To(Succeed())
		srv := waitReady(ns, "pki", 5*credentialRetry+10*time.Second)
		Expect(srv.Generation).To(Equal(created.Generation), "no spec change was needed")
		Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Expect(listTools(ns)).To(HaveLen(len(mcpserver.BuiltinTools())))
	})

	It("waits on a Secret-held bundle without a certificate and trusts it once fixed", func() {
		ns := newNamespace()
		_, url, caPEM := startTLSMCP()
		bundle := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca"},
			Data:       map[string][]byte{"bundle.pem": []byte("not a certificate")},
		}
		Expect(k8sClient.Create(context.Background(), bundle)).To(Succeed())
		createServer(ns, "held", url, withCABundleFrom(mcpv1alpha1.CABundleReference{
			SecretKeyRef: &mcpv1alpha1.SecretKeySelector{Name: "ca", Key: "bundle.pem"},
		}))
		Eventually(serverConditions(ns, "held")).Should(And(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleInvalid),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleInvalid),
		))
		Expect(meta.IsStatusConditionTrue(getServer(ns, "held").Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeFalse(),
			"the bundle is fixed in the Secret, which is not watched: it must not stall")

		bundle.Data["bundle.pem"] = caPEM
		Expect(k8sClient.Update(context.Background(), bundle)).To(Succeed())
		waitReady(ns, "held", 5*credentialRetry+10*time.Second)
		Expect(listTools(ns)).To(HaveLen(len(mcpserver.BuiltinTools())))
	})
})

var _ = Describe("A delegation profile's CA bundle", func() {
	It("keeps the profile not Ready until its bundle is there and holds a certificate", func() {
		ns := newNamespace()
		putSecret(ns, "idp", newToken())
		profile(ns)
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		var p mcpv1alpha1.McpDelegationProfile
		Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "idp"}, &p)).To(Succeed())
		p.Spec.TLS = &mcpv1alpha1.TLSSettings{CABundleRef: &mcpv1alpha1.CABundleReference{
			ConfigMapKeyRef: &mcpv1alpha1.ConfigMapKeySelector{Name: "idp-ca", Key: "ca.crt"},
		}}
		Expect(k8sClient.Update(context.Background(), &p)).To(Succeed())
		Eventually(profileConditions(ns)).Should(And(
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotFound),
			haveCondition(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
		))

		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp-ca"},
			Data:       map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
		}
		Expect(k8sClient.Create(context.Background(), cm)).To(Succeed())
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleInvalid))

		_, _, caPEM := startTLSMCP()
		cm.Data["ca.crt"] = string(caPEM)
		Expect(k8sClient.Update(context.Background(), cm)).To(Succeed())
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})
})
