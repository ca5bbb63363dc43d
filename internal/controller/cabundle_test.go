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
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
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
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca", Labels: map[string]string{mcpv1alpha1.LabelCABundle: mcpv1alpha1.LabelCABundleValue}},
			Data:       map[string][]byte{"bundle.pem": []byte("not a certificate")},
		}
		Expect(k8sClient.Create(context.Background(), bundle)).To(Succeed())
		createServer(ns, "held", url, withCABundleFrom(mcpv1alpha1.CABundleReference{
			SecretKeyRef: &mcpv1alpha1.SecretKeySelector{Name: "ca", Key: "bundle.pem"},
		}))
		Eventually(serverConditions(ns, "held")).Should(And(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
		))
		Expect(meta.IsStatusConditionTrue(getServer(ns, "held").Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeFalse(),
			"the bundle is fixed in the Secret, which is not watched: it must not stall")

		bundle.Data["bundle.pem"] = caPEM
		Expect(k8sClient.Update(context.Background(), bundle)).To(Succeed())
		waitReady(ns, "held", 5*credentialRetry+10*time.Second)
		Expect(listTools(ns)).To(HaveLen(len(mcpserver.BuiltinTools())))
	})
})

// bundleSecret creates the Secret ns/name holding data under bundle.pem,
// with labels.
func bundleSecret(ns, name string, data []byte, labels map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Data:       map[string][]byte{"bundle.pem": data},
	}
	Expect(k8sClient.Create(context.Background(), s)).To(Succeed())
	return s
}

// reported is what a tenant reads of a condition: all of it but the time
// of its last change.
func reported(conds []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(conds))
	for _, c := range conds {
		c.LastTransitionTime = metav1.Time{}
		out = append(out, c)
	}
	return out
}

var _ = Describe("A Secret named as a CA bundle", func() {
	It("tells whoever names it the same thing whether it is missing, not opted in or holds no certificate, and is read once labelled", func() {
		ns := newNamespace()
		up, url, caPEM := startTLSMCP()
		optIn := map[string]string{mcpv1alpha1.LabelCABundle: mcpv1alpha1.LabelCABundleValue}
		// The attack: a tenant who may write McpServers but not read
		// Secrets names Secrets of the namespace to learn whether they
		// exist and whether they hold certificates.
		unlabelled := bundleSecret(ns, "holds-the-ca", caPEM, nil)
		bundleSecret(ns, "holds-garbage", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), optIn)
		bundleSecret(ns, "holds-no-pem", []byte("a database password"), optIn)
		probes := map[string]string{"missing": "no-such-secret", "unlabelled": "holds-the-ca", "garbage": "holds-garbage", "not-pem": "holds-no-pem"}
		for server, secretName := range probes {
			createServer(ns, server, url, withCABundleFrom(mcpv1alpha1.CABundleReference{
				SecretKeyRef: &mcpv1alpha1.SecretKeySelector{Name: secretName, Key: "bundle.pem"},
			}))
		}
		// A labelled Secret without the key is one more cause.
		createServer(ns, "no-key", url, withCABundleFrom(mcpv1alpha1.CABundleReference{
			SecretKeyRef: &mcpv1alpha1.SecretKeySelector{Name: "holds-garbage", Key: "ca.crt"},
		}))
		probes["no-key"] = "holds-garbage"

		for server := range probes {
			Eventually(serverConditions(ns, server)).Should(And(
				haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
				haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
			), server)
		}
		// Through several retries every status reads the same: the same
		// conditions, reasons and messages.
		Consistently(func(g Gomega) {
			want := reported(getServer(ns, "missing").Status.Conditions)
			g.Expect(want).NotTo(BeEmpty())
			for server := range probes {
				srv := getServer(ns, server)
				g.Expect(reported(srv.Status.Conditions)).To(ConsistOf(want), "the status of %s tells its Secret apart", server)
				g.Expect(srv.Status.LastContactTime).To(BeNil(), server)
			}
		}, 3*credentialRetry, 250*time.Millisecond).Should(Succeed())
		Expect(up.Requests()).To(BeZero(), "nothing is sent without a usable bundle")

		// The Secret's owner opts in: the same Secret, read as a bundle,
		// verifies the server's private CA.
		unlabelled.Labels = optIn
		Expect(k8sClient.Update(context.Background(), unlabelled)).To(Succeed())
		waitReady(ns, "unlabelled", 5*credentialRetry+10*time.Second)
		Expect(up.Requests()).NotTo(BeZero())
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
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable),
			haveCondition(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
		))

		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp-ca"},
			Data:       map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
		}
		Expect(k8sClient.Create(context.Background(), cm)).To(Succeed())
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonCABundleNotUsable))

		_, _, caPEM := startTLSMCP()
		cm.Data["ca.crt"] = string(caPEM)
		Expect(k8sClient.Update(context.Background(), cm)).To(Succeed())
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})
})
