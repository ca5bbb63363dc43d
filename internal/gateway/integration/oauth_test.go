package integration_test

import (
	"context"
	crand "crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

// People reach the gateway with OAuth access tokens of an identity
// provider the administrator trusts: the suite's gateway trusts people (a
// real OpenID Provider) and unreachable (one whose connections are cut
// once its tokens are minted). Its resource is oauthResource; each
// namespace's endpoint is a resource of its own.
var people, unreachable *oidcprovider.Provider

const (
	oauthResource = "http://localhost/mcp"
	// groupPrefix is what the gateway puts before the provider's groups.
	groupPrefix = "oidc:"
)

func oauthOptions() oauthresource.Options {
	o := oauthresource.DefaultOptions()
	o.Resource = oauthResource
	o.Scopes = []string{"mcp.tools"}
	prefix := groupPrefix
	for _, p := range []*oidcprovider.Provider{people, unreachable} {
		o.Issuers = append(o.Issuers, oauthresource.Issuer{
			URL: p.Issuer, CertificateAuthority: p.CAPEM,
			ClaimMappings: oauthresource.ClaimMappings{
				Username: oauthresource.PrefixedClaim{Claim: "email"},
				Groups:   oauthresource.PrefixedClaim{Claim: "groups", Prefix: &prefix},
			},
		})
	}
	return o
}

// endpointOf is the gateway's endpoint for namespace ns.
func endpointOf(ns string) string {
	return strings.TrimSuffix(gatewayURL, "/mcp") + "/namespaces/" + ns + "/mcp"
}

// human is a person with an OAuth client of their own at people, for
// one namespace's endpoint.
type human struct {
	ns, email string
	client    string
}

// newHuman registers name's client at p, minting tokens for ns's
// endpoint and naming the groups given (before the gateway's prefix).
func newHuman(p *oidcprovider.Provider, ns, name string, groups ...string) *human {
	h := &human{ns: ns, email: name + "@" + ns + ".example.test", client: fmt.Sprintf("%s-%s-%08x", name, ns, rand.Uint32())}
	p.AddClient(h.client, oidcprovider.Client{
		Secret: h.client + "-s3cret", Subject: name + "-" + ns, Audience: []string{authn.NamespacedResource(oauthResource, ns)},
		Claims: map[string]any{"email": h.email, "email_verified": true, "groups": groups},
	})
	return h
}

// elsewhere is the same person with a client minting tokens for another
// namespace's endpoint.
func (h *human) elsewhere(p *oidcprovider.Provider, ns string) *human {
	other := &human{ns: ns, email: h.email, client: h.client + "-" + ns}
	p.AddClient(other.client, oidcprovider.Client{
		Secret: other.client + "-s3cret", Subject: strings.TrimSuffix(h.email, "@"+h.ns+".example.test") + "-" + h.ns,
		Audience: []string{authn.NamespacedResource(oauthResource, ns)},
		Claims:   map[string]any{"email": h.email, "email_verified": true},
	})
	return other
}

// token mints a fresh access token, remembered for the leak checks.
func (h *human) token(p *oidcprovider.Provider) string {
	GinkgoHelper()
	t := p.Mint(GinkgoT(), h.client, "mcp.tools")
	tokensUsed.Add(t)
	return t
}

// connectAt opens a session at ns's endpoint with token.
func connectAt(ns, token string, copts *sdk.ClientOptions) *sdk.ClientSession {
	GinkgoHelper()
	c := sdk.NewClient(&sdk.Implementation{Name: "person-agent", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpointOf(ns), HTTPClient: httpClient(token)}, &sdk.ClientSessionOptions{ProtocolVersion: legacyEra})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	return cs
}

// grantSubject lets subject call every McpTool of ns, and waits until a
// review as user (with groups) allows it.
func grantSubject(ns string, subject rbacv1.Subject, user string, groups ...string) {
	GinkgoHelper()
	ctx := context.Background()
	name := fmt.Sprintf("people-call-%08x", rand.Uint32())
	Expect(k8sClient.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools"}, Verbs: []string{authz.VerbCall},
		}},
	})).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	})).To(Succeed())
	Eventually(func(g Gomega) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: authz.VerbCall, Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools", Name: "any"},
		}}
		g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
}

