package oauthresource_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// This file runs a real identity provider for the tests: the OpenID
// Provider of github.com/zitadel/oidc, in-process over TLS. Discovery, the
// JWK set, the token endpoint, client authentication and the signing of
// JWT access tokens are zitadel's. The test's storage decides only what a
// provider's configuration decides: which clients exist, which audience
// and claims their tokens carry, and which signing keys are current and
// published (so that a test can rotate them).

// testClient is a client-credentials client of the provider and what its
// tokens say.
type testClient struct {
	secret   string
	subject  string
	audience []string
	claims   map[string]any
}

// signingKey is one RSA key of the provider.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is a signingKey as the JWK set publishes it.
type publicKey struct{ *signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

// idpStorage is zitadel's example storage with the test's clients and
// keys.
type idpStorage struct {
	*storage.Storage

	mu        sync.Mutex
	clients   map[string]testClient
	current   *signingKey
	published []*signingKey
}

func newSigningKey(t testing.TB) *signingKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{id: rand.Text(), key: k}
}

func (s *idpStorage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, nil
}

func (s *idpStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *idpStorage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]op.Key, 0, len(s.published))
	for _, k := range s.published {
		keys = append(keys, publicKey{k})
	}
	return keys, nil
}

// serviceClient is a client allowed the client-credentials grant that is
// issued JWT access tokens.
type serviceClient struct{ op.Client }

func (serviceClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (serviceClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (s *idpStorage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok || c.secret != secret {
		return nil, oidc.ErrInvalidClient()
	}
	return serviceClient{storage.WebClient(id, secret)}, nil
}

func (s *idpStorage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	return &oidc.JWTTokenRequest{Subject: c.subject, Audience: c.audience, Scopes: scopes}, nil
}

// GetPrivateClaimsFromRequest adds the client's claims and the granted
// scopes to its access tokens.
func (s *idpStorage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, scopes []string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	claims := map[string]any{}
	for _, c := range s.clients {
		if c.subject == req.GetSubject() {
			for k, v := range c.claims {
				claims[k] = v
			}
		}
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims, nil
}

// rotate makes a new key current; the old one stays published when keep
// is set.
func (s *idpStorage) rotate(t testing.TB, keep bool) *signingKey {
	k := newSigningKey(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if keep {
		s.published = append([]*signingKey{k}, s.published...)
	} else {
		s.published = []*signingKey{k}
	}
	s.current = k
	return k
}

func (s *idpStorage) addClient(id string, c testClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = c
}

// idp is a running provider.
type idp struct {
	issuer string
	caPEM  string
	srv    *httptest.Server
	store  *idpStorage

	down     atomic.Bool
	failWith atomic.Int32 // an HTTP status every request gets, when set
	// keysFailWith: the same, for the key set only.
	keysFailWith atomic.Int32
	requests     atomic.Int64 // every request the gateway's side could make
	discovery    atomic.Int64
	keys         atomic.Int64
}

func startIdP(t testing.TB) *idp {
	t.Helper()
	// zitadel logs refused requests through slog's default logger.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	p := &idp{}
	var handler atomic.Value
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			// The test minting a token, not the validator.
			handler.Load().(http.Handler).ServeHTTP(w, r)
			return
		}
		p.requests.Add(1)
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			p.discovery.Add(1)
		case "/keys":
			p.keys.Add(1)
		}
		if p.down.Load() {
			// The connection is cut: what an unreachable provider looks
			// like to the client.
			panic(http.ErrAbortHandler)
		}
		code := p.failWith.Load()
		if r.URL.Path == "/keys" && code == 0 {
			code = p.keysFailWith.Load()
		}
		if code != 0 {
			if code == http.StatusFound {
				w.Header().Set("Location", "https://elsewhere.example.test/")
			}
			http.Error(w, "<html>provider maintenance page</html>", int(code))
			return
		}
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	p.srv.Config.ErrorLog = nil
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	p.issuer = p.srv.URL
	p.caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}))

	first := newSigningKey(t)
	p.store = &idpStorage{
		Storage:   storage.NewStorageWithClients(storage.NewUserStore(p.issuer), map[string]*storage.Client{}),
		clients:   map[string]testClient{},
		current:   first,
		published: []*signingKey{first},
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256(key[:])}, p.store, op.StaticIssuer(p.issuer))
	if err != nil {
		t.Fatalf("zitadel NewProvider: %v", err)
	}
	handler.Store(http.Handler(provider))
	return p
}

// mint obtains an access token for the client from the provider's token
// endpoint (client credentials grant).
func (p *idp) mint(t testing.TB, client string, scopes ...string) string {
	t.Helper()
	p.store.mu.Lock()
	secret := p.store.clients[client].secret
	p.store.mu.Unlock()
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, _ := http.NewRequest(http.MethodPost, p.issuer+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(client), url.QueryEscape(secret))
	resp, err := p.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("minting a token: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || body.AccessToken == "" {
		t.Fatalf("minting a token: status %d, %v", resp.StatusCode, err)
	}
	return body.AccessToken
}
