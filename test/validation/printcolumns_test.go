package validation

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// getTable asks the API server for a list as kubectl get does: as a Table,
// rendered from the CRD's printer columns.
func getTable(ns, plural string) *metav1.Table {
	hc, err := rest.HTTPClientFor(plane.Config)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	url := strings.TrimSuffix(plane.Config.Host, "/") + "/apis/" + mcpv1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/" + plural
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, resp.StatusCode).To(Equal(http.StatusOK), string(body))
	var t metav1.Table
	ExpectWithOffset(1, json.Unmarshal(body, &t)).To(Succeed())
	return &t
}

// cell returns the named column's value in row i, and the column's priority.
func cell(t *metav1.Table, i int, column string) (any, int32) {
	for c, def := range t.ColumnDefinitions {
		if def.Name == column {
			return t.Rows[i].Cells[c], def.Priority
		}
	}
	Fail("no column " + column)
	return nil, 0
}

// kubectl get shows why an object is not Ready without -o wide: the Ready
// condition's reason and message are default columns, as Flux shows them.
var _ = Describe("Printer columns", func() {
	ready := func(reason, message string) []metav1.Condition {
		return []metav1.Condition{{
			Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: message,
			LastTransitionTime: metav1.Now(), ObservedGeneration: 1,
		}}
	}

	DescribeTable("show the Ready reason and message by default",
		func(manifest, plural, wantReason, wantMessage string, setStatus func(client.Object)) {
			ns := newNamespace()
			obj := object(manifest)
			Expect(create(ns, obj)).To(Succeed())
			typed := map[string]client.Object{
				"mcpservers":            &mcpv1alpha1.McpServer{},
				"mcptools":              &mcpv1alpha1.McpTool{},
				"mcpdelegationprofiles": &mcpv1alpha1.McpDelegationProfile{},
				"mcpaccesspolicies":     &mcpv1alpha1.McpAccessPolicy{},
			}[plural]
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, typed)).To(Succeed())
			setStatus(typed)
			Expect(k8sClient.Status().Update(ctx, typed)).To(Succeed())

			t := getTable(ns, plural)
			Expect(t.Rows).To(HaveLen(1))
			reason, prio := cell(t, 0, "Reason")
			Expect(prio).To(BeZero(), "Reason is shown without -o wide")
			Expect(reason).To(Equal(wantReason))
			msg, prio := cell(t, 0, "Status")
			Expect(prio).To(BeZero(), "Status is shown without -o wide")
			Expect(msg).To(Equal(wantMessage))
		},
		Entry("McpServer", validServer, "mcpservers", mcpv1alpha1.ReasonSecretNotFound, "Secret idp does not exist", func(o client.Object) {
			o.(*mcpv1alpha1.McpServer).Status.Conditions = ready(mcpv1alpha1.ReasonSecretNotFound, "Secret idp does not exist")
		}),
		Entry("McpTool", validTool, "mcptools", mcpv1alpha1.ReasonSecretNotFound, "Secret idp does not exist", func(o client.Object) {
			o.(*mcpv1alpha1.McpTool).Status.Conditions = ready(mcpv1alpha1.ReasonSecretNotFound, "Secret idp does not exist")
		}),
		Entry("McpDelegationProfile", validProfile, "mcpdelegationprofiles", mcpv1alpha1.ReasonSecretNotFound, "Secret idp does not exist", func(o client.Object) {
			o.(*mcpv1alpha1.McpDelegationProfile).Status.Conditions = ready(mcpv1alpha1.ReasonSecretNotFound, "Secret idp does not exist")
		}),
		Entry("McpAccessPolicy", validPolicy, "mcpaccesspolicies", mcpv1alpha1.ReasonInvalidSpec, "spec.serviceAccounts repeats a name", func(o client.Object) {
			o.(*mcpv1alpha1.McpAccessPolicy).Status.Conditions = ready(mcpv1alpha1.ReasonInvalidSpec, "spec.serviceAccounts repeats a name")
		}),
	)
})
