package integration_test

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

var _ = Describe("Per-person upstream authorization of prompts and resources", func() {
	It("reads a per-person server's prompt and resource with the person's own token only, and asks for consent as a call does", func() {
		ns := newNamespace()
		ctx := context.Background()
		features := mcpserver.StartFeatures(GinkgoT(), 1024)
		ps := startPersonServerFor(features.Handler())
		_, _, clientSecret := declarePerPerson(ns, "docs", ps, nil)
		By("the import reads the catalog with the discovery credential; a person enables a prompt and a resource")
		prompt, err := toolname.ObjectName("docs", mcpserver.PromptReview)
		Expect(err).NotTo(HaveOccurred())
		readme := controller.ResourceObjectName("docs", mcpserver.ResourceReadme, "")
		enableFeature(ns, &mcpv1alpha1.McpPrompt{}, prompt)
		enableFeature(ns, &mcpv1alpha1.McpResource{}, readme)
		alice := newHuman(people, ns, "alice").canSignIn()
		grantFeaturesTo(ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: alice.email}, alice.email)
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, []string{alice.email}, nil)
		get := &sdk.GetPromptParams{Name: "mcp_docs_" + mcpserver.PromptReview, Arguments: map[string]string{"language": "Go"}}

		By("alice has not authorized the server: a URL elicitation for a client that takes one, nothing sent")
		cs := connectAt(ns, alice.token(people), (&urlCapable{}).options(false))
		_, err = cs.GetPrompt(ctx, get)
		var rpcErr *jsonrpc.Error
		Expect(errors.As(err, &rpcErr)).To(BeTrue(), "%v", err)
		Expect(rpcErr.Code).To(BeEquivalentTo(sdk.CodeURLElicitationRequired))
		Expect(string(rpcErr.Data)).To(ContainSubstring("has not authorized"))
		Expect(string(rpcErr.Data)).To(ContainSubstring(callbackURL))
		Expect(ps.seen()).To(BeEmpty())
		recs := auditFor(ns, prompt)
		last := recs[len(recs)-1]
		Expect([]string{last.Outcome, last.Reason, last.Detail}).To(Equal([]string{audit.OutcomeDenied, audit.DenyUpstreamAuthorization, personauth.ReasonNotAuthorized}))

		By("in words, with the link, for a client that does not; she consents at the link")
		plain := connectAt(ns, alice.token(people), nil)
		_, err = plain.ReadResource(ctx, &sdk.ReadResourceParams{URI: mcpserver.ResourceReadme})
		Expect(err).To(HaveOccurred())
		msg := err.Error()
		Expect(msg).To(ContainSubstring("Link: "))
		link := strings.TrimSpace(msg[strings.Index(msg, "Link: ")+len("Link: "):])
		Expect(link).To(HavePrefix(callbackURL + "?"))
		Expect(ps.seen()).To(BeEmpty())
		code, page := consent(link, alice.email, upstreamAS.FirstUser(), true)
		Expect(code).To(Equal(http.StatusOK), page)

		By("her get and read reach the server with her own token")
		got, err := plain.GetPrompt(ctx, get)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Messages[0].Content.(*sdk.TextContent).Text).To(Equal("Review this Go code."))
		Expect(readText(plain, mcpserver.ResourceReadme)).To(Equal("The readme."))
		Expect(ps.seen()).NotTo(BeEmpty())
		Expect(ps.seen()).To(HaveEach(oidcprovider.FirstSubject), "every request carried alice's token")
		s := authorization(ns, "docs", alice.email)
		secretsUsed.Add(string(s.Data["access-token"]), string(s.Data["refresh-token"]), clientSecret, ps.discovery)
	})
})