// peopleCeiling declares an McpAccessPolicy of ns for users and groups.
func peopleCeiling(ns string, class mcpv1alpha1.DataClass, users, groups []string) {
	GinkgoHelper()
	p := &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("people-%08x", rand.Uint32())},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{Users: users, Groups: groups, MaxDataClass: class},
	}
	Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	Eventually(func() error {
		return cached.Get(context.Background(), client.ObjectKeyFromObject(p), &mcpv1alpha1.McpAccessPolicy{})
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

// tryCall opens a session at ns's endpoint with token (a session is
// offered what its caller could use when it began), calls name once, and
// says whether the call was made.
func tryCall(ns, token, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "person-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpointOf(ns), HTTPClient: httpClient(token)}, &sdk.ClientSessionOptions{ProtocolVersion: legacyEra})
	if err != nil {
		GinkgoWriter.Printf("connect: %v\n", err)
		return false
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": "hello"}})
	if err != nil {
		GinkgoWriter.Printf("call %s: %v\n", name, err)
	} else if res.IsError {
		GinkgoWriter.Printf("call %s: refused: %s\n", name, text(res))
	}
	return err == nil && !res.IsError && text(res) == "hello"
}

// rawGet sends one request at path of the gateway's address with token
// (none when empty) and returns the status, WWW-Authenticate,
// Retry-After and body.
func rawRequest(method, url, token string) (int, string, string, string) {
	GinkgoHelper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	}
	req, err := http.NewRequest(method, url, body)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient(token).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Retry-After"), string(b)
}

// strangerToken is f's claims under an issuer nobody configured, signed
// by a key of the forger's.
func strangerToken(f oidcprovider.Forge) string {
	GinkgoHelper()
	key, err := rsa.GenerateKey(crand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	claims := map[string]any{}
	for k, v := range f.Claims {
		claims[k] = v
	}
	claims["iss"] = "https://issuer.example.test"
	f.Claims = claims
	return f.SignedBy(key, "stranger-key")
}

var _ = Describe("People with OAuth access tokens", func() {
	It("serves a person the tools RBAC lets their user or group call, within their policy's ceiling, as that person", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		alice := newHuman(people, ns, "alice", "readers")
		bob := newHuman(people, ns, "bob", "support")
		carol := newHuman(people, ns, "carol", "readers")
		tool := docs.local(echo)

		By("without a RoleBinding, a person is offered nothing and may call nothing")
		aliceToken := alice.token(people)
		Expect(toolNames(connectAt(ns, aliceToken, nil))).To(BeEmpty())
		Expect(tryCall(ns, aliceToken, tool)).To(BeFalse())

		By("a RoleBinding to the user and a policy naming the user: the call is made as alice")
		grantSubject(ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: alice.email}, alice.email, groupPrefix+"readers")
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, []string{alice.email}, nil)
		Eventually(func() bool { return tryCall(ns, aliceToken, tool) }, 20*time.Second, 250*time.Millisecond).Should(BeTrue())
		Expect(toolNames(connectAt(ns, aliceToken, nil))).To(ConsistOf(tool))
		recs := auditFor(ns, docs.object(echo))
		last := recs[len(recs)-1]
		Expect([]string{last.Phase, last.Caller, last.Namespace}).To(Equal([]string{audit.PhaseAfter, alice.email, ns}))

		By("the same RoleBinding does not reach carol, though she is in alice's group")
		Expect(tryCall(ns, carol.token(people), tool)).To(BeFalse())

		By("a RoleBinding to a group and a policy naming the group: bob calls as a member")
		grantSubject(ns, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: groupPrefix + "support"}, bob.email, groupPrefix+"support")
		bobToken := bob.token(people)
		Expect(tryCall(ns, bobToken, tool)).To(BeFalse(), "RBAC allows bob, but no policy names him: the Public ceiling refuses an Internal tool")
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, nil, []string{groupPrefix + "support"})
		Eventually(func() bool { return tryCall(ns, bobToken, tool) }, 20*time.Second, 250*time.Millisecond).Should(BeTrue())
		recs = auditFor(ns, docs.object(echo))
		Expect(recs[len(recs)-1].Caller).To(Equal(bob.email))
		Expect(docs.Calls(echo)).To(Equal(2))

		By("a ServiceAccount token keeps working beside them, at /mcp and at its namespace's endpoint")
		sa := newAgent(ns, "bot").allowInternal()
		isErr, out := call(sa.connect(nil, legacyEra), tool, map[string]any{"text": "hi"})
		Expect(isErr).To(BeFalse(), out)
		Expect(out).To(Equal("hi"))
		code, _, _, _ := rawRequest(http.MethodPost, endpointOf(ns), sa.token)
		Expect(code).To(Equal(http.StatusOK))
		code, _, _, body := rawRequest(http.MethodPost, endpointOf(newNamespace()), sa.token)
		Expect(code).To(Equal(http.StatusForbidden), body)
	})

	It("answers each bad access token clearly, and no token appears in the logs, audit records, Events or metrics", func() {
		ns := newNamespace()
		other := newNamespace()
		alice := newHuman(people, ns, "alice", "readers")
		elsewhere := alice.elsewhere(people, other)
		cut := newHuman(unreachable, ns, "dave")
		cutToken := cut.token(unreachable)
		unreachable.Down.Store(true)
		DeferCleanup(func() { unreachable.Down.Store(false) })
		metadata := "http://localhost/.well-known/oauth-protected-resource/namespaces/" + ns + "/mcp"

		By("no token: 401 naming the endpoint's metadata, which is served")
		code, challenge, _, _ := rawRequest(http.MethodPost, endpointOf(ns), "")
		Expect(code).To(Equal(http.StatusUnauthorized))
		Expect(challenge).To(Equal(`Bearer resource_metadata="` + metadata + `", scope="mcp.tools"`))
		code, _, _, body := rawRequest(http.MethodGet, strings.TrimSuffix(gatewayURL, "/mcp")+"/.well-known/oauth-protected-resource/namespaces/"+ns+"/mcp", "")
		Expect(code).To(Equal(http.StatusOK))
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		Expect(json.Unmarshal([]byte(body), &doc)).To(Succeed())
		Expect(doc.Resource).To(Equal(authn.NamespacedResource(oauthResource, ns)))
		Expect(doc.AuthorizationServers).To(ConsistOf(people.Issuer, unreachable.Issuer))

		good := alice.token(people)
		forged := oidcprovider.ForgeFrom(GinkgoT(), good)
		var forgedTokens []string
		for _, tc := range []struct {
			name, token string
			reason      oauthresource.Reason
		}{
			{"alg none", forged.Unsigned(), oauthresource.ReasonAlgorithm},
			{"a token for another namespace's endpoint", elsewhere.token(people), oauthresource.ReasonAudience},
			{"a token of an issuer nobody trusts", strangerToken(forged), oauthresource.ReasonUnknownIssuer},
		} {
			By(tc.name)
			// Forged tokens are searched for below; the suite's leak check
			// takes signed ones only (an unsigned token has no signature
			// to look for).
			forgedTokens = append(forgedTokens, tc.token)
			code, challenge, _, _ := rawRequest(http.MethodPost, endpointOf(ns), tc.token)
			Expect(code).To(Equal(http.StatusUnauthorized), tc.name)
			Expect(challenge).To(ContainSubstring(`error="invalid_token"`))
			Expect(challenge).To(ContainSubstring("(" + string(tc.reason) + ")"))
			Expect(challenge).To(ContainSubstring(metadata))
		}

		By("a session opened at one namespace's endpoint is not the same person's at another's")
		req, err := http.NewRequest(http.MethodPost, endpointOf(ns), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacyEra+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := httpClient(good).Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		session := resp.Header.Get("Mcp-Session-Id")
		Expect(session).NotTo(BeEmpty())
		req, err = http.NewRequest(http.MethodPost, endpointOf(other), strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", legacyEra)
		otherToken := elsewhere.token(people)
		resp, err = httpClient(otherToken).Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "alice's session of %s used at %s's endpoint", ns, other)

		By("the identity provider unreachable: 503 with Retry-After, not 401")
		code, challenge, retryAfter, body := rawRequest(http.MethodPost, endpointOf(ns), cutToken)
		Expect(code).To(Equal(http.StatusServiceUnavailable), body)
		Expect(retryAfter).NotTo(BeEmpty())
		Expect(challenge).To(BeEmpty())
		Expect(body).To(ContainSubstring("could not be reached"))

		By("a person at the endpoint without a namespace is told to name one")
		erin := fmt.Sprintf("erin-%08x", rand.Uint32())
		people.AddClient(erin, oidcprovider.Client{Secret: erin + "-s3cret", Subject: erin, Audience: []string{oauthResource},
			Claims: map[string]any{"email": erin + "@example.test", "email_verified": true}})
		erinToken := people.Mint(GinkgoT(), erin)
		tokensUsed.Add(erinToken)
		code, _, _, body = rawRequest(http.MethodPost, gatewayURL, erinToken)
		Expect(code).To(Equal(http.StatusForbidden), body)
		Expect(body).To(ContainSubstring("/namespaces/<namespace>/mcp"))

		By("expired")
		clock.advance(2 * time.Hour)
		code, challenge, _, _ = rawRequest(http.MethodPost, endpointOf(ns), good)
		Expect(code).To(Equal(http.StatusUnauthorized))
		Expect(challenge).To(ContainSubstring("(" + string(oauthresource.ReasonExpired) + ")"))

		By("no token is in the logs, the audit records, the Events or the metrics")
		haystacks := map[string]string{
			"manager logs":  logs.String(),
			"audit records": strings.Join(auditLog.all(), "\n"),
			"Events":        allEvents(),
			"metrics":       metricsText(),
		}
		for where, text := range haystacks {
			for _, t := range append(tokensUsed.All(), forgedTokens...) {
				Expect(strings.Contains(text, t)).To(BeFalse(), "a token appears in the %s", where)
				if i := strings.LastIndex(t, "."); i >= 0 && len(t)-i > 8 {
					Expect(strings.Contains(text, t[i+1:])).To(BeFalse(), "a token's signature appears in the %s", where)
				}
			}
		}
	})

	It("refuses a person's approval of their own call, and takes another's", func() {
		ns := newNamespace()
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(ns))).To(Succeed())
		})
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		alice := newHuman(people, ns, "alice", "support")
		grantSubject(ns, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: groupPrefix + "support"}, alice.email, groupPrefix+"support")
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, nil, []string{groupPrefix + "support"})
		aliceToken := alice.token(people)
		args := map[string]any{"text": "hello"}
		Eventually(func() []mcpv1alpha1.McpCallApproval {
			tryCall(ns, aliceToken, docs.local(echo))
			return approvalsOf(ns)
		}, 20*time.Second, 250*time.Millisecond).Should(HaveLen(1), "the call waits for a person")
		cs := connectAt(ns, aliceToken, (&urlCapable{}).options(false))
		e := callWaiting(cs, legacyEra, docs.local(echo), args)
		a := approvalsOf(ns)[0]
		Expect(e.ElicitationID).To(Equal(ns + "/" + a.Name))
		Expect(a.Spec.Caller).To(Equal(alice.email))
		Expect(a.Spec.CallerGroups).To(ContainElement(groupPrefix + "support"))

		By("alice, signed in to the API server as the same user, cannot approve her own call")
		self := as(alice.email, groupPrefix+"support", "system:authenticated")
		mayApprove(ns, self)
		err := self.decide(ns, a.Name, mcpv1alpha1.CallApproved, alice.email, "")
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("cannot decide its own approval"))

		By("another person approves, and the retry is made as alice, approved by them")
		frank := as("frank@"+ns+".example.test", "system:authenticated")
		mayApprove(ns, frank)
		Expect(frank.decide(ns, a.Name, mcpv1alpha1.CallApproved, frank.name, "")).To(Succeed())
		res, err := retry(cs, legacyEra, docs.local(echo), args)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), text(res))
		recs := auditFor(ns, docs.object(echo))
		before := recs[len(recs)-2]
		Expect([]string{before.Phase, before.Caller, before.ApprovedBy}).To(Equal([]string{audit.PhaseBefore, alice.email, frank.name}))
	})
})
