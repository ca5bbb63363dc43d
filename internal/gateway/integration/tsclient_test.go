package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oidcprovider"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The official MCP TypeScript SDK's client (test/tsagent), a peer written
// apart from the go-sdk the rest of the suite uses: it speaks 2025-11-25
// over Streamable HTTP, with the headers, session handling and extra GET
// its own authors chose.
var _ = Describe("The MCP TypeScript SDK's client", func() {
	It("initializes in 2025-11-25, lists and calls only its granted tool, pings, and is refused the other", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail})
		a := newAgent(ns, "ts-agent")
		a.grant(docs.object(echo))
		a.ceiling(mcpv1alpha1.DataClassInternal)

		arg := fmt.Sprintf("from-typescript-%016x", rand.Uint64())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := tsagent.Run(ctx, gatewayURL, a.token,
			tsagent.List(),
			tsagent.Call(docs.local(echo), map[string]any{"text": arg}),
			tsagent.Ping(),
			tsagent.Call(docs.local(fail), nil),
		)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).To(BeNil())
		Expect(res.Connect.ProtocolVersion).To(Equal(legacyEra), "the SDK asks for its latest revision, and the gateway serves it")
		Expect(res.Steps).To(HaveLen(4))
		for _, o := range res.Steps {
			Expect(o.Error).To(BeNil(), o.Op)
		}

		By("listing: the granted tool, not the other enabled one")
		Expect(res.Steps[0].Tools).To(Equal([]string{docs.local(echo)}))

		By("calling it: the upstream's answer, with the server's credential")
		Expect(res.Steps[1].IsError).To(BeFalse(), res.Steps[1].Text())
		Expect(res.Steps[1].Text()).To(Equal(arg))
		Expect(docs.Calls(echo)).To(Equal(1))
		Expect(docs.Stats().LastCredential).To(Equal("Bearer " + docs.secret))
		recs := auditFor(ns, docs.object(echo))
		Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
		Expect(recs[0].Caller).To(Equal("system:serviceaccount:" + ns + ":ts-agent"))
		Expect([]string{recs[0].Decision, recs[1].Outcome}).To(Equal([]string{"Allowed", "Succeeded"}))

		By("calling the tool it was not granted: refused, audited, nothing sent")
		refused := res.Steps[3]
		Expect(refused.IsError).To(BeTrue())
		Expect(refused.Text()).To(HavePrefix("Refused by the MCP catalog gateway: "))
		Expect(refused.Text()).To(ContainSubstring(`RBAC verb "call"`))
		Expect(docs.Calls(fail)).To(BeZero())
		denied := auditFor(ns, docs.object(fail))
		Expect(denied).NotTo(BeEmpty())
		last := denied[len(denied)-1]
		Expect([]string{last.Phase, last.Reason, last.Caller}).To(Equal([]string{audit.PhaseDenied, audit.DenyForbidden, "system:serviceaccount:" + ns + ":ts-agent"}))

		By("over HTTP: every request after initialize carries the session and the revision, and none failed")
		Expect(res.HTTP.Errors).To(BeEmpty(), "errors the SDK reported outside a step (such as its GET for the event stream)")
		Expect(res.HTTP.Requests).NotTo(BeEmpty())
		Expect(res.HTTP.Requests[0].RPC).To(Equal("initialize"))
		for _, r := range res.HTTP.Requests[1:] {
			Expect(r.SessionID).To(Equal(res.Connect.SessionID), "%+v", r)
			Expect(r.ProtocolVersion).To(Equal(legacyEra), "%+v", r)
			if r.Method == http.MethodPost {
				Expect(r.Status).To(BeNumerically("<", 300), "%+v", r)
			}
		}
	})
})

