package validation

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

const validPrompt = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpPrompt
metadata:
  name: srv.review-code
spec:
  serverRef: {name: srv}
  remoteName: review_code
`

const validResource = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpResource
metadata:
  name: srv.r-0123456789abcdef0123
spec:
  serverRef: {name: srv}
  uri: docs://readme
`

var _ = Describe("McpPrompt and McpResource manifests", func() {
	DescribeTable("are rejected with a message naming the field",
		func(manifest string, edits []string, wantField, wantMsg string) {
			err := create(newNamespace(), object(manifest, edits...))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField))
			Expect(err.Error()).To(ContainSubstring(wantMsg))
		},
		Entry("McpPrompt with a remoteName containing a space", validPrompt, []string{"spec.remoteName=has space"}, "spec.remoteName", "should match"),
		Entry("McpPrompt without serverRef", validPrompt, []string{"spec.serverRef=<delete>"}, "spec.serverRef", "Required value"),
		Entry("McpPrompt with an unknown dataClass", validPrompt, []string{"spec.dataClass=TopSecret"}, "spec.dataClass", "supported values"),
		Entry("McpPrompt with a malformed approved hash", validPrompt, []string{"spec.approvedDefinitionHash=abc"}, "spec.approvedDefinitionHash", "should match"),
		Entry("McpPrompt with reviewed text of an argument without a description", validPrompt, []string{"spec.reviewedText={arguments: [{name: language}]}"}, "spec.reviewedText.arguments[0].description", "Required value"),
		Entry("McpPrompt with reviewed text describing one argument twice", validPrompt, []string{"spec.reviewedText={arguments: [{name: a, description: x}, {name: a, description: y}]}"}, "spec.reviewedText.arguments[1]", "Duplicate value"),
		Entry("McpResource with a reviewed title of 257 characters", validResource, []string{"spec.reviewedText={title: " + strings.Repeat("t", 257) + "}"}, "spec.reviewedText.title", "may not be more than 256"),
		Entry("McpResource with neither uri nor uriTemplate", validResource, []string{"spec.uri=<delete>"}, "spec", "exactly one of spec.uri and spec.uriTemplate"),
		Entry("McpResource with both uri and uriTemplate", validResource, []string{"spec.uriTemplate=docs://files/{name}"}, "spec", "exactly one of spec.uri and spec.uriTemplate"),
		Entry("McpResource with a uri of 2049 characters", validResource, []string{"spec.uri=" + strings.Repeat("a", 2049)}, "spec.uri", "may not be more than 2048"),
		Entry("McpResource with a read bound of 0", validResource, []string{"spec.maxReadBytes=0"}, "spec.maxReadBytes", "should be greater than or equal to 1"),
		Entry("McpResource with a read bound above 16 MiB", validResource, []string{"spec.maxReadBytes=16777217"}, "spec.maxReadBytes", "should be less than or equal to 16777216"),
		Entry("McpResource with a malformed approved hash", validResource, []string{"spec.approvedDefinitionHash=sha256:xyz"}, "spec.approvedDefinitionHash", "should match"),
	)

	DescribeTable("keep their identity immutable",
		func(manifest, field, value, wantField string) {
			ns := newNamespace()
			obj := object(manifest)
			Expect(create(ns, obj)).To(Succeed())
			Expect(unstructured.SetNestedField(obj.Object, value, strings.Split(field, ".")...)).To(Succeed())
			err := k8sClient.Update(ctx, obj)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField + " is immutable"))
		},
		Entry("McpPrompt serverRef", validPrompt, "spec.serverRef.name", "other", "spec.serverRef"),
		Entry("McpPrompt remoteName", validPrompt, "spec.remoteName", "other", "spec.remoteName"),
		Entry("McpResource uri", validResource, "spec.uri", "docs://other", "spec.uri"),
	)

	It("defaults them disabled and not yet reconciled", func() {
		ns := newNamespace()
		Expect(create(ns, object(validPrompt))).To(Succeed())
		Expect(create(ns, object(validResource))).To(Succeed())
		var p mcpv1alpha1.McpPrompt
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "srv.review-code"}, &p)).To(Succeed())
		Expect(p.Spec.Enabled).To(BeFalse())
		Expect(p.Status.ObservedGeneration).To(Equal(int64(-1)))
		var r mcpv1alpha1.McpResource
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "srv.r-0123456789abcdef0123"}, &r)).To(Succeed())
		Expect(r.Spec.Enabled).To(BeFalse())
		Expect(r.Spec.MaxReadBytes).To(BeNil(), "unset means the default bound, DefaultMaxReadBytes")
	})
})
