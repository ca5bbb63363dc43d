package cli

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

func TestAuthorizationCommands(t *testing.T) {
	e := startCluster(t)
	ctx := context.Background()
	me, err := review.WhoAmI(ctx, e.c)
	if err != nil {
		t.Fatal(err)
	}
	const token = "tOkEn-VaLuE-never-printed"
	stored := func(server, user string) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: personauth.SecretName(server, user),
				Labels: map[string]string{personauth.LabelAuthorization: "true", personauth.LabelUserHash: personauth.UserHash(user),
					personauth.LabelServerHash: personauth.ServerHash(server)},
				Annotations: map[string]string{personauth.AnnotationServer: server, personauth.AnnotationUser: user,
					personauth.AnnotationState: personauth.StateAuthorized}},
			Data: map[string][]byte{"access-token": []byte(token)},
		}
		if err := e.c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	mine := stored("records", me)
	stored("records", "alice@example.com")

	code, out, errOut := e.run(t, "authorizations")
	if code != ExitOK || !strings.Contains(out, me) || strings.Contains(out, "alice@example.com") || strings.Contains(out+errOut, token) {
		t.Fatalf("authorizations: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = e.run(t, "authorizations", "--all-users")
	if code != ExitOK || !strings.Contains(out, "alice@example.com") || strings.Contains(out, token) {
		t.Fatalf("authorizations --all-users: %d\n%s", code, out)
	}

	// A Secret that merely has the name is not deleted.
	if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: personauth.SecretName("tickets", me)}}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = e.run(t, "revoke-authorization", "tickets")
	if code != ExitFailed || !strings.Contains(errOut, "left alone") {
		t.Fatalf("revoke of a Secret that is not an authorization: %d %s", code, errOut)
	}
	code, out, errOut = e.run(t, "revoke-authorization", "records")
	// The stored authorization names no authorization server: the Secret
	// goes, and the output says the tokens could not be revoked there.
	if code != ExitOK || !strings.Contains(out, "revoked; revoking at the authorization server failed") || strings.Contains(out+errOut, token) {
		t.Fatalf("revoke: %d %s%s", code, out, errOut)
	}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(mine), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the authorization is still there: %v", err)
	}
	code, _, errOut = e.run(t, "revoke-authorization", "records")
	if code != ExitFailed || !strings.Contains(errOut, "no stored authorization") {
		t.Fatalf("a second revoke: %d %s", code, errOut)
	}
}

// revoke-authorization revokes the person's tokens at the real
// authorization server (zitadel's provider, trusted through the server's
// spec.tls.caBundleRef) before deleting them, and says so; the refresh
// token, used afterwards, is refused. Nothing the command prints holds a
// token.
func TestRevokeAuthorizationRevokesUpstream(t *testing.T) {
	e := startCluster(t)
	ctx := context.Background()
	p := oidcprovider.Start(t)
	const person = "alice@example.com"
	if err := e.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "as-ca"}, Data: map[string]string{"ca.crt": p.CAPEM}}); err != nil {
		t.Fatal(err)
	}
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "records"}, Spec: mcpv1alpha1.McpServerSpec{
		URL: "https://records.example.com/mcp", DataClass: mcpv1alpha1.DataClassInternal, AllowPrivateNetwork: true,
		TLS: &mcpv1alpha1.TLSSettings{CABundleRef: &mcpv1alpha1.CABundleReference{ConfigMapKeyRef: &mcpv1alpha1.ConfigMapKeySelector{Name: "as-ca", Key: "ca.crt"}}},
		Auth: &mcpv1alpha1.McpServerAuth{PerPerson: &mcpv1alpha1.PerPersonAuth{
			ClientID: "gateway-public", AuthorizationServer: p.Issuer, Scopes: []string{"openid", "offline_access"}}},
	}}
	if err := e.c.Create(ctx, srv); err != nil {
		t.Fatal(err)
	}

	// The gateway's side: the person consents, the callback stores the
	// tokens in the cluster.
	var handler atomic.Value
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.Load().(http.Handler).ServeHTTP(w, r) }))
	t.Cleanup(cb.Close)
	// The browser signs in as the person first, at the same provider
	// here, named by its subject.
	none := ""
	a, err := personauth.New(personauth.Options{Client: e.c, Keys: approvals.StaticKeys{Current: []byte(strings.Repeat("k", 32))},
		CallbackURL: cb.URL + personauth.CallbackPath, Egress: egress.Policy{AllowAllPrivate: true},
		SignIn: &personauth.SignIn{ClientID: "gateway-signin", Issuer: oauthresource.Issuer{URL: p.Issuer, CertificateAuthority: p.CAPEM,
			ClaimMappings: oauthresource.ClaimMappings{Username: oauthresource.PrefixedClaim{Claim: "sub", Prefix: &none}}}}})
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(a.CallbackHandler())
	p.AddPublicClient("gateway-public", oidcprovider.PublicClient{RedirectURIs: []string{cb.URL + personauth.CallbackPath}, Resources: []string{srv.Spec.URL}})
	p.AddPublicClient("gateway-signin", oidcprovider.PublicClient{RedirectURIs: []string{cb.URL + personauth.CallbackPath}})
	p.AddPerson(oidcprovider.Person{Username: person, Password: oidcprovider.UserPassword})
	link, err := a.ConsentURL(ctx, srv, personauth.Person{User: person})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SignIn(ctx, link, person, oidcprovider.UserPassword); err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: personauth.SecretName("records", person)}, &s); err != nil {
		t.Fatal(err)
	}
	refresh, access := string(s.Data["refresh-token"]), string(s.Data["access-token"])
	if refresh == "" || access == "" {
		t.Fatal("no tokens stored")
	}

	code, out, errOut := e.run(t, "revoke-authorization", "records", "--person", person)
	if code != ExitOK || !strings.Contains(out, "revoked; revoked at the authorization server too") {
		t.Fatalf("revoke: %d %s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, refresh) || strings.Contains(out+errOut, access) {
		t.Fatal("the command printed a token")
	}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(&s), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the authorization is still stored: %v", err)
	}
	// The attack: the refresh token someone copied before the revoke.
	cfg := oauth2.Config{ClientID: "gateway-public", Endpoint: oauth2.Endpoint{TokenURL: p.Issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	_, err = cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, p.Client()), &oauth2.Token{RefreshToken: refresh, Expiry: time.Now().Add(-time.Hour)}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("the revoked refresh token, used: %v; want invalid_grant", err)
	}
}
