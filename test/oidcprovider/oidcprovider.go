// Package oidcprovider runs a real OpenID Provider for tests: the one of
// github.com/zitadel/oidc, in-process over TLS. Discovery, the JWK set,
// the token endpoint, client authentication and the signing of JWT access
// tokens are zitadel's. The test's storage decides only what a provider's
// configuration decides: which clients exist, which audience and claims
// their tokens carry, and which signing keys are current and published
// (so that a test can rotate them).
package oidcprovider

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

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is a client-credentials client of the provider and what its
// tokens say.
type Client struct {
	Secret   string
	Subject  string
	Audience []string
	Claims   map[string]any
}

// SigningKey is one RSA key of the provider.
type SigningKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *SigningKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *SigningKey) Key() any                                    { return k.key }
func (k *SigningKey) ID() string                                  { return k.id }

// publicKey is a SigningKey as the JWK set publishes it.
type publicKey struct{ *SigningKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

// storageWithClients is zitadel's example storage with the test's clients and
// keys.
type storageWithClients struct {
	*storage.Storage

	mu        sync.Mutex
	clients   map[string]Client
	current   *SigningKey
	published []*SigningKey

	// public are the public clients, people and personClaims who signs
	// in and what their tokens say, resources the resource indicators of
	// each authorization request (people.go).
	public       map[string]PublicClient
	people       map[string]*storage.User
	personClaims map[string]map[string]any
	resources    map[string][]string
	// registration is what a client registered at RegistrationPath may
	// ask for (register.go).
	registration PublicClient
}

func newSigningKey(t TB) *SigningKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &SigningKey{id: rand.Text(), key: k}
}

func (s *storageWithClients) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, nil
}

func (s *storageWithClients) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storageWithClients) KeySet(context.Context) ([]op.Key, error) {
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

func (s *storageWithClients) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok || c.Secret != secret {
		return nil, oidc.ErrInvalidClient()
	}
	return serviceClient{storage.WebClient(id, secret)}, nil
}

func (s *storageWithClients) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	return &oidc.JWTTokenRequest{Subject: c.Subject, Audience: c.Audience, Scopes: scopes}, nil
}

// GetPrivateClaimsFromRequest adds the client's claims and the granted
// scopes to its access tokens.
func (s *storageWithClients) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, scopes []string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	claims := map[string]any{}
	for k, v := range s.personClaims[req.GetSubject()] {
		claims[k] = v
	}
	for _, c := range s.clients {
		if c.Subject == req.GetSubject() {
			for k, v := range c.Claims {
				claims[k] = v
			}
		}
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims, nil
}

// Rotate makes a new key current; the old one stays published when keep
// is set.
func (p *Provider) Rotate(t TB, keep bool) *SigningKey { return p.store.rotate(t, keep) }

// AddClient adds a client-credentials client whose tokens say what c
// says.
func (p *Provider) AddClient(id string, c Client) { p.store.addClient(id, c) }

// Current is the key tokens are signed with now.
func (p *Provider) Current() *SigningKey {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.current
}

// PrivateKey is the key's RSA private key, for a test forging tokens.
func (k *SigningKey) PrivateKey() *rsa.PrivateKey { return k.key }

