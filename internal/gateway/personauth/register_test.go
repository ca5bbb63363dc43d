package personauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
)

// registrar is an authorization server's metadata and RFC 7591
// registration endpoint, counting the clients it registers.
type registrar struct {
	*httptest.Server
	registered atomic.Int32
	redirects  atomic.Value
	noDCR      bool
}

func startRegistrar(t *testing.T, noDCR bool) *registrar {
	r := &registrar{noDCR: noDCR}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/.well-known/oauth-authorization-server":
			meta := map[string]any{
				"issuer": r.URL, "authorization_endpoint": r.URL + "/authorize", "token_endpoint": r.URL + "/token",
				"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"},
			}
			if !r.noDCR {
				meta["registration_endpoint"] = r.URL + "/register"
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(meta)
		case "/register":
			var body struct {
				RedirectURIs []string `json:"redirect_uris"`
				GrantTypes   []string `json:"grant_types"`
			}
			if req.Method != http.MethodPost || json.NewDecoder(req.Body).Decode(&body) != nil {
				http.Error(w, "bad", http.StatusBadRequest)
				return
			}
			n := r.registered.Add(1)
			r.redirects.Store(body.RedirectURIs)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]any{"client_id": fmt.Sprintf("reg-%d", n), "client_secret": fmt.Sprintf("reg-s3cret-%d", n),
				"redirect_uris": body.RedirectURIs, "grant_types": body.GrantTypes})
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func registeringServer(issuer string) *mcpv1alpha1.McpServer {
	return &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "records", UID: "uid-1"},
		Spec: mcpv1alpha1.McpServerSpec{URL: "https://records.example.com/mcp", AllowPrivateNetwork: true, Auth: &mcpv1alpha1.McpServerAuth{
			PerPerson: &mcpv1alpha1.PerPersonAuth{AuthorizationServer: issuer, Scopes: []string{"records.read"}},
		}},
	}
}

func replica(t *testing.T, c client.Client, callback string) *Authorizer {
	t.Helper()
	a, err := New(Options{Client: c, Keys: approvals.StaticKeys{Current: keyA}, CallbackURL: callback,
		Egress: egress.Policy{AllowAllPrivate: true}, Clock: clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func clientIDOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("client_id")
}

// Without a clientID the gateway registers a client once per server and
// every replica uses it; a new callback URL registers again.
func TestDynamicClientRegistration(t *testing.T) {
	ctx := context.Background()
	as := startRegistrar(t, false)
	srv := registeringServer(as.URL)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(srv).Build()
	const callback = "https://gw.example.com" + CallbackPath

	link, err := upstreamURL(ctx, replica(t, c, callback), srv, "alice")
	if err != nil {
		t.Fatalf("upstreamURL: %v", err)
	}
	if got := clientIDOf(t, link); got != "reg-1" || as.registered.Load() != 1 {
		t.Fatalf("client_id %q after %d registrations", got, as.registered.Load())
	}
	if got := as.redirects.Load().([]string); len(got) != 1 || got[0] != callback {
		t.Fatalf("registered redirect URIs %v", got)
	}
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: ClientSecretName("records")}, &s); err != nil {
		t.Fatalf("the registered client is not kept: %v", err)
	}
	if s.Labels[LabelClient] != "true" || s.Labels[mcpv1alpha1.LabelCredential] != "" || len(s.OwnerReferences) != 1 || string(s.Data[keyClientSecret]) != "reg-s3cret-1" {
		t.Fatalf("the client's Secret: labels %v, owners %v", s.Labels, s.OwnerReferences)
	}

	// Another replica, with nothing in memory, uses the same client.
	link, err = upstreamURL(ctx, replica(t, c, callback), srv, "bob")
	if err != nil || clientIDOf(t, link) != "reg-1" || as.registered.Load() != 1 {
		t.Fatalf("second replica: %v, %d registrations", err, as.registered.Load())
	}

	// A gateway reached at another callback URL registers a client for it.
	link, err = upstreamURL(ctx, replica(t, c, "https://gateway.example.org"+CallbackPath), srv, "alice")
	if err != nil || clientIDOf(t, link) != "reg-2" || as.registered.Load() != 2 {
		t.Fatalf("new callback URL: %v, %d registrations", err, as.registered.Load())
	}
}

func TestNoRegistrationEndpointIsAClearAnswer(t *testing.T) {
	as := startRegistrar(t, true)
	srv := registeringServer(as.URL)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(srv).Build()
	_, err := upstreamURL(context.Background(), replica(t, c, "https://gw.example.com"+CallbackPath), srv, "alice")
	var de *DiscoveryError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "set spec.auth.perPerson.clientID") {
		t.Fatalf("err = %v, want a DiscoveryError naming clientID", err)
	}
}
