package personauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"golang.org/x/oauth2"
)

func perPersonServer() *mcpv1alpha1.McpServer {
	return &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "records", UID: "uid-1"},
		Spec: mcpv1alpha1.McpServerSpec{URL: "https://records.example.com/mcp", Auth: &mcpv1alpha1.McpServerAuth{
			PerPerson: &mcpv1alpha1.PerPersonAuth{ClientID: "gw", AuthorizationServer: "https://as.example.com"},
		}},
	}
}

func testAuthorizer(t *testing.T, now time.Time, objs ...client.Object) (*Authorizer, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	a, err := New(Options{Client: c, Keys: approvals.StaticKeys{Current: keyA}, CallbackURL: "https://gw.example.com" + CallbackPath, Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

func visit(a *Authorizer, q url.Values) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	inTestBrowser(a.CallbackHandler()).ServeHTTP(w, httptest.NewRequest(http.MethodGet, CallbackPath+"?"+q.Encode(), nil))
	return w
}

// The test browser's flow and cookie: the states of these tests name
// them, as a state made after the browser signed in does.
const (
	testFlow   = "flow-1"
	testCookie = "cookie-of-the-browser-that-signed-in"
)

// inTestBrowser is h reached by the browser that followed the test
// states' link.
func inTestBrowser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.AddCookie(&http.Cookie{Name: cookiePrefix + testFlow, Value: testCookie})
		h.ServeHTTP(w, r)
	})
}

// upstreamURL is the authorization server's link a browser that signed in
// as user is sent to: what the sign-in step (signin.go) redirects to.
func upstreamURL(ctx context.Context, a *Authorizer, srv *mcpv1alpha1.McpServer, user string) (string, error) {
	ep, err := a.endpointFor(ctx, srv)
	if err != nil {
		return "", err
	}
	st := state{Kind: kindUpstream, Namespace: srv.Namespace, Server: srv.Name, ServerUID: string(srv.UID), User: user,
		Issuer: ep.issuer, ClientID: ep.cfg.ClientID, Nonce: newNonce(), Expires: a.now().Add(a.StateTTL).Unix(),
		Flow: testFlow, Browser: browserHash(testCookie)}
	token, verifier, err := a.signer.sign(ctx, st)
	if err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if srv.Spec.URL != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", srv.Spec.URL))
	}
	return ep.cfg.AuthCodeURL(token, opts...), nil
}