func (s *storageWithClients) rotate(t TB, keep bool) *SigningKey {
	k := newSigningKey(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if keep {
		s.published = append([]*SigningKey{k}, s.published...)
	} else {
		s.published = []*SigningKey{k}
	}
	s.current = k
	return k
}

func (s *storageWithClients) addClient(id string, c Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = c
}

// Provider is a running provider.
type Provider struct {
	// Issuer is the provider's URL, its iss.
	Issuer string
	// CAPEM is the PEM of the certificate its TLS server presents.
	CAPEM string
	srv   *httptest.Server
	store *storageWithClients
	op    op.OpenIDProvider
	// codeClients are the authorization code clients (codeflow.go).
	codeClients map[string]*storage.Client

	// Down cuts every connection but the test's own token requests: an
	// unreachable provider.
	Down atomic.Bool
	// FailWith is an HTTP status every request gets, when set.
	FailWith atomic.Int32
	// KeysFailWith: the same, for the key set only.
	KeysFailWith atomic.Int32
	// Requests counts every request a validator could make (every one but
	// the token endpoint's and those of a person signing in); Discovery and
	// Keys those of the discovery document and of the key set.
	Requests  atomic.Int64
	Discovery atomic.Int64
	Keys      atomic.Int64

	authorizations atomic.Int64
	registered     atomic.Int64
}

// Start runs a provider until the test ends, with one signing key and
// no client.
func Start(t TB) *Provider {
	t.Helper()
	// zitadel logs refused requests through slog's default logger.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	p := &Provider{}
	var handler atomic.Value
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/oauth/token" || r.URL.Path == "/authorize/callback":
			// The test minting a token, or a client exchanging its code,
			// not the validator.
			handler.Load().(http.Handler).ServeHTTP(w, r)
			return
		case r.URL.Path == RegistrationPath:
			// A client registering itself (register.go).
			p.register(w, r)
			return
		case r.URL.Path == LoginPath:
			// The person's login and consent (codeflow.go).
			p.login(w, r)
			return
		case r.URL.Path == "/authorize":
			// A person's browser; the resource parameters (RFC 8707),
			// which zitadel does not read, go to the storage.
			p.authorizations.Add(1)
			_ = r.ParseForm()
			handler.Load().(http.Handler).ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), resourceKey{}, r.Form["resource"])))
			return
		}
		p.Requests.Add(1)
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			p.Discovery.Add(1)
		case "/keys":
			p.Keys.Add(1)
		}
		if p.Down.Load() {
			// The connection is cut: what an unreachable provider looks
			// like to the client.
			panic(http.ErrAbortHandler)
		}
		code := p.FailWith.Load()
		if r.URL.Path == "/keys" && code == 0 {
			code = p.KeysFailWith.Load()
		}
		if code != 0 {
			if code == http.StatusFound {
				w.Header().Set("Location", "https://elsewhere.example.test/")
			}
			http.Error(w, "<html>provider maintenance page</html>", int(code))
			return
		}
		if r.URL.Path == "/.well-known/openid-configuration" || r.URL.Path == oidc.AuthorizationServerMetadataEndpoint {
			p.withRegistration(handler.Load().(http.Handler), w, r)
			return
		}
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	p.srv.Config.ErrorLog = nil
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	p.Issuer = p.srv.URL
	p.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}))

	first := newSigningKey(t)
	p.codeClients = map[string]*storage.Client{}
	p.store = &storageWithClients{
		clients:      map[string]Client{},
		current:      first,
		published:    []*SigningKey{first},
		public:       map[string]PublicClient{},
		people:       map[string]*storage.User{},
		personClaims: map[string]map[string]any{},
		resources:    map[string][]string{},
	}
	p.store.Storage = storage.NewStorageWithClients(people{s: p.store, example: storage.NewUserStore(p.Issuer)}, p.codeClients)
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256(key[:]), CodeMethodS256: true, GrantTypeRefreshToken: true}, p.store, op.StaticIssuer(p.Issuer))
	if err != nil {
		t.Fatalf("zitadel NewProvider: %v", err)
	}
	p.op = provider
	handler.Store(http.Handler(provider))
	return p
}

// Mint obtains an access token for the client from the provider's token
// endpoint (client credentials grant).
func (p *Provider) Mint(t TB, client string, scopes ...string) string {
	t.Helper()
	p.store.mu.Lock()
	secret := p.store.clients[client].Secret
	p.store.mu.Unlock()
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, _ := http.NewRequest(http.MethodPost, p.Issuer+"/oauth/token", strings.NewReader(form.Encode()))
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

// TB is what the package needs of a test: a *testing.T or *testing.B,
// or Ginkgo's GinkgoT().
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}
