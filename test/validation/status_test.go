package validation

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// What a kind's status says before any controller wrote it: kstatus reads
// status.observedGeneration -1 as "not reconciled yet". No controller runs
// against this API server, so what these specs read is the API server's
// doing alone.
var _ = Describe("Status before the first reconcile", func() {
	// The status a client sends with a create, which the status subresource
	// makes the API server drop.
	forged := func() mcpv1alpha1.McpServerStatus {
		return mcpv1alpha1.McpServerStatus{ObservedGeneration: 7, Conditions: []metav1.Condition{{
			Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded,
			LastTransitionTime: metav1.Now(), ObservedGeneration: 7,
		}}}
	}

	DescribeTable("reads observedGeneration -1, whatever status the create carried",
		func(newObject func(ns string) client.Object, observed func(client.Object) (int64, []metav1.Condition)) {
			ns := newNamespace()
			obj := newObject(ns)
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			gen, conds := observed(obj)
			Expect(gen).To(Equal(int64(-1)), "the answer to the create")
			Expect(conds).To(BeEmpty(), "the answer to the create")

			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			gen, conds = observed(obj)
			Expect(gen).To(Equal(int64(-1)), "a read")
			Expect(conds).To(BeEmpty(), "a read")

			// An update of the object keeps it: only a status write changes
			// it.
			labels := map[string]string{"changed": "metadata"}
			obj.SetLabels(labels)
			Expect(k8sClient.Update(ctx, obj)).To(Succeed())
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			gen, _ = observed(obj)
			Expect(gen).To(Equal(int64(-1)), "after an update of the object")
		},
		Entry("McpServer", func(ns string) client.Object {
			s := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "srv"}}
			s.Spec.URL = "https://mcp.example.com/mcp"
			s.Spec.DataClass = mcpv1alpha1.DataClassInternal
			s.Status = forged()
			return s
		}, func(o client.Object) (int64, []metav1.Condition) {
			s := o.(*mcpv1alpha1.McpServer)
			return s.Status.ObservedGeneration, s.Status.Conditions
		}),
		Entry("McpTool", func(ns string) client.Object {
			t := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "srv.search"}}
			t.Spec.ServerRef.Name, t.Spec.RemoteName = "srv", "search"
			f := forged()
			t.Status.ObservedGeneration, t.Status.Conditions = f.ObservedGeneration, f.Conditions
			return t
		}, func(o client.Object) (int64, []metav1.Condition) {
			t := o.(*mcpv1alpha1.McpTool)
			return t.Status.ObservedGeneration, t.Status.Conditions
		}),
		Entry("McpDelegationProfile", func(ns string) client.Object {
			p := &mcpv1alpha1.McpDelegationProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp"}}
			p.Spec.TokenEndpoint, p.Spec.ClientID = "https://idp.example.com/token", "operator"
			p.Spec.ClientSecretRef = mcpv1alpha1.SecretKeySelector{Name: "idp", Key: "secret"}
			p.Spec.AllowedAudiences = []string{"api"}
			f := forged()
			p.Status.ObservedGeneration, p.Status.Conditions = f.ObservedGeneration, f.Conditions
			return p
		}, func(o client.Object) (int64, []metav1.Condition) {
			p := o.(*mcpv1alpha1.McpDelegationProfile)
			return p.Status.ObservedGeneration, p.Status.Conditions
		}),
		Entry("McpAccessPolicy", func(ns string) client.Object {
			p := &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"}}
			p.Spec.ServiceAccounts, p.Spec.MaxDataClass = []string{"bot"}, mcpv1alpha1.DataClassInternal
			f := forged()
			p.Status.ObservedGeneration, p.Status.Conditions = f.ObservedGeneration, f.Conditions
			return p
		}, func(o client.Object) (int64, []metav1.Condition) {
			p := o.(*mcpv1alpha1.McpAccessPolicy)
			return p.Status.ObservedGeneration, p.Status.Conditions
		}),
		Entry("McpSharedServer", func(ns string) client.Object {
			ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}}
			ss.Spec.Server = mcpv1alpha1.SharedServerReference{Namespace: "platform", Name: "docs"}
			f := forged()
			ss.Status.ObservedGeneration, ss.Status.Conditions = f.ObservedGeneration, f.Conditions
			return ss
		}, func(o client.Object) (int64, []metav1.Condition) {
			ss := o.(*mcpv1alpha1.McpSharedServer)
			return ss.Status.ObservedGeneration, ss.Status.Conditions
		}),
	)

	It("keeps an McpSharedServer's server fixed and its name short enough to name its tools", func() {
		ns := newNamespace()
		ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}}
		ss.Spec.Server = mcpv1alpha1.SharedServerReference{Namespace: "platform", Name: "docs"}
		Expect(k8sClient.Create(ctx, ss)).To(Succeed())
		ss.Spec.Server.Namespace = "elsewhere"
		err := k8sClient.Update(ctx, ss)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.server is immutable"))

		long := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.Repeat("a", 46)}}
		long.Spec.Server = mcpv1alpha1.SharedServerReference{Namespace: "platform", Name: "docs"}
		err = k8sClient.Create(ctx, long)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("names its tools"))

		bad := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}}
		bad.Spec.Server = mcpv1alpha1.SharedServerReference{Namespace: "platform", Name: "docs"}
		bad.Spec.MaxDataClass = "Secret"
		Expect(k8sClient.Create(ctx, bad)).NotTo(Succeed())
	})

	It("drops the status an McpCallApproval is created with: it has no observedGeneration, and was not used", func() {
		a := &mcpv1alpha1.McpCallApproval{
			ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(), Name: "call-1"},
			Spec: mcpv1alpha1.McpCallApprovalSpec{
				Tool: "docs.echo", LocalName: "mcp_docs_echo", Server: "docs", Caller: "system:serviceaccount:team:bot",
				CallerGroups: []string{"system:serviceaccounts"}, DataClass: mcpv1alpha1.DataClassInternal,
				ArgumentsHash: "sha256:" + strings.Repeat("a", 64), DefinitionHash: "sha256:d",
				ExpiresAt: metav1.Time{Time: time.Now().Add(time.Hour).Truncate(time.Second)}, Seal: "seal",
			},
			Status: mcpv1alpha1.McpCallApprovalStatus{ConsumedAt: &metav1.Time{Time: time.Now().Truncate(time.Second)}, CallID: "forged"},
		}
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		Expect(a.Status).To(Equal(mcpv1alpha1.McpCallApprovalStatus{}), "the answer to the create")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		Expect(a.Status).To(Equal(mcpv1alpha1.McpCallApprovalStatus{}), "a read")
	})
})
