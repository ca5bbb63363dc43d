package controller_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Credentials", func() {
	It("never sends a Secret that has not opted in, and says which label is missing", func() {
		ns := newNamespace()
		token := newToken()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: token})
		// Any Secret of the namespace, referenced by whoever may create an
		// McpServer: it carries no opt-in label.
		unlabelled := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-password"},
			Data:       map[string][]byte{"token": []byte(token)},
		}
		Expect(k8sClient.Create(context.Background(), unlabelled)).To(Succeed())
		created := createServer(ns, "exfil", up.URL, withBearer("db-password"))

		Eventually(serverConditions(ns, "exfil")).Should(And(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotOptedIn),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotOptedIn),
		))
		c := meta.FindStatusCondition(getServer(ns, "exfil").Status.Conditions, mcpv1alpha1.ConditionCredentialsResolved)
		Expect(c.Message).To(ContainSubstring(mcpv1alpha1.LabelCredential), "the message names the label that opts in")
		Expect(c.Message).To(ContainSubstring("db-password"))
		Consistently(up.Requests, 3*credentialRetry).Should(BeZero(), "nothing at all reaches the server, so the value is never sent")
		Expect(up.Stats().LastCredential).To(BeEmpty())
		status, err := json.Marshal(getServer(ns, "exfil").Status)
		Expect(err).NotTo(HaveOccurred())
		expectNoTokenIn("the server's status", string(status))

		// The Secret's owner opts in; the server picks it up unaided.
		unlabelled.Labels = map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}
		Expect(k8sClient.Update(context.Background(), unlabelled)).To(Succeed())
		srv := waitReady(ns, "exfil", 5*credentialRetry+5*time.Second)
		Expect(srv.Generation).To(Equal(created.Generation))
		Expect(up.Stats().LastCredential).To(Equal("Bearer " + token))
	})

	It("does not accept a label value other than \"true\" as opting in", func() {
		ns := newNamespace()
		token := newToken()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, RequireHeader: mcpserver.Header{Name: "X-Api-Key", Value: token}})
		Expect(k8sClient.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "key", Labels: map[string]string{mcpv1alpha1.LabelCredential: "yes"}},
			Data:       map[string][]byte{"token": []byte(token)},
		})).To(Succeed())
		createServer(ns, "hdr", up.URL, func(s *mcpv1alpha1.McpServerSpec) {
			s.AllowCredentialOverHTTP = true
			s.Auth = &mcpv1alpha1.McpServerAuth{Header: &mcpv1alpha1.HeaderAuth{
				Name: "X-Api-Key", SecretRef: mcpv1alpha1.SecretKeySelector{Name: "key", Key: "token"},
			}}
		})
		Eventually(serverConditions(ns, "hdr")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotOptedIn))
		Consistently(up.Requests, 2*credentialRetry).Should(BeZero())
	})

	It("resolves a Secret created after its server without anyone's help", func() {
		ns := newNamespace()
		token := newToken()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, RequireBearer: token})
		created := createServer(ns, "late", up.URL, withBearer("late-cred"))

		Eventually(serverConditions(ns, "late")).Should(And(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound),
			haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound),
			haveCondition(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
		))
		// Looked at again every retry interval, and still nothing is sent.
		Consistently(up.Requests, 3*credentialRetry).Should(BeZero(), "nothing is sent to a server without its credential")

		putSecret(ns, "late-cred", token)
		srv := waitReady(ns, "late", 5*credentialRetry+5*time.Second)
		Expect(srv.Generation).To(Equal(created.Generation), "no spec change was needed")
		Expect(srv.Annotations).To(BeEmpty(), "no request annotation was needed")
		Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Expect(up.Stats().LastCredential).To(Equal("Bearer " + token))
		Expect(up.Stats().Rejected).To(BeZero())
	})

	It("says which key is missing from an existing Secret", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		Expect(k8sClient.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cred", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
			Data:       map[string][]byte{"password": []byte(newToken())},
		})).To(Succeed())
		createServer(ns, "nokey", up.URL, withBearer("cred"))
		Eventually(serverConditions(ns, "nokey")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretKeyNotFound))
		Expect(up.Requests()).To(BeZero())
	})

	It("presents a rotated Secret at the next operation", func() {
		ns := newNamespace()
		oldToken, newTok := newToken(), newToken()
		putSecret(ns, "cred", oldToken)
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true, RequireBearer: oldToken})
		createServer(ns, "rot", up.URL, withBearer("cred"), withProbeInterval(probeInterval))
		waitReady(ns, "rot", 30*time.Second)
		Expect(up.Stats().LastCredential).To(Equal("Bearer " + oldToken))

		// Rotate right after an operation, so the next one is a whole
		// interval away and certainly starts after both sides rotated.
		h := handshakes(up)
		Eventually(func() int { return handshakes(up) }, bound(3*probeEvery)).Should(BeNumerically(">", h))
		putSecret(ns, "cred", newTok)
		up.SetCredential(newTok)
		rotatedAt := time.Now()
		h = handshakes(up)

		Eventually(func() int { return handshakes(up) }, bound(3*probeEvery)).Should(BeNumerically(">", h), "the next scheduled probe")
		st := up.Stats()
		Expect(st.LastCredential).To(Equal("Bearer "+newTok), "the probe presented the rotated value")
		Expect(st.Rejected).To(BeZero(), "the old value was never presented after the rotation")
		// Status refreshes the contact at a bounded rate; the metric has
		// every one.
		Eventually(func() float64 { return testutil.ToFloat64(metrics.LastContact.WithLabelValues(ns, "rot")) }).
			Should(BeNumerically(">", float64(rotatedAt.UnixMilli())/1e3), "the contact was recorded")
		Expect(getServer(ns, "rot").Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})
})
