package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Credentials", func() {
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
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cred"},
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
		Eventually(func() int { return handshakes(up) }, 2*probeInterval).Should(BeNumerically(">", h))
		putSecret(ns, "cred", newTok)
		up.SetCredential(newTok)
		rotatedAt := time.Now()
		h = handshakes(up)

		Eventually(func() int { return handshakes(up) }, 2*probeInterval).Should(BeNumerically(">", h), "the next scheduled probe")
		st := up.Stats()
		Expect(st.LastCredential).To(Equal("Bearer "+newTok), "the probe presented the rotated value")
		Expect(st.Rejected).To(BeZero(), "the old value was never presented after the rotation")
		Eventually(func() time.Time { return getServer(ns, "rot").Status.LastContactTime.Time }).Should(BeTemporally(">", rotatedAt), "the contact was recorded")
		Expect(getServer(ns, "rot").Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})
})
