package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

// upstreamAS is the authorization server of the per-person servers: a
// real OpenID Provider (zitadel's) serving the authorization code flow
// with PKCE, refresh tokens and revocation, with the example storage's
// two users.
var upstreamAS *oidcprovider.Provider

// callbackURL is the gateway's callback as the person's browser reaches
// it: the browser below resolves the host to the gateway's address.
const callbackURL = "http://gateway.test" + personauth.CallbackPath

// personServer is an MCP server that accepts a person's token when the
// authorization server's userinfo endpoint does (as a resource server
// of opaque tokens checks them), records whose it was, and takes the
// discovery token for imports. It publishes its protected resource
// metadata (RFC 9728) naming upstreamAS.
type personServer struct {
	*mcpserver.Server
	URL       string
	discovery string
	mu        sync.Mutex
	subjects  []string
	presented []string
}

func startPersonServer() *personServer {
	GinkgoHelper()
	inner, err := mcpserver.New(mcpserver.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(inner.Close)
	ps := startPersonServerFor(inner.Handler())
	ps.Server = inner
	return ps
}

// startPersonServerFor is startPersonServer in front of the MCP endpoint
// h serves.
func startPersonServerFor(h http.Handler) *personServer {
	GinkgoHelper()
	ps := &personServer{discovery: newSecretValue()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource"+mcpserver.Path {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": ps.URL, "authorization_servers": []string{upstreamAS.Issuer}})
			return
		}
		bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if bearer == ps.discovery {
			h.ServeHTTP(w, r)
			return
		}
		sub := ps.userinfo(bearer)
		if sub == "" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+ps.URL+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		ps.mu.Lock()
		ps.subjects, ps.presented = append(ps.subjects, sub), append(ps.presented, bearer)
		ps.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	DeferCleanup(srv.Close)
	ps.URL = srv.URL + mcpserver.Path
	return ps
}

// declarePerPerson declares ps as the McpServer name of ns, called with
// each person's own authorization at upstreamAS (a client registered
// there for it) and imported with ps's discovery credential; enable as
// declare's. It returns the client's id and secret.
func declarePerPerson(ns, name string, ps *personServer, enable []string) (up *upstream, clientID, clientSecret string) {
	GinkgoHelper()
	clientID, clientSecret = fmt.Sprintf("gateway-%08x", rand.Uint32()), newSecretValue()
	upstreamAS.AddCodeClient(clientID, clientSecret, callbackURL)
	for secret, v := range map[string]string{"discovery": ps.discovery, "client": clientSecret} {
		Expect(k8sClient.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret, Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
			Data:       map[string][]byte{"v": []byte(v)},
		})).To(Succeed())
	}
	up = declare(ns, name, ps.URL, enable, func(s *mcpv1alpha1.McpServerSpec) {
		s.AllowCredentialOverHTTP, s.AllowPrivateNetwork = true, true
		s.Auth = &mcpv1alpha1.McpServerAuth{PerPerson: &mcpv1alpha1.PerPersonAuth{
			ClientID:           clientID,
			ClientSecretRef:    &mcpv1alpha1.SecretKeySelector{Name: "client", Key: "v"},
			Scopes:             []string{"openid", "offline_access"},
			DiscoverySecretRef: &mcpv1alpha1.SecretKeySelector{Name: "discovery", Key: "v"},
		}}
	})
	return up, clientID, clientSecret
}