// The callback stores nothing for a state it did not sign, for a server
// that changed since the link was made, or for an answer of another
// authorization server; a refusal is stored as such, without tokens.
func TestCallback(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	st := testState(now)
	valid, _, err := signer{keys: approvals.StaticKeys{Current: keyA}}.sign(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	linkState := st
	linkState.Kind = kindLink
	link, _, err := signer{keys: approvals.StaticKeys{Current: keyA}}.sign(ctx, linkState)
	if err != nil {
		t.Fatal(err)
	}
	recreated := perPersonServer()
	recreated.UID = "uid-2"
	otherClient := perPersonServer()
	otherClient.Spec.Auth.PerPerson.ClientID = "another"
	for name, c := range map[string]struct {
		srv    *mcpv1alpha1.McpServer
		q      url.Values
		status int
		stored string
	}{
		"a forged state":                 {perPersonServer(), url.Values{"state": {"x.y"}, "code": {"c"}}, http.StatusBadRequest, ""},
		"a link's state as an answer":    {perPersonServer(), url.Values{"state": {link}, "error": {"access_denied"}}, http.StatusBadRequest, ""},
		"an answer's state as a link":    {perPersonServer(), url.Values{LinkParam: {valid}}, http.StatusBadRequest, ""},
		"a server deleted and recreated": {recreated, url.Values{"state": {valid}, "code": {"c"}}, http.StatusBadRequest, ""},
		"a server with another client":   {otherClient, url.Values{"state": {valid}, "code": {"c"}}, http.StatusBadRequest, ""},
		"another authorization server":   {perPersonServer(), url.Values{"state": {valid}, "code": {"c"}, "iss": {"https://evil.example.com"}}, http.StatusBadRequest, ""},
		"an error other than refusal":    {perPersonServer(), url.Values{"state": {valid}, "error": {"server_error"}, "error_description": {"secret-ish text"}}, http.StatusBadGateway, ""},
		"no code":                        {perPersonServer(), url.Values{"state": {valid}}, http.StatusBadRequest, ""},
		"consent refused":                {perPersonServer(), url.Values{"state": {valid}, "error": {"access_denied"}}, http.StatusOK, StateRefused},
	} {
		t.Run(name, func(t *testing.T) {
			a, cl := testAuthorizer(t, now, c.srv)
			w := visit(a, c.q)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			var s corev1.Secret
			err := cl.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: SecretName("records", st.User)}, &s)
			switch {
			case c.stored == "" && err == nil:
				t.Fatalf("a Secret was stored")
			case c.stored != "" && err != nil:
				t.Fatalf("nothing stored: %v", err)
			case c.stored != "":
				if s.Annotations[AnnotationState] != c.stored || len(s.Data[keyAccessToken]) != 0 || s.Labels[mcpv1alpha1.LabelCredential] != "" {
					t.Fatalf("stored %v with data keys %d", s.Annotations, len(s.Data))
				}
				if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "uid-1" {
					t.Fatalf("the Secret is not owned by the server: %v", s.OwnerReferences)
				}
			}
			if got := w.Body.String(); contains(got, "secret-ish", valid) {
				t.Fatalf("the page repeats the request: %s", got)
			}
		})
	}
	t.Run("POST", func(t *testing.T) {
		a, _ := testAuthorizer(t, now, perPersonServer())
		w := httptest.NewRecorder()
		a.CallbackHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, CallbackPath, nil))
		if w.Code != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", w.Code)
		}
	})
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if x != "" && strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// Token reads only the Secret the gateway wrote for this very server and
// person: a Secret of another person's, renamed or copied under this
// person's name, is not used, and a refusal or a revoked refresh token
// is a *ConsentError saying so.
func TestTokenUsesOnlyThePersonsOwn(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	srv := perPersonServer()
	stored := func(user, annotatedUser, state string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: SecretName("records", user),
				Labels:      map[string]string{LabelAuthorization: "true"},
				Annotations: map[string]string{AnnotationUser: annotatedUser, AnnotationServer: "records", AnnotationState: state}},
			Data: map[string][]byte{keyAccessToken: []byte("tok-of-" + annotatedUser), keyTokenType: []byte("Bearer"),
				keyIssuer: []byte("https://as.example.com"), keyClientID: []byte("gw"), keyExpiry: []byte(now.Add(time.Hour).Format(time.RFC3339))},
		}
	}
	for name, c := range map[string]struct {
		secret *corev1.Secret
		reason string
	}{
		"none":                           {nil, ReasonNotAuthorized},
		"alice's token under bob's name": {stored("bob", "alice", StateAuthorized), ReasonNotAuthorized},
		"refused":                        {stored("bob", "bob", StateRefused), ReasonConsentRefused},
		"revoked":                        {stored("bob", "bob", StateRevoked), ReasonRefreshRevoked},
		"another client's token": {func() *corev1.Secret {
			s := stored("bob", "bob", StateAuthorized)
			s.Data[keyClientID] = []byte("old")
			return s
		}(), ReasonNotAuthorized},
		"expired without a refresh token": {func() *corev1.Secret {
			s := stored("bob", "bob", StateAuthorized)
			s.Data[keyExpiry] = []byte(now.Format(time.RFC3339))
			return s
		}(), ReasonExpired},
	} {
		t.Run(name, func(t *testing.T) {
			var objs []client.Object
			if c.secret != nil {
				objs = append(objs, c.secret)
			}
			a, _ := testAuthorizer(t, now, objs...)
			cred, err := a.Token(ctx, srv, Person{User: "bob"})
			var ce *ConsentError
			if !errors.As(err, &ce) || ce.Reason != c.reason {
				t.Fatalf("Token = %v, %v; want a ConsentError %s", cred, err, c.reason)
			}
		})
	}
	a, _ := testAuthorizer(t, now, stored("bob", "bob", StateAuthorized))
	cred, err := a.Token(ctx, srv, Person{User: "bob"})
	if err != nil || cred.Value.Reveal() != "tok-of-bob" {
		t.Fatalf("bob's own token: %v", err)
	}
}

