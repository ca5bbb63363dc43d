package personauth

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

const recordsURL = "https://records.example.com/mcp"

// authorizedAt runs the whole consent flow against the real provider p for
// alice: the gateway's link, the person's browser signing in, the
// gateway's callback storing her tokens. It returns the fake API server
// and the stored Secret.
func authorizedAt(t *testing.T, p *oidcprovider.Provider, pp *mcpv1alpha1.PerPersonAuth, objs ...client.Object) (client.Client, *x509.CertPool, *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	srv := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "records", UID: "uid-1"},
		Spec: mcpv1alpha1.McpServerSpec{URL: recordsURL, AllowPrivateNetwork: true,
			Auth: &mcpv1alpha1.McpServerAuth{PerPerson: pp}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(append(objs, srv)...).Build()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(p.CAPEM))
	var handler atomic.Value
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.Load().(http.Handler).ServeHTTP(w, r) }))
	t.Cleanup(cb.Close)
	a, err := New(Options{Client: c, Keys: approvals.StaticKeys{Current: keyA}, CallbackURL: cb.URL + CallbackPath,
		Egress: egress.Policy{AllowAllPrivate: true}, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(inTestBrowser(a.CallbackHandler()))
	if pp.ClientSecretRef != nil {
		p.AddCodeClient(pp.ClientID, "client-s3cret-value", cb.URL+CallbackPath)
	} else {
		p.AddPublicClient(pp.ClientID, oidcprovider.PublicClient{RedirectURIs: []string{cb.URL + CallbackPath}, Resources: []string{recordsURL}})
	}
	link, err := upstreamURL(ctx, a, srv, "alice")
	if err != nil {
		t.Fatalf("upstreamURL: %v", err)
	}
	if err := p.SignIn(ctx, link, p.FirstUser(), oidcprovider.UserPassword); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: SecretName("records", "alice")}, &s); err != nil {
		t.Fatalf("nothing stored: %v", err)
	}
	if len(s.Data[keyRefreshToken]) == 0 || len(s.Data[keyAccessToken]) == 0 {
		t.Fatalf("no refresh or access token stored: %v", s.Annotations)
	}
	// What a person is shown of it, without its tokens.
	if s.Annotations[AnnotationGranted] == "" || !strings.Contains(s.Annotations[AnnotationScopes], "offline_access") || s.Annotations[AnnotationExpires] == "" {
		t.Fatalf("the authorization's metadata: %v", s.Annotations)
	}
	return c, roots, &s
}

// refreshWith uses refresh at p's token endpoint as the client did.
func refreshWith(p *oidcprovider.Provider, clientID, secret, refresh string) error {
	cfg := oauth2.Config{ClientID: clientID, ClientSecret: secret, Endpoint: oauth2.Endpoint{TokenURL: p.Issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	if secret != "" {
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, p.Client())
	_, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: refresh, Expiry: time.Now().Add(-time.Hour)}).Token()
	return err
}

// Revoking a person's authorization revokes their tokens at the real
// provider's revocation endpoint, with the client authentication their
// flow used (a confidential client's HTTP Basic, a public client's
// client_id), then deletes the Secret. The attack: the refresh token the
// Secret held, used afterwards, is refused with invalid_grant.
func TestRevokeRevokesAtTheAuthorizationServer(t *testing.T) {
	p := oidcprovider.Start(t)
	clientSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "client", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
		Data:       map[string][]byte{"v": []byte("client-s3cret-value")},
	}
	for name, c := range map[string]struct {
		pp     *mcpv1alpha1.PerPersonAuth
		secret string
		objs   []client.Object
	}{
		"a confidential client": {&mcpv1alpha1.PerPersonAuth{ClientID: "gw-confidential", ClientSecretRef: &mcpv1alpha1.SecretKeySelector{Name: "client", Key: "v"},
			AuthorizationServer: p.Issuer, Scopes: []string{"openid", "offline_access"}}, "client-s3cret-value", []client.Object{clientSecret}},
		"a public client": {&mcpv1alpha1.PerPersonAuth{ClientID: "gw-public", AuthorizationServer: p.Issuer, Scopes: []string{"openid", "offline_access"}}, "", nil},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cl, roots, s := authorizedAt(t, p, c.pp, c.objs...)
			refresh, access := string(s.Data[keyRefreshToken]), string(s.Data[keyAccessToken])

			out, err := (&Revoker{Client: cl, RootCAs: roots, Egress: egress.Policy{AllowAllPrivate: true}}).Revoke(ctx, "team-a", "records", "alice")
			if err != nil || out.Upstream != UpstreamRevoked {
				t.Fatalf("Revoke = %+v, %v; want revoked upstream", out, err)
			}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the Secret is still there: %v", err)
			}
			var re *oauth2.RetrieveError
			if err := refreshWith(p, c.pp.ClientID, c.secret, refresh); !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
				t.Fatalf("the revoked refresh token, used: %v; want invalid_grant", err)
			}
			if contains(out.Words()+out.Reason, refresh, access) {
				t.Fatal("the outcome repeats a token")
			}
		})
	}
}