func (ps *personServer) userinfo(token string) string {
	if token == "" {
		return ""
	}
	req, _ := http.NewRequest(http.MethodGet, upstreamAS.Issuer+"/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := upstreamAS.Client().Do(req)
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Sub string `json:"sub"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return ""
	}
	return body.Sub
}

// connectAtEra opens a session at ns's endpoint with token in era.
func connectAtEra(ns, token string, copts *sdk.ClientOptions, era string) *sdk.ClientSession {
	GinkgoHelper()
	c := sdk.NewClient(&sdk.Implementation{Name: "person-agent", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpointOf(ns), HTTPClient: httpClient(token)}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	return cs
}

func (ps *personServer) seen() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]string(nil), ps.subjects...)
}

// The gateway's sign-in client at people, where the browser that follows
// a consent link signs in as the person the link is for.
const (
	signInClientID     = "gateway-consent-signin"
	signInClientSecret = "gateway-consent-signin-s3cret"
)

// consentSignIn registers the gateway's sign-in client at people and
// configures the gateway with it.
func consentSignIn() manager.ConsentSignIn {
	people.AddCodeClient(signInClientID, signInClientSecret, callbackURL)
	secretsUsed.Add(signInClientSecret)
	return manager.ConsentSignIn{Issuer: people.Issuer, ClientID: signInClientID, ClientSecret: signInClientSecret}
}

// signInPassword is the password of every person who signs in at people.
const signInPassword = "people-pa55word"

// canSignIn lets h sign in at people with a browser, as the email the
// gateway names them by.
func (h *human) canSignIn() *human {
	people.AddPerson(oidcprovider.Person{Username: h.email, Password: signInPassword,
		Claims: map[string]any{"email": h.email, "email_verified": true}})
	return h
}

// browser is a person's browser, with its own cookies: it trusts the
// providers (httptest's certificate) and reaches the gateway at
// callbackURL's host.
func browser() *http.Client {
	gw, err := url.Parse(gatewayURL)
	Expect(err).NotTo(HaveOccurred())
	t := upstreamAS.Client().Transport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "gateway.test:") {
			addr = gw.Host
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return &http.Client{Transport: t, Timeout: 20 * time.Second, Jar: jar}
}

// login posts the login form of the provider page is at, as user with
// password, consenting or not (a sign-in's form has no consent answer).
func login(b *http.Client, page *url.URL, user, password, decision string) *http.Response {
	GinkgoHelper()
	Expect(page.Path).To(Equal(oidcprovider.LoginPath), "at a provider's login page")
	form := url.Values{oidcprovider.FormRequest: {page.Query().Get(oidcprovider.FormRequest)}, oidcprovider.FormUser: {user}, oidcprovider.FormPassword: {password}}
	if decision != "" {
		form.Set(oidcprovider.FormConsent, decision)
	}
	resp, err := b.PostForm(page.String(), form)
	Expect(err).NotTo(HaveOccurred())
	return resp
}

// page reads resp as the page the browser shows.
func page(resp *http.Response) (int, string) {
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// signIn follows link in b and signs in at people as email: the browser
// ends at the upstream authorization server's login page when the gateway
// took the sign-in, or at the gateway's page when it did not.
func signIn(b *http.Client, link, email string) *http.Response {
	GinkgoHelper()
	resp, err := b.Get(link)
	Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	Expect(resp.Request.URL.String()).To(HavePrefix(people.Issuer+"/"), "the link leads to the sign-in at the person's identity provider first")
	return login(b, resp.Request.URL, email, signInPassword, "")
}

// consent follows link as the person with email's browser: the sign-in
// at people, then the upstream login page, posted as user with consent
// allowed or not. It returns the gateway's page.
func consent(link, email, user string, allow bool) (int, string) {
	GinkgoHelper()
	b := browser()
	resp := signIn(b, link, email)
	_ = resp.Body.Close()
	Expect(resp.Request.URL.String()).To(HavePrefix(upstreamAS.Issuer+"/"), "after the sign-in, the browser is at the server's authorization server")
	decision := "deny"
	if allow {
		decision = "allow"
	}
	resp = login(b, resp.Request.URL, user, oidcprovider.UserPassword, decision)
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.Request.URL.Host).To(Equal("gateway.test"), "the browser ends at the gateway's callback")
	return page(resp)
}

// authorization reads user's authorization Secret of server in ns.
func authorization(ns, server, user string) *corev1.Secret {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: personauth.SecretName(server, user)}, s)).To(Succeed())
	return s
}

var _ = Describe("Per-person upstream authorization", func() {
	It("asks each person to authorize the server once, calls with their own token only, and answers a refused consent and a revoked refresh token clearly", func() {
		ns := newNamespace()
		ctx := context.Background()
		ps := startPersonServer()
		By("the importer lists the tools with the discovery credential; it acts as nobody")
		up, clientID, clientSecret := declarePerPerson(ns, "records", ps, []string{echo})
		tool := up.local(echo)
		alice := newHuman(people, ns, "alice").canSignIn()
		bob := newHuman(people, ns, "bob").canSignIn()
		for _, h := range []*human{alice, bob} {
			grantSubject(ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: h.email}, h.email)
		}
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, []string{alice.email, bob.email}, nil)
		args := map[string]any{"text": "hello"}
		// Every token value the spec sees, for the leak search at its end.
		var values []string
		keep := func(v ...string) { values = append(values, v...); secretsUsed.Add(v...) }
		keep(clientSecret, ps.discovery)

		By("alice's first call: a URL elicitation with the consent link, and nothing sent upstream")
		var cs = connectAt(ns, alice.token(people), (&urlCapable{}).options(false))
		Eventually(func() []string { return toolNames(cs) }, 20*time.Second, 250*time.Millisecond).Should(ContainElement(tool))
		cs = connectAt(ns, alice.token(people), (&urlCapable{}).options(false))
		e := callWaiting(cs, legacyEra, tool, args)
		Expect(e.Message).To(ContainSubstring("has not authorized"))
		Expect(e.URL).To(HavePrefix(callbackURL+"?"), "the link leads to the gateway, which has the browser sign in first")
		Expect(ps.seen()).To(BeEmpty())
		recs := auditFor(ns, up.object(echo))
		Expect([]string{recs[len(recs)-1].Reason, recs[len(recs)-1].Detail}).To(Equal([]string{audit.DenyUpstreamAuthorization, personauth.ReasonNotAuthorized}))

		By("alice consents in her browser: the callback stores her token")
		code, page := consent(e.URL, alice.email, upstreamAS.FirstUser(), true)
		Expect(code).To(Equal(http.StatusOK), page)
		Expect(page).To(ContainSubstring("Authorized"))
		s := authorization(ns, "records", alice.email)
		Expect(s.Annotations[personauth.AnnotationState]).To(Equal(personauth.StateAuthorized))
		Expect(s.Labels).NotTo(HaveKey(mcpv1alpha1.LabelCredential), "no McpServer can name it as a credential")
		aliceAccess, aliceRefresh := string(s.Data["access-token"]), string(s.Data["refresh-token"])
		Expect(aliceAccess).NotTo(BeEmpty())
		Expect(aliceRefresh).NotTo(BeEmpty())
		keep(aliceAccess, aliceRefresh)

		By("her retried call reaches the server with her own token")
		isErr, out := call(cs, tool, args)
		Expect(isErr).To(BeFalse(), out)
		Expect(out).To(Equal("hello"))
		Expect(ps.seen()).NotTo(BeEmpty())
		Expect(ps.seen()).To(HaveEach(oidcprovider.FirstSubject), "every request of the call carried alice's token")
		sent := len(ps.seen())

		By("bob's call does not use alice's token: he is asked for his own consent, in words for a client without URL elicitation")
		bs := connectAt(ns, bob.token(people), nil)
		isErr, out = call(bs, tool, args)
		Expect(isErr).To(BeTrue())
		Expect(out).To(ContainSubstring("has not authorized"))
		bobLink := out[strings.Index(out, "Link: ")+len("Link: "):]
		Expect(ps.seen()).To(HaveLen(sent))

		By("bob refuses at the authorization server: his next call says so")
		code, page = consent(bobLink, bob.email, oidcprovider.SecondUser, false)
		Expect(code).To(Equal(http.StatusOK), page)
		Expect(page).To(ContainSubstring("refused"))
		isErr, out = call(bs, tool, args)
		Expect(isErr).To(BeTrue())
		Expect(out).To(ContainSubstring("consent to this MCP server was refused"))
		Expect(ps.seen()).To(HaveLen(sent))

		By("in 2026-07-28, bob is asked with an input-required result, and a declined link is a clear refusal")
		ms := connectAtEra(ns, bob.token(people), (&urlCapable{}).options(false), modernEra)
		res, err := ms.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.NeedsInput()).To(BeTrue(), text(res))
		asked, ok := res.InputRequests["authorization"].(*sdk.ElicitParams)
		Expect(ok).To(BeTrue())
		Expect([]string{asked.Mode, asked.Message}).To(HaveExactElements("url", ContainSubstring("refused")))
		res, err = ms.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args,
			InputResponses: sdk.InputResponseMap{"authorization": &sdk.ElicitResult{Action: "decline"}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(ContainSubstring("declined to open the authorization link"))
		Expect(ps.seen()).To(HaveLen(sent))

		By("alice's access token expires: it is refreshed, stored, and her call goes on in 2026-07-28 too")
		s = authorization(ns, "records", alice.email)
		s.Data["expiry"] = []byte(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		// A replica keeps a usable token for TokenTTL before reading the
		// Secret again.
		clock.advance(personauth.TokenTTL + time.Second)
		res, err = connectAtEra(ns, alice.token(people), nil, modernEra).CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), text(res))
		s = authorization(ns, "records", alice.email)
		Expect(string(s.Data["access-token"])).NotTo(Equal(aliceAccess), "a new access token was stored")
		aliceAccess, aliceRefresh = string(s.Data["access-token"]), string(s.Data["refresh-token"])
		keep(aliceAccess, aliceRefresh)
		Expect(ps.seen()).To(HaveEach(oidcprovider.FirstSubject))
		Expect(len(ps.seen())).To(BeNumerically(">", sent))
		sent = len(ps.seen())

		By("alice's refresh token is revoked upstream and her access token has expired: a clear answer with a new link")
		form := url.Values{"token": {aliceRefresh}, "token_type_hint": {"refresh_token"}}
		req, _ := http.NewRequest(http.MethodPost, upstreamAS.Issuer+"/revoke", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(clientID, clientSecret)
		resp, err := upstreamAS.Client().Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		s = authorization(ns, "records", alice.email)
		s.Data["expiry"] = []byte(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		// A replica keeps a usable token for TokenTTL before reading the
		// Secret again.
		clock.advance(personauth.TokenTTL + time.Second)
		e = callWaiting(cs, legacyEra, tool, args)
		Expect(e.Message).To(ContainSubstring("refresh token was revoked"))
		s = authorization(ns, "records", alice.email)
		Expect(s.Annotations[personauth.AnnotationState]).To(Equal(personauth.StateRevoked))
		Expect(s.Data).NotTo(HaveKey("access-token"))
		Expect(ps.seen()).To(HaveLen(sent))

		By("no token appears in the logs, audit records, Events or the server's status")
		var srv mcpv1alpha1.McpServer
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "records"}, &srv)).To(Succeed())
		status, _ := json.Marshal(srv.Status)
		haystacks := map[string]string{
			"manager logs":  logs.String(),
			"audit records": strings.Join(auditLog.all(), "\n"),
			"Events":        allEvents(),
			"status":        string(status),
		}
		for where, text := range haystacks {
			for _, v := range values {
				Expect(strings.Contains(text, v)).To(BeFalse(), "a token appears in the %s", where)
			}
		}
	})
})

// The attack of ADR 063: Mallory's agent gets a consent link for Mallory
// and she sends it to Bob. Whoever follows a link must first sign in as
// the person it names, and every later step must happen in the browser
// that signed in.
var _ = Describe("Per-person upstream authorization: who follows a consent link", func() {
	It("stores nothing for alice when bob follows her link or finishes it in another browser, and alice's own sign-in and consent work", func() {
		ns := newNamespace()
		ctx := context.Background()
		ps := startPersonServer()
		clientID := fmt.Sprintf("gateway-%08x", rand.Uint32())
		clientSecret := newSecretValue()
		upstreamAS.AddCodeClient(clientID, clientSecret, callbackURL)
		for name, v := range map[string]string{"discovery": ps.discovery, "client": clientSecret} {
			Expect(k8sClient.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
				Data:       map[string][]byte{"v": []byte(v)},
			})).To(Succeed())
		}
		up := declare(ns, "records", ps.URL, []string{echo}, func(s *mcpv1alpha1.McpServerSpec) {
			s.AllowCredentialOverHTTP, s.AllowPrivateNetwork = true, true
			s.Auth = &mcpv1alpha1.McpServerAuth{PerPerson: &mcpv1alpha1.PerPersonAuth{
				ClientID:           clientID,
				ClientSecretRef:    &mcpv1alpha1.SecretKeySelector{Name: "client", Key: "v"},
				Scopes:             []string{"openid", "offline_access"},
				DiscoverySecretRef: &mcpv1alpha1.SecretKeySelector{Name: "discovery", Key: "v"},
			}}
		})
		tool := up.local(echo)
		alice := newHuman(people, ns, "alice").canSignIn()
		bob := newHuman(people, ns, "bob").canSignIn()
		for _, h := range []*human{alice, bob} {
			grantSubject(ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: h.email}, h.email)
		}
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, []string{alice.email, bob.email}, nil)
		args := map[string]any{"text": "hello"}
		secretsUsed.Add(clientSecret, ps.discovery)
		cs := connectAt(ns, alice.token(people), nil)
		Eventually(func() []string { return toolNames(cs) }, 20*time.Second, 250*time.Millisecond).Should(ContainElement(tool))
		aliceLink := func() string {
			GinkgoHelper()
			isErr, out := call(cs, tool, args)
			Expect(isErr).To(BeTrue())
			Expect(out).To(ContainSubstring("has not authorized"))
			return out[strings.Index(out, "Link: ")+len("Link: "):]
		}
		nothingFor := func(user string) {
			GinkgoHelper()
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: personauth.SecretName("records", user)}, &corev1.Secret{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is stored for %s (%v)", user, err)
		}

		By("bob follows alice's link and signs in as himself: refused before the upstream authorization server, nothing stored")
		asked := upstreamAS.Authorizations()
		code, text := page(signIn(browser(), aliceLink(), bob.email))
		Expect(code).To(Equal(http.StatusForbidden), text)
		Expect(text).To(ContainSubstring("another person"))
		Expect(upstreamAS.Authorizations()).To(Equal(asked), "bob's browser never reached the upstream authorization server")
		nothingFor(alice.email)
		nothingFor(bob.email)
		Expect(aliceLink()).NotTo(BeEmpty(), "alice's next call still gets a link")

		By("alice signs in, but the consent page is finished in bob's browser (without her cookie): nothing stored")
		resp := signIn(browser(), aliceLink(), alice.email)
		_ = resp.Body.Close()
		Expect(resp.Request.URL.String()).To(HavePrefix(upstreamAS.Issuer + "/"))
		code, text = page(login(browser(), resp.Request.URL, oidcprovider.SecondUser, oidcprovider.UserPassword, "allow"))
		Expect(code).To(Equal(http.StatusForbidden), text)
		Expect(text).To(ContainSubstring("did not start in this browser"))
		nothingFor(alice.email)

		By("alice's sign-in answer replayed in another browser: refused, nothing stored")
		ab := browser()
		first, err := ab.Get(aliceLink())
		Expect(err).NotTo(HaveOccurred())
		_ = first.Body.Close()
		ab.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
			if req.URL.Host == "gateway.test" {
				return http.ErrUseLastResponse
			}
			return nil
		}
		resp = login(ab, first.Request.URL, alice.email, signInPassword, "")
		_ = resp.Body.Close()
		back := resp.Header.Get("Location")
		Expect(back).To(HavePrefix(callbackURL+"?"), "the identity provider sends the browser back with the sign-in's code")
		replayed, err := browser().Get(back)
		Expect(err).NotTo(HaveOccurred())
		code, text = page(replayed)
		Expect(code).To(Equal(http.StatusForbidden), text)
		Expect(text).To(ContainSubstring("did not start in this browser"))
		nothingFor(alice.email)

		By("alice follows her own link, signs in as herself and consents: her next call goes through with her token")
		code, text = consent(aliceLink(), alice.email, upstreamAS.FirstUser(), true)
		Expect(code).To(Equal(http.StatusOK), text)
		Expect(text).To(ContainSubstring("Authorized"))
		s := authorization(ns, "records", alice.email)
		secretsUsed.Add(string(s.Data["access-token"]), string(s.Data["refresh-token"]))
		isErr, out := call(cs, tool, args)
		Expect(isErr).To(BeFalse(), out)
		Expect(ps.seen()).To(HaveEach(oidcprovider.FirstSubject))

		By("no token appears in the logs or audit records")
		for _, v := range []string{string(s.Data["access-token"]), string(s.Data["refresh-token"]), signInClientSecret, clientSecret} {
			Expect(logs.String()).NotTo(ContainSubstring(v))
			Expect(strings.Join(auditLog.all(), "\n")).NotTo(ContainSubstring(v))
		}
	})
})

var _ = Describe("A person's own token as a delegation's subject token", func() {
	It("is taken from the person's request, never a ServiceAccount's, and sent to no token endpoint off its issuer's origin", func() {
		ns := newNamespace()
		ctx := context.Background()
		bot := "system:serviceaccount:" + ns + ":bot"
		alice := newHuman(people, ns, "alice")
		// The suite's token endpoint is not on the origin of the people's
		// issuer: the person's token must not reach it.
		up, _, _ := delegated(ns, bot, map[string]string{})
		var p mcpv1alpha1.McpDelegationProfile
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "idp"}, &p)).To(Succeed())
		p.Spec.Actors = []mcpv1alpha1.DelegationActor{
			{Identity: alice.email, Enabled: ptr.To(true), SubjectTokenFrom: mcpv1alpha1.SubjectTokenFromCaller},
			{Identity: bot, Enabled: ptr.To(true), SubjectTokenFrom: mcpv1alpha1.SubjectTokenFromCaller},
		}
		Expect(k8sClient.Update(ctx, &p)).To(Succeed())
		grantSubject(ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: alice.email}, alice.email)
		peopleCeiling(ns, mcpv1alpha1.DataClassInternal, []string{alice.email}, nil)
		agent := newAgent(ns, "bot").allowInternal()
		before, callsBefore := tokenEndpoint.Requests(), up.Stats().Methods["tools/call"]

		By("alice's call: her token was found in her request, and refused for a token endpoint elsewhere")
		Eventually(func(g Gomega) string {
			isErr, out := call(connectAt(ns, alice.token(people), nil), "mcp_records_echo", map[string]any{"text": "x"})
			g.Expect(isErr).To(BeTrue())
			return out
		}, 20*time.Second, 250*time.Millisecond).Should(ContainSubstring(credentials.ReasonCallerTokenElsewhere))

		By("the ServiceAccount's call: its gateway token is never a subject token")
		isErr, out := call(agent.connect(nil, legacyEra), "mcp_records_echo", map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		Expect(out).To(ContainSubstring(credentials.ReasonCallerTokenUnavailable))
		Expect(tokenEndpoint.Requests()).To(Equal(before), "no token request was made")
		Expect(up.Stats().Methods["tools/call"]).To(Equal(callsBefore), "the upstream received nothing")
	})
})
