package authn_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/modelcontextprotocol/go-sdk/auth"
	testingclock "k8s.io/utils/clock/testing"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

// The gateway's resource in these tests, and team-a's and team-b's
// endpoints as resources of their own.
const (
	resource = "https://gateway.example.test/mcp"
	teamA    = "https://gateway.example.test/namespaces/team-a/mcp"
	teamB    = "https://gateway.example.test/namespaces/team-b/mcp"
)

func TestNamespacedResourceInsertsTheNamespaceBeforeTheEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://gateway.example.test/mcp":      teamA,
		"https://gateway.example.test/gw/mcp":   "https://gateway.example.test/gw/namespaces/team-a/mcp",
		"https://gateway.example.test:8444/mcp": "https://gateway.example.test:8444/namespaces/team-a/mcp",
	} {
		if got := authn.NamespacedResource(in, "team-a"); got != want {
			t.Errorf("NamespacedResource(%q) = %q, want %q", in, got, want)
		}
	}
}

// logBuffer collects every log line of the identify stage and the
// validator.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// saAuthenticator stands for TokenReview: it accepts the one
// ServiceAccount token it was given, for namespace team-a, and counts
// the tokens it was asked about.
type saAuthenticator struct {
	token string
	mu    sync.Mutex
	asked int
}

func (a *saAuthenticator) Authenticate(_ context.Context, token string) (*authn.Identity, error) {
	a.mu.Lock()
	a.asked++
	a.mu.Unlock()
	if token != a.token {
		return nil, authn.ErrUnauthenticated
	}
	return &authn.Identity{Username: "system:serviceaccount:team-a:bot", UID: "u-bot", Namespace: "team-a", ServiceAccount: "bot"}, nil
}

// serviceAccountToken has the shape of a ServiceAccount token (unsigned:
// only the fake authenticator looks at it).
func serviceAccountToken(name string) string {
	seg := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(map[string]any{"alg": "RS256"}) + "." + seg(map[string]any{"sub": "system:serviceaccount:team-a:" + name, "aud": []string{"mcp-catalog-gateway"}, "exp": time.Now().Add(time.Hour).Unix()}) + ".c2ln"
}

// stage is an identify stage in front of a handler that answers with the
// identity it was given, mounted as the gateway mounts it.
type stage struct {
	srv   *httptest.Server
	id    *authn.Identifier
	sa    *saAuthenticator
	logs  *logBuffer
	clock *testingclock.FakeClock
}

func newStage(t *testing.T, issuers ...*oidcprovider.Provider) *stage {
	t.Helper()
	s := &stage{logs: &logBuffer{}, clock: testingclock.NewFakeClock(time.Now()), sa: &saAuthenticator{token: serviceAccountToken("bot")}}
	groups := "oidc:"
	o := oauthresource.DefaultOptions()
	o.Resource, o.Scopes, o.Clock, o.Log = resource, []string{"mcp.tools"}, s.clock, s.logs.logger()
	for _, p := range issuers {
		o.Issuers = append(o.Issuers, oauthresource.Issuer{
			URL: p.Issuer, CertificateAuthority: p.CAPEM,
			ClaimMappings: oauthresource.ClaimMappings{
				Username: oauthresource.PrefixedClaim{Claim: "email"},
				Groups:   oauthresource.PrefixedClaim{Claim: "groups", Prefix: &groups},
			},
		})
	}
	v, err := oauthresource.New(o)
	if err != nil {
		t.Fatal(err)
	}
	s.id = authn.NewIdentifier(s.sa, v, 0, 0, nil)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(authn.IdentityOf(auth.TokenInfoFromContext(r.Context())))
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.id.Handler(echo))
	mux.Handle("/namespaces/{namespace}/mcp", s.id.Handler(echo))
	for _, p := range s.id.MetadataPatterns() {
		mux.Handle(p, s.id.MetadataHandler())
	}
	logger := s.logs.logger()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(logf.IntoContext(r.Context(), logger)))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// answer is one response, read whole.
type answer struct {
	code      int
	challenge string
	retry     string
	body      string
	identity  *authn.Identity
}

func (s *stage) get(t *testing.T, path, token string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), retry: resp.Header.Get("Retry-After"), body: string(body)}
	if a.code == http.StatusOK && strings.HasPrefix(path, "/namespaces/") || a.code == http.StatusOK && path == "/mcp" {
		a.identity = &authn.Identity{}
		if err := json.Unmarshal(body, a.identity); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
	return a
}

// people adds the provider's clients: alice's agent for team-a's and
// team-b's endpoints and for the gateway's base resource, and tokens
// minted for something else.
func people(p *oidcprovider.Provider) *oidcprovider.Provider {
	alice := map[string]any{"email": "alice@example.test", "email_verified": true, "groups": []string{"support"}}
	for id, aud := range map[string]string{"alice-a": teamA, "alice-b": teamB, "alice-base": resource, "alice-cli": "cli", "alice-elsewhere": "https://other.example.test/mcp"} {
		p.AddClient(id, oidcprovider.Client{Secret: id + "-s3cret", Subject: "alice", Audience: []string{aud}, Claims: alice})
	}
	return p
}