// A usable token is read from the API server once per TokenTTL, and the
// kept copy is never another person's.
func TestTokenIsKeptBrieflyAndPerPerson(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	clk := clocktesting.NewFakePassiveClock(now)
	secretFor := func(user string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: SecretName("records", user),
				Labels:      map[string]string{LabelAuthorization: "true"},
				Annotations: map[string]string{AnnotationUser: user, AnnotationServer: "records", AnnotationState: StateAuthorized}},
			Data: map[string][]byte{keyAccessToken: []byte("tok-of-" + user), keyIssuer: []byte("https://as.example.com"), keyClientID: []byte("gw")},
		}
	}
	reads := 0
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(secretFor("alice")).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	a, err := New(Options{Client: c, Keys: approvals.StaticKeys{Current: keyA}, CallbackURL: "https://gw.example.com" + CallbackPath, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := perPersonServer()
	for range 3 {
		if cred, err := a.Token(ctx, srv, Person{User: "alice"}); err != nil || cred.Value.Reveal() != "tok-of-alice" {
			t.Fatalf("alice: %v", err)
		}
	}
	if reads != 1 {
		t.Fatalf("%d reads within TokenTTL, want 1", reads)
	}
	var ce *ConsentError
	if _, err := a.Token(ctx, srv, Person{User: "bob"}); !errors.As(err, &ce) {
		t.Fatalf("bob got %v, want a ConsentError", err)
	}
	clk.SetTime(now.Add(TokenTTL))
	if _, err := a.Token(ctx, srv, Person{User: "alice"}); err != nil || reads != 3 {
		t.Fatalf("after TokenTTL: %v, %d reads", err, reads)
	}
}

// Without a sign-in client no consent link is handed out, and a
// ServiceAccount, which signs in nowhere, gets none either: each is a
// SetupError naming what is missing.
func TestNoLinkWithoutSignIn(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	a, _ := testAuthorizer(t, now, perPersonServer())
	var setup *SetupError
	if _, err := a.ConsentURL(ctx, perPersonServer(), Person{User: "alice@example.com"}); !errors.As(err, &setup) || !strings.Contains(err.Error(), SignInFlag) {
		t.Fatalf("without a sign-in client: %v", err)
	}
	a.SignIn = &SignIn{ClientID: "gw-signin"}
	if _, err := a.ConsentURL(ctx, perPersonServer(), Person{User: "system:serviceaccount:team-a:agent"}); !errors.As(err, &setup) {
		t.Fatalf("for a ServiceAccount: %v", err)
	}
}

// A step of the flow reached by another browser than the one that
// followed the link (no cookie, or another one) stores nothing.
func TestCallbackRefusesAnotherBrowser(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	st := testState(now)
	valid, _, err := signer{keys: approvals.StaticKeys{Current: keyA}}.sign(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for name, cookie := range map[string]*http.Cookie{
		"no cookie":      nil,
		"another cookie": {Name: cookiePrefix + testFlow, Value: "another-browser"},
	} {
		t.Run(name, func(t *testing.T) {
			a, cl := testAuthorizer(t, now, perPersonServer())
			req := httptest.NewRequest(http.MethodGet, CallbackPath+"?"+url.Values{"state": {valid}, "error": {"access_denied"}}.Encode(), nil)
			if cookie != nil {
				req.AddCookie(cookie)
			}
			w := httptest.NewRecorder()
			a.CallbackHandler().ServeHTTP(w, req)
			if w.Code != http.StatusForbidden {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if err := cl.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: SecretName("records", st.User)}, &corev1.Secret{}); err == nil {
				t.Fatal("a Secret was stored")
			}
		})
	}
}