// A person's MCP client configured with nothing but a namespace's endpoint:
// the TypeScript SDK's own OAuth client flow finds the identity provider
// from the gateway's 401, sends the person to sign in there (the test is
// the person's browser), and obtains a token for that endpoint. The
// client is either registered in advance, public and without a secret, as
// the MCP authorization specification allows, or registers itself at the
// provider's RFC 7591 endpoint (which test/oidcprovider adds to zitadel's
// OpenID Provider).
var _ = Describe("The MCP TypeScript SDK's client with its own OAuth flow", func() {
	It("finds the provider from the endpoint alone, signs the person in with PKCE for that endpoint, and calls as them only what their RoleBinding allows", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail})
		name := fmt.Sprintf("grace-%08x", rand.Uint32())
		password := fmt.Sprintf("pw-%016x", rand.Uint64())
		email := name + "@" + ns + ".example.test"
		people.AddPerson(oidcprovider.Person{Username: name, Password: password,
			Claims: map[string]any{"email": email, "email_verified": true, "groups": []string{"support"}}})
		clientID := "tsagent-" + name
		// The gateway is reached at its canonical name (its resource URI's
		// origin, http://localhost), routed to where it listens.
		base, err := url.Parse(oauthResource)
		Expect(err).NotTo(HaveOccurred())
		listening, err := url.Parse(gatewayURL)
		Expect(err).NotTo(HaveOccurred())
		people.AddPublicClient(clientID, oidcprovider.PublicClient{
			RedirectURIs: []string{"http://127.0.0.1/callback"},
			Resources:    []string{base.Scheme + "://" + base.Host + "/namespaces/"},
			Scopes:       []string{"mcp.tools"},
		})
		grantPersonTools(ns, email, groupPrefix+"support", docs.object(echo))
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, nil, []string{groupPrefix + "support"})
		endpoint := authn.NamespacedResource(oauthResource, ns)
		signIns := people.Authorizations()

		arg := fmt.Sprintf("from-typescript-oauth-%016x", rand.Uint64())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var opened []string
		agent, err := tsagent.Start(ctx, endpoint, "", tsagent.Options{
			OAuth: &tsagent.OAuth{
				ClientID: clientID,
				RootCAs:  people.CAPEM,
				Browser: func(ctx context.Context, u string) error {
					opened = append(opened, u)
					return people.SignIn(ctx, u, name, password)
				},
			},
			Origins: map[string]string{base.Scheme + "://" + base.Host: listening.Scheme + "://" + listening.Host},
		},
			tsagent.List(),
			tsagent.Call(docs.local(echo), map[string]any{"text": arg}),
			tsagent.Call(docs.local(fail), nil),
		)
		Expect(err).NotTo(HaveOccurred())
		res, err := agent.Wait()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).To(BeNil(), "authorizations: %+v", res.Connect.OAuth)
		Expect(res.BrowserError).To(BeEmpty())

		By("the SDK sent the person's browser once, with PKCE, its state, the challenge's scope and the endpoint as the resource")
		Expect(opened).To(HaveLen(1))
		Expect(opened[0]).To(HavePrefix(people.Issuer + "/authorize?"))
		Expect(people.Authorizations() - signIns).To(BeEquivalentTo(1))
		Expect(res.Connect.OAuth).NotTo(BeNil())
		Expect(res.Connect.OAuth.Authorizations).To(Equal([]tsagent.Authorization{{
			Resource: endpoint, Scope: "mcp.tools", CodeChallengeMethod: "S256", State: true,
		}}))
		Expect(strings.ToLower(res.Connect.OAuth.TokenType)).To(Equal("bearer"))

		By("over HTTP: a 401, the endpoint's metadata, the provider's, the code exchanged at its token endpoint, then initialize again")
		var path []string
		for _, r := range res.HTTP.Requests {
			path = append(path, fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status))
		}
		Expect(path).To(ContainElements(
			"POST /namespaces/"+ns+"/mcp 401",
			"GET /.well-known/oauth-protected-resource/namespaces/"+ns+"/mcp 200",
			"GET /.well-known/openid-configuration 200",
			"POST /oauth/token 200",
			"POST /namespaces/"+ns+"/mcp 200",
		), "%s", strings.Join(path, "\n"))
		Expect(path).NotTo(ContainElement(ContainSubstring("register")), "no dynamic registration was tried")

		By("as the person: the tool their RoleBinding allows is listed and called")
		Expect(res.Steps).To(HaveLen(3))
		Expect(res.Steps[0].Error).To(BeNil())
		Expect(res.Steps[0].Tools).To(Equal([]string{docs.local(echo)}))
		Expect(res.Steps[1].Error).To(BeNil())
		Expect(res.Steps[1].IsError).To(BeFalse(), res.Steps[1].Text())
		Expect(res.Steps[1].Text()).To(Equal(arg))
		recs := auditFor(ns, docs.object(echo))
		Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
		Expect([]string{recs[0].Caller, recs[0].Namespace}).To(Equal([]string{email, ns}))

		By("the other is refused, audited as the person, nothing sent")
		Expect(res.Steps[2].Error).To(BeNil())
		Expect(res.Steps[2].IsError).To(BeTrue())
		Expect(res.Steps[2].Text()).To(ContainSubstring(`RBAC verb "call"`))
		Expect(docs.Calls(fail)).To(BeZero())
		denied := auditFor(ns, docs.object(fail))
		Expect(denied).NotTo(BeEmpty())
		last := denied[len(denied)-1]
		Expect([]string{last.Phase, last.Reason, last.Caller}).To(Equal([]string{audit.PhaseDenied, audit.DenyForbidden, email}))
	})

	It("registers itself at the provider (RFC 7591) when it has no client, then runs the same flow and calls as the person", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail})
		name := fmt.Sprintf("ivan-%08x", rand.Uint32())
		password := fmt.Sprintf("pw-%016x", rand.Uint64())
		email := name + "@" + ns + ".example.test"
		people.AddPerson(oidcprovider.Person{Username: name, Password: password,
			Claims: map[string]any{"email": email, "email_verified": true, "groups": []string{"support"}}})
		base, err := url.Parse(oauthResource)
		Expect(err).NotTo(HaveOccurred())
		listening, err := url.Parse(gatewayURL)
		Expect(err).NotTo(HaveOccurred())
		// What the provider lets a client that registers itself ask for:
		// the request names only its redirect URIs.
		people.SetRegistrationPolicy(oidcprovider.PublicClient{
			Resources: []string{base.Scheme + "://" + base.Host + "/namespaces/"},
			Scopes:    []string{"mcp.tools"},
		})
		grantPersonTools(ns, email, groupPrefix+"support", docs.object(echo))
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, nil, []string{groupPrefix + "support"})
		endpoint := authn.NamespacedResource(oauthResource, ns)
		registered := people.Registered()

		arg := fmt.Sprintf("from-a-registered-client-%016x", rand.Uint64())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var opened []string
		agent, err := tsagent.Start(ctx, endpoint, "", tsagent.Options{
			OAuth: &tsagent.OAuth{
				RootCAs: people.CAPEM,
				Browser: func(ctx context.Context, u string) error {
					opened = append(opened, u)
					return people.SignIn(ctx, u, name, password)
				},
			},
			Origins: map[string]string{base.Scheme + "://" + base.Host: listening.Scheme + "://" + listening.Host},
		},
			tsagent.List(),
			tsagent.Call(docs.local(echo), map[string]any{"text": arg}),
		)
		Expect(err).NotTo(HaveOccurred())
		res, err := agent.Wait()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).To(BeNil(), "authorizations: %+v", res.Connect.OAuth)
		Expect(res.BrowserError).To(BeEmpty())

		By("the SDK registered one public client and sent the person's browser with it, PKCE and the endpoint as the resource")
		Expect(people.Registered() - registered).To(BeEquivalentTo(1))
		Expect(res.Connect.OAuth).NotTo(BeNil())
		Expect(res.Connect.OAuth.Registered).To(HavePrefix("dyn-"))
		Expect(opened).To(HaveLen(1))
		link, err := url.Parse(opened[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(link.Query().Get("client_id")).To(Equal(res.Connect.OAuth.Registered))
		Expect(res.Connect.OAuth.Authorizations).To(Equal([]tsagent.Authorization{{
			Resource: endpoint, Scope: "mcp.tools", CodeChallengeMethod: "S256", State: true,
		}}))

		By("over HTTP: the 401, both metadata documents, the registration, the code exchanged, then initialize again")
		var path []string
		for _, r := range res.HTTP.Requests {
			path = append(path, fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status))
		}
		Expect(path).To(ContainElements(
			"POST /namespaces/"+ns+"/mcp 401",
			"GET /.well-known/oauth-protected-resource/namespaces/"+ns+"/mcp 200",
			"POST "+oidcprovider.RegistrationPath+" 201",
			"POST /oauth/token 200",
			"POST /namespaces/"+ns+"/mcp 200",
		), "%s", strings.Join(path, "\n"))

		By("as the person: the tool their RoleBinding allows is listed and called")
		Expect(res.Steps).To(HaveLen(2))
		Expect(res.Steps[0].Error).To(BeNil())
		Expect(res.Steps[0].Tools).To(Equal([]string{docs.local(echo)}))
		Expect(res.Steps[1].Error).To(BeNil())
		Expect(res.Steps[1].IsError).To(BeFalse(), res.Steps[1].Text())
		Expect(res.Steps[1].Text()).To(Equal(arg))
		recs := auditFor(ns, docs.object(echo))
		Expect(recs).NotTo(BeEmpty())
		Expect(recs[0].Caller).To(Equal(email))
	})

	It("gets no token for another namespace's endpoint than the one the client may ask for", func() {
		ns := newNamespace()
		name := fmt.Sprintf("heidi-%08x", rand.Uint32())
		password := fmt.Sprintf("pw-%016x", rand.Uint64())
		people.AddPerson(oidcprovider.Person{Username: name, Password: password,
			Claims: map[string]any{"email": name + "@example.test", "email_verified": true}})
		clientID := "tsagent-" + name
		base, err := url.Parse(oauthResource)
		Expect(err).NotTo(HaveOccurred())
		listening, err := url.Parse(gatewayURL)
		Expect(err).NotTo(HaveOccurred())
		// The client may ask only for another namespace's endpoint: the
		// provider refuses the resource, so the SDK gets no token.
		people.AddPublicClient(clientID, oidcprovider.PublicClient{
			RedirectURIs: []string{"http://127.0.0.1/callback"},
			Resources:    []string{authn.NamespacedResource(oauthResource, newNamespace())},
			Scopes:       []string{"mcp.tools"},
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		agent, err := tsagent.Start(ctx, authn.NamespacedResource(oauthResource, ns), "", tsagent.Options{
			OAuth: &tsagent.OAuth{ClientID: clientID, RootCAs: people.CAPEM,
				Browser: func(ctx context.Context, u string) error { return people.SignIn(ctx, u, name, password) }},
			Origins: map[string]string{base.Scheme + "://" + base.Host: listening.Scheme + "://" + listening.Host},
		}, tsagent.List())
		Expect(err).NotTo(HaveOccurred())
		res, err := agent.Wait()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).NotTo(BeNil())
		Expect(res.Connect.Error.Message).To(ContainSubstring("invalid_target"))
		Expect(res.Steps).To(BeEmpty())
	})
})

// grantPersonTools lets user (in group) call the McpTools objects of ns,
// and waits until a review allows it.
func grantPersonTools(ns, user, group string, objects ...string) {
	GinkgoHelper()
	ctx := context.Background()
	name := fmt.Sprintf("person-call-%08x", rand.Uint32())
	Expect(k8sClient.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools"},
			Verbs: []string{authz.VerbCall}, ResourceNames: objects,
		}},
	})).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
	Eventually(func(g Gomega) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{group},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: authz.VerbCall, Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools", Name: objects[0]},
		}}
		g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
}