func TestAPersonsTokenIsAnIdentityForTheNamespaceItsEndpointNames(t *testing.T) {
	p := people(oidcprovider.Start(t))
	s := newStage(t, p)

	a := s.get(t, "/namespaces/team-a/mcp", p.Mint(t, "alice-a"))
	if a.code != http.StatusOK {
		t.Fatalf("status %d: %s", a.code, a.body)
	}
	id := a.identity
	if id.Username != "alice@example.test" || id.UID != "alice" || !slices.Equal(id.Groups, []string{"oidc:support"}) ||
		id.Namespace != "team-a" || id.ServiceAccount != "" || id.Issuer != p.Issuer ||
		!slices.Equal(id.Extra[oauthresource.ExtraIssuer], []string{p.Issuer}) {
		t.Errorf("identity: %+v", id)
	}
	if id.Key() != "team-a/user:alice@example.test" {
		t.Errorf("budget key %q", id.Key())
	}
	if s.sa.asked != 0 {
		t.Errorf("an access token was sent to TokenReview %d times", s.sa.asked)
	}

	// A ServiceAccount token still goes to TokenReview, at /mcp and at its
	// own namespace's endpoint, never at another's.
	for path, want := range map[string]int{"/mcp": http.StatusOK, "/namespaces/team-a/mcp": http.StatusOK, "/namespaces/team-b/mcp": http.StatusForbidden} {
		if a := s.get(t, path, s.sa.token); a.code != want {
			t.Errorf("ServiceAccount at %s: %d (%s), want %d", path, a.code, a.body, want)
		} else if want == http.StatusOK && a.identity.ServiceAccount != "bot" {
			t.Errorf("ServiceAccount at %s: %+v", path, a.identity)
		}
	}
	// A bad ServiceAccount token is a 401 that points at the metadata.
	if a := s.get(t, "/mcp", serviceAccountToken("stranger")); a.code != http.StatusUnauthorized || !strings.Contains(a.challenge, `resource_metadata="https://gateway.example.test/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("bad ServiceAccount token: %d %q", a.code, a.challenge)
	}

	// A person has no namespace of their own: the endpoint must name one.
	if a := s.get(t, "/mcp", p.Mint(t, "alice-base")); a.code != http.StatusForbidden || !strings.Contains(a.body, "/namespaces/<namespace>/mcp") {
		t.Errorf("a person at /mcp: %d %q", a.code, a.body)
	}
	if a := s.get(t, "/namespaces/Not_A_Namespace/mcp", p.Mint(t, "alice-a")); a.code != http.StatusNotFound {
		t.Errorf("a path that names no namespace: %d", a.code)
	}
}

func TestEachNamespacesEndpointPublishesItsOwnMetadata(t *testing.T) {
	p := people(oidcprovider.Start(t))
	s := newStage(t, p)

	// No token: the challenge names the endpoint's own metadata.
	a := s.get(t, "/namespaces/team-a/mcp", "")
	want := `Bearer resource_metadata="https://gateway.example.test/.well-known/oauth-protected-resource/namespaces/team-a/mcp", scope="mcp.tools"`
	if a.code != http.StatusUnauthorized || a.challenge != want {
		t.Fatalf("no token: %d %q, want 401 %q", a.code, a.challenge, want)
	}
	for path, res := range map[string]string{
		"/.well-known/oauth-protected-resource/namespaces/team-a/mcp": teamA,
		"/.well-known/oauth-protected-resource/mcp":                   resource,
		"/.well-known/oauth-protected-resource":                       resource,
	} {
		a := s.get(t, path, "")
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if a.code != http.StatusOK || json.Unmarshal([]byte(a.body), &doc) != nil || doc.Resource != res || !slices.Equal(doc.AuthorizationServers, []string{p.Issuer}) {
			t.Errorf("%s: %d %s", path, a.code, a.body)
		}
	}
	if a := s.get(t, "/.well-known/oauth-protected-resource/namespaces/x_y/mcp", ""); a.code != http.StatusNotFound {
		t.Errorf("metadata of no namespace: %d", a.code)
	}
}

// Every bad access token gets its own clear answer: 401 with an
// invalid_token challenge naming the reason, or 503 with Retry-After when
// the identity provider cannot be reached. No answer and no log line holds
// a token.
func TestEveryBadAccessTokenGetsAClearAnswer(t *testing.T) {
	p := people(oidcprovider.Start(t))
	stranger := people(oidcprovider.Start(t)) // an issuer nobody configured
	down := people(oidcprovider.Start(t))     // configured, unreachable
	s := newStage(t, p, down)

	good := p.Mint(t, "alice-a")
	forged := oidcprovider.ForgeFrom(t, good)
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	downToken := down.Mint(t, "alice-a")
	down.Down.Store(true)
	expiring := p.Mint(t, "alice-a")

	var tokens []string
	for _, tc := range []struct {
		name   string
		token  string
		before func()
		code   int
		reason oauthresource.Reason
	}{
		{"alg none", forged.Unsigned(), nil, http.StatusUnauthorized, oauthresource.ReasonAlgorithm},
		{"unknown key id", forged.SignedBy(forger, "made-up-key"), nil, http.StatusUnauthorized, oauthresource.ReasonUnknownKey},
		{"forged signature under a published key id", forged.SignedBy(forger, forged.KeyID()), nil, http.StatusUnauthorized, oauthresource.ReasonSignature},
		{"wrong issuer", stranger.Mint(t, "alice-a"), nil, http.StatusUnauthorized, oauthresource.ReasonUnknownIssuer},
		{"wrong audience (the client's own)", p.Mint(t, "alice-cli"), nil, http.StatusUnauthorized, oauthresource.ReasonAudience},
		{"a token minted for another resource", p.Mint(t, "alice-elsewhere"), nil, http.StatusUnauthorized, oauthresource.ReasonAudience},
		{"a token for another namespace's endpoint", p.Mint(t, "alice-b"), nil, http.StatusUnauthorized, oauthresource.ReasonAudience},
		{"the gateway's base resource at a namespace's endpoint", p.Mint(t, "alice-base"), nil, http.StatusUnauthorized, oauthresource.ReasonAudience},
		{"not a JWT", "opaque-" + strings.Repeat("x", 40), nil, http.StatusUnauthorized, oauthresource.ReasonMalformed},
		{"expired", expiring, func() { s.clock.Step(24 * time.Hour) }, http.StatusUnauthorized, oauthresource.ReasonExpired},
		{"the identity provider unreachable", downToken, nil, http.StatusServiceUnavailable, ""},
	} {
		if tc.before != nil {
			tc.before()
		}
		tokens = append(tokens, tc.token)
		a := s.get(t, "/namespaces/team-a/mcp", tc.token)
		if a.code != tc.code {
			t.Errorf("%s: status %d (%s), want %d", tc.name, a.code, a.body, tc.code)
			continue
		}
		switch tc.code {
		case http.StatusUnauthorized:
			if !strings.Contains(a.challenge, `error="invalid_token"`) || !strings.Contains(a.challenge, "("+string(tc.reason)+")") ||
				!strings.Contains(a.challenge, "oauth-protected-resource/namespaces/team-a/mcp") {
				t.Errorf("%s: challenge %q, want invalid_token (%s) naming team-a's metadata", tc.name, a.challenge, tc.reason)
			}
		case http.StatusServiceUnavailable:
			if a.retry == "" || !strings.Contains(a.body, "could not be reached") || a.challenge != "" {
				t.Errorf("%s: Retry-After %q, body %q, challenge %q", tc.name, a.retry, a.body, a.challenge)
			}
		}
		// What is sent back is about the token, never the token.
		for _, tok := range tokens {
			sig := tok[strings.LastIndex(tok, ".")+1:]
			for _, text := range []string{a.body, a.challenge} {
				if strings.Contains(text, tok) || (len(sig) > 8 && strings.Contains(text, sig)) {
					t.Errorf("%s: a token in the answer: %q", tc.name, text)
				}
			}
		}
	}
	// Refused tokens are remembered as bad, as ServiceAccount tokens that
	// fail their review are; the unreachable provider's token is not.
	if n := s.id.RememberedBadTokens(); n != 10 {
		t.Errorf("remembered bad tokens: %d, want the 10 refused", n)
	}
	// The provider's answer about the unreachable issuer was logged, and
	// no log line holds a token or its signature.
	logs := s.logs.String()
	if !strings.Contains(logs, "checking an access token failed") {
		t.Errorf("the unreachable provider was not logged:\n%s", logs)
	}
	for _, tok := range append(tokens, good, s.sa.token) {
		sig := tok[strings.LastIndex(tok, ".")+1:]
		if strings.Contains(logs, tok) || (len(sig) > 8 && strings.Contains(logs, sig)) {
			t.Errorf("a token is in the log:\n%s", logs)
		}
	}
}

// A refused access token repeated is refused without being validated
// again, and past its burst gets 429, as a failing ServiceAccount token
// does.
func TestARefusedAccessTokenIsChargedLikeAFailedReview(t *testing.T) {
	p := people(oidcprovider.Start(t))
	s := newStage(t, p)
	bad := p.Mint(t, "alice-elsewhere")
	seen := map[int]int{}
	for range authn.DefaultUnauthenticatedBurst + 5 {
		seen[s.get(t, "/namespaces/team-a/mcp", bad).code]++
	}
	if seen[http.StatusUnauthorized] == 0 || seen[http.StatusTooManyRequests] == 0 {
		t.Errorf("answers to a repeated refused token: %v, want 401s then 429s", seen)
	}
	// Another token is not held back by it.
	if a := s.get(t, "/namespaces/team-a/mcp", p.Mint(t, "alice-a")); a.code != http.StatusOK {
		t.Errorf("a good token after another's refusals: %d", a.code)
	}
}