// metaServer is an authorization server's metadata, with revocation
// answering status, or no revocation endpoint when status is 0.
func metaServer(t *testing.T, status int) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			meta := map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
				"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}}
			if status != 0 {
				meta["revocation_endpoint"] = srv.URL + "/revoke"
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(meta)
		case "/revoke":
			_ = r.ParseForm()
			// A careless server that repeats what it was sent.
			http.Error(w, `{"error":"weird","error_description":"`+r.PostForm.Get("token")+`"}`, status)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots
}

// The revocation authenticates as the client the tokens were issued to:
// the gateway's registered client with its secret (HTTP Basic), or, when
// the spec has moved to another client since, the recorded one without a
// secret, which the endpoint refuses (and the Secret goes all the same).
func TestRevokeAuthenticatesAsTheTokensClient(t *testing.T) {
	ctx := context.Background()
	var srv *httptest.Server
	var asked atomic.Int32
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
				"revocation_endpoint": srv.URL + "/revoke", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}})
		case "/revoke":
			asked.Add(1)
			id, secret, ok := r.BasicAuth()
			_ = r.ParseForm()
			if !ok || id != "reg-1" || secret != "reg-s3cret-1" || r.PostForm.Get("token") == "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
				return
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	server := registeringServer(srv.URL)
	registered := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: ClientSecretName("records"),
			Labels: map[string]string{LabelClient: "true"}, Annotations: map[string]string{AnnotationServer: "records"}},
		Data: map[string][]byte{keyClientID: []byte("reg-1"), keyClientSecret: []byte("reg-s3cret-1")},
	}
	stored := func(clientID string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: SecretName("records", "alice"),
				Labels:      map[string]string{LabelAuthorization: "true"},
				Annotations: map[string]string{AnnotationUser: "alice", AnnotationServer: "records", AnnotationState: StateAuthorized}},
			Data: map[string][]byte{keyAccessToken: []byte("a"), keyRefreshToken: []byte("r"), keyIssuer: []byte(srv.URL), keyClientID: []byte(clientID)},
		}
	}
	for name, c := range map[string]struct {
		clientID, upstream, reason string
		calls                      int32
	}{
		"the registered client":           {"reg-1", UpstreamRevoked, "", 2},
		"a client the spec no longer has": {"old-client", UpstreamFailed, "invalid_client", 1},
	} {
		t.Run(name, func(t *testing.T) {
			asked.Store(0)
			cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(server.DeepCopy(), registered.DeepCopy(), stored(c.clientID)).Build()
			out, err := (&Revoker{Client: cl, RootCAs: roots, Egress: egress.Policy{AllowAllPrivate: true}}).Revoke(ctx, "team-a", "records", "alice")
			if err != nil || out.Upstream != c.upstream || !strings.Contains(out.Reason, c.reason) || asked.Load() != c.calls {
				t.Fatalf("Revoke = %+v, %v after %d requests; want %s %q after %d", out, err, asked.Load(), c.upstream, c.reason, c.calls)
			}
			if err := cl.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: SecretName("records", "alice")}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the Secret is still there: %v", err)
			}
		})
	}
}

// An attack: a namespace admin points the server at an authorization
// server of theirs after the person authorized it. Revoking sends the
// person's tokens to the issuer recorded with them, and the admin's server
// sees no request.
func TestRevokeSendsTokensOnlyWhereTheyCameFrom(t *testing.T) {
	ctx := context.Background()
	counting := func(received *atomic.Int32) *httptest.Server {
		var srv *httptest.Server
		srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			received.Add(1)
			if r.URL.Path == "/.well-known/oauth-authorization-server" {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
					"revocation_endpoint": srv.URL + "/revoke", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}})
			}
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var atIssuer, atAdmins atomic.Int32
	issuer, admins := counting(&atIssuer), counting(&atAdmins)
	roots := x509.NewCertPool()
	roots.AddCert(issuer.Certificate())
	roots.AddCert(admins.Certificate())
	server := perPersonServer()
	server.Spec.AllowPrivateNetwork = true
	server.Spec.Auth.PerPerson.AuthorizationServer = admins.URL
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: SecretName("records", "alice"),
			Labels:      map[string]string{LabelAuthorization: "true"},
			Annotations: map[string]string{AnnotationUser: "alice", AnnotationServer: "records", AnnotationState: StateAuthorized}},
		Data: map[string][]byte{keyAccessToken: []byte("a"), keyRefreshToken: []byte("r"), keyIssuer: []byte(issuer.URL), keyClientID: []byte("gw")},
	}
	cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(server, s).Build()
	out, err := (&Revoker{Client: cl, RootCAs: roots, Egress: egress.Policy{AllowAllPrivate: true}}).Revoke(ctx, "team-a", "records", "alice")
	if err != nil || out.Upstream != UpstreamRevoked {
		t.Fatalf("Revoke = %+v, %v", out, err)
	}
	if atAdmins.Load() != 0 || atIssuer.Load() != 3 {
		t.Fatalf("requests: %d at the admin's server, %d at the tokens' issuer (want 0 and metadata plus two revocations)", atAdmins.Load(), atIssuer.Load())
	}
}

