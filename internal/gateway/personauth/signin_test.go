package personauth

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

// signInRig is a gateway whose people sign in at p, which is also the
// per-person server's authorization server: alice and bob are people
// there, named by their subject.
type signInRig struct {
	p   *oidcprovider.Provider
	c   client.Client
	a   *Authorizer
	srv *mcpv1alpha1.McpServer
}

const riggedPassword = "pa55-of-a-person"

func newSignInRig(t *testing.T) *signInRig {
	t.Helper()
	p := oidcprovider.Start(t)
	srv := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "records", UID: "uid-1"},
		Spec: mcpv1alpha1.McpServerSpec{URL: recordsURL, AllowPrivateNetwork: true, Auth: &mcpv1alpha1.McpServerAuth{
			PerPerson: &mcpv1alpha1.PerPersonAuth{ClientID: "gateway-upstream", AuthorizationServer: p.Issuer, Scopes: []string{"openid", "offline_access"}}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(srv).Build()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(p.CAPEM))
	var handler atomic.Value
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.Load().(http.Handler).ServeHTTP(w, r) }))
	t.Cleanup(cb.Close)
	none := ""
	a, err := New(Options{Client: c, Keys: approvals.StaticKeys{Current: keyA}, CallbackURL: cb.URL + CallbackPath,
		Egress: egress.Policy{AllowAllPrivate: true}, RootCAs: roots,
		SignIn: &SignIn{ClientID: "gateway-signin", Issuer: oauthresource.Issuer{URL: p.Issuer, CertificateAuthority: p.CAPEM,
			ClaimMappings: oauthresource.ClaimMappings{Username: oauthresource.PrefixedClaim{Claim: "sub", Prefix: &none}}}}})
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(a.CallbackHandler())
	p.AddPublicClient("gateway-signin", oidcprovider.PublicClient{RedirectURIs: []string{cb.URL + CallbackPath}})
	p.AddPublicClient("gateway-upstream", oidcprovider.PublicClient{RedirectURIs: []string{cb.URL + CallbackPath}, Resources: []string{recordsURL}})
	for _, who := range []string{"alice", "bob"} {
		p.AddPerson(oidcprovider.Person{Username: who, Password: riggedPassword})
	}
	return &signInRig{p: p, c: c, a: a, srv: srv}
}

// browser is a person's browser with its own cookies.
func (r *signInRig) browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: r.p.Client().Transport, Jar: jar}
}

// visited is where a browser ended and what it was shown.
type visited struct {
	status int
	at     *url.URL
	page   string
}

// login posts the provider's login form at page as who (consenting).
func login(t *testing.T, b *http.Client, page *url.URL, who string) visited {
	t.Helper()
	if page.Path != oidcprovider.LoginPath {
		t.Fatalf("not at the login page but at %s", page.Path)
	}
	resp, err := b.PostForm(page.String(), url.Values{oidcprovider.FormRequest: {page.Query().Get(oidcprovider.FormRequest)},
		oidcprovider.FormUser: {who}, oidcprovider.FormPassword: {riggedPassword}, oidcprovider.FormConsent: {"allow"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return visited{resp.StatusCode, resp.Request.URL, string(body)}
}

// open follows link in b to the sign-in's login page.
func open(t *testing.T, b *http.Client, link string) *url.URL {
	t.Helper()
	resp, err := b.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.Request.URL
}

func (r *signInRig) stored(t *testing.T, user string) bool {
	t.Helper()
	err := r.c.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: SecretName("records", user)}, &corev1.Secret{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// The attack of ADR 063, against a real OpenID Provider: alice's link,
// followed by bob who signs in as himself, stops at the sign-in (nothing
// goes to the authorization server, nothing is stored); the
// authorization server's page of alice's flow, finished in another
// browser, stores nothing. Alice, in her own browser, is authorized.
func TestConsentLinkIsTheLinkedPersonsOnly(t *testing.T) {
	r := newSignInRig(t)
	ctx := context.Background()
	link, err := r.a.ConsentURL(ctx, r.srv, Person{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}

	bob := r.browser(t)
	asked := r.p.Authorizations()
	v := login(t, bob, open(t, bob, link), "bob")
	if v.status != http.StatusForbidden || !strings.Contains(v.page, "another person") {
		t.Fatalf("bob signed in on alice's link: %d %s", v.status, v.page)
	}
	if n := r.p.Authorizations(); n != asked+1 {
		t.Fatalf("%d authorization requests after bob's sign-in, want only the sign-in's", n-asked)
	}
	if r.stored(t, "alice") || r.stored(t, "bob") {
		t.Fatal("something was stored")
	}

	alice := r.browser(t)
	v = login(t, alice, open(t, alice, link), "alice")
	if v.at.Path != oidcprovider.LoginPath || !strings.HasPrefix(v.at.String(), r.p.Issuer) {
		t.Fatalf("after alice's sign-in the browser is at %s, not the authorization server's login", v.at.Path)
	}
	v = login(t, r.browser(t), v.at, "bob")
	if v.status != http.StatusForbidden || r.stored(t, "alice") {
		t.Fatalf("the consent finished in another browser: %d %s", v.status, v.page)
	}

	alice = r.browser(t)
	v = login(t, alice, open(t, alice, link), "alice")
	v = login(t, alice, v.at, "alice")
	if v.status != http.StatusOK || !r.stored(t, "alice") {
		t.Fatalf("alice's own consent: %d %s", v.status, v.page)
	}
}
