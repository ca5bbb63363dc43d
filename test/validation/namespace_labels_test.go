package validation

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The guard of docs/adr/046-selector-trust.md: namespace labels under the
// reserved sharing prefix are the cluster administrators' alone, so that a
// selector restricted to them trusts no tenant. The tenant here may
// create and update namespaces, as on a self-service platform.
var _ = Describe("The sharing-labels admission policy", Ordered, func() {
	const reserved = "sharing.mcp.catalog.dev/team"
	var tenant client.Client

	BeforeAll(func() {
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "namespace_labels.yaml"))
		Expect(err).NotTo(HaveOccurred())
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(k8sClient.Create(ctx, u)).To(Succeed())
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-self-service"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create", "update", "patch"}}}}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "namespace-self-service"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}}})).To(Succeed())
		cfg := rest.CopyConfig(plane.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated", "tenants"}}
		tenant, err = client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		// The API server enforces a new policy within a few seconds.
		Eventually(func() error {
			err := tenant.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: map[string]string{reserved: "docs"}}})
			if err == nil {
				return errors.New("a namespace with a reserved label was created by a tenant")
			}
			return nil
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	label := func(c client.Client, name string, edit func(map[string]string)) error {
		ns := &corev1.Namespace{}
		Expect(c.Get(ctx, types.NamespacedName{Name: name}, ns)).To(Succeed())
		patch := client.MergeFrom(ns.DeepCopy())
		edit(ns.Labels)
		return c.Patch(ctx, ns, patch)
	}
	own := func() string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
		Expect(tenant.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}

	It("refuses a tenant who labels its own namespace under the reserved prefix", func() {
		name := own()
		err := label(tenant, name, func(l map[string]string) { l[reserved] = "docs" })
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("only the cluster's administrators set them"))
		// Labels outside the prefix are the tenant's, as before.
		Expect(label(tenant, name, func(l map[string]string) { l["team"] = "docs" })).To(Succeed())
	})

	It("refuses a tenant who changes or removes an administrator's reserved label, and lets it keep it", func() {
		name := own()
		Expect(label(k8sClient, name, func(l map[string]string) { l[reserved] = "docs" })).To(Succeed(), "an administrator sets it")
		Expect(label(tenant, name, func(l map[string]string) { l[reserved] = "billing" })).NotTo(Succeed(), "changed by the tenant")
		Expect(label(tenant, name, func(l map[string]string) { delete(l, reserved) })).NotTo(Succeed(), "removed by the tenant (a NotIn or DoesNotExist selector would then match)")
		Expect(label(tenant, name, func(l map[string]string) { l["unrelated"] = "x" })).To(Succeed(), "another label, the reserved one kept")
		ns := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: name}, ns)).To(Succeed())
		Expect(ns.Labels).To(HaveKeyWithValue(reserved, "docs"))
	})
})