// Whatever the authorization server answers, the Secret is deleted and
// the outcome says what happened without a token; a Secret that merely
// has the name is left alone; a person who may not read it is refused by
// the API server, and nothing is deleted.
func TestRevokeDeletesWhateverTheServerAnswers(t *testing.T) {
	ctx := context.Background()
	const refresh, access = "refresh-VALUE-never-shown", "access-VALUE-never-shown"
	stored := func(issuer string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: SecretName("records", "alice"),
				Labels:      map[string]string{LabelAuthorization: "true"},
				Annotations: map[string]string{AnnotationUser: "alice", AnnotationServer: "records", AnnotationState: StateAuthorized}},
			Data: map[string][]byte{keyAccessToken: []byte(access), keyRefreshToken: []byte(refresh), keyIssuer: []byte(issuer), keyClientID: []byte("gw")},
		}
	}
	srvOf := func(issuer string) *mcpv1alpha1.McpServer {
		s := perPersonServer()
		s.Spec.AllowPrivateNetwork = true
		s.Spec.Auth.PerPerson.AuthorizationServer = issuer
		return s
	}
	for name, c := range map[string]struct {
		status   int
		upstream string
		reason   string
	}{
		"no revocation endpoint":       {0, UpstreamNoEndpoint, ""},
		"the endpoint is unavailable":  {http.StatusServiceUnavailable, UpstreamFailed, "HTTP 503"},
		"the endpoint refuses the ask": {http.StatusBadRequest, UpstreamFailed, "HTTP 400"},
	} {
		t.Run(name, func(t *testing.T) {
			as, roots := metaServer(t, c.status)
			cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(srvOf(as.URL), stored(as.URL)).Build()
			out, err := (&Revoker{Client: cl, RootCAs: roots, Egress: egress.Policy{AllowAllPrivate: true}}).Revoke(ctx, "team-a", "records", "alice")
			if err != nil || out.Upstream != c.upstream || !strings.Contains(out.Reason, c.reason) {
				t.Fatalf("Revoke = %+v, %v; want %s %q", out, err, c.upstream, c.reason)
			}
			if err := cl.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: SecretName("records", "alice")}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the Secret is still there: %v", err)
			}
			if contains(out.Words()+out.Reason, refresh, access) {
				t.Fatalf("the outcome repeats a token: %s", out.Words())
			}
		})
	}

	t.Run("private address refused by the egress policy", func(t *testing.T) {
		as, roots := metaServer(t, http.StatusOK)
		cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(srvOf(as.URL), stored(as.URL)).Build()
		out, err := (&Revoker{Client: cl, RootCAs: roots}).Revoke(ctx, "team-a", "records", "alice")
		if err != nil || out.Upstream != UpstreamFailed {
			t.Fatalf("Revoke = %+v, %v; want a failure", out, err)
		}
	})

	t.Run("a Secret that merely has the name", func(t *testing.T) {
		s := stored("https://as.example.com")
		s.Annotations[AnnotationUser] = "bob"
		cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(perPersonServer(), s).Build()
		_, err := (&Revoker{Client: cl}).Revoke(ctx, "team-a", "records", "alice")
		var na *NotAnAuthorizationError
		if !errors.As(err, &na) {
			t.Fatalf("err = %v, want NotAnAuthorizationError", err)
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}); err != nil {
			t.Fatalf("the Secret was not left alone: %v", err)
		}
	})

	t.Run("may not read", func(t *testing.T) {
		cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(perPersonServer(), stored("https://as.example.com")).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, secret := obj.(*corev1.Secret); secret {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("RBAC"))
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
		if _, err := (&Revoker{Client: cl}).Revoke(ctx, "team-a", "records", "alice"); !apierrors.IsForbidden(err) {
			t.Fatalf("err = %v, want the API server's refusal", err)
		}
	})

	t.Run("none stored", func(t *testing.T) {
		cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(perPersonServer()).Build()
		_, err := (&Revoker{Client: cl}).Revoke(ctx, "team-a", "records", "alice")
		var ns *NotStoredError
		if !errors.As(err, &ns) {
			t.Fatalf("err = %v, want NotStoredError", err)
		}
	})
}
