package tokenexchange_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/mcp-catalog/operator/internal/secret"
	te "github.com/mcp-catalog/operator/internal/tokenexchange"
)

// This file runs the client against an authorization server written by
// others: the OpenID Provider of github.com/zitadel/oidc, in-process over
// TLS. Protocol handling (form parsing, Basic decoding, client
// authentication, token issuance, error responses) is zitadel's; the only
// code of ours on the server side is the exchange policy hook that zitadel
// leaves to its storage, plus a client wrapper asking for JWT access tokens
// so the issued token can be verified against the provider's published keys.

const (
	zClientID     = "mcp-catalog:operator"
	zClientSecret = "z-s3cr:t +/%ü=secret"
	zAudience     = "mcp-api"
	zResource     = "https://mcp.example.test/mcp"
	// zitadel's example storage ships this client-credentials service user;
	// it mints the actor's subject token through the provider's own token
	// endpoint.
	zServiceUser   = "sid1"
	zServiceSecret = "verysecret"
)

// exchangeStorage is zitadel's example storage with our exchange policy.
type exchangeStorage struct {
	*storage.Storage

	mu   sync.Mutex
	seen []op.TokenExchangeRequest
}

// jwtClient makes the provider issue JWT access tokens for our client.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (s *exchangeStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil || id != zClientID {
		return c, err
	}
	return jwtClient{c}, nil
}

// ValidateTokenExchangeRequest is the issuer's policy: it sees what zitadel
// parsed out of our form.
func (s *exchangeStorage) ValidateTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) error {
	s.mu.Lock()
	s.seen = append(s.seen, r)
	s.mu.Unlock()
	if !slices.Equal(r.GetAudience(), []string{zAudience}) || !slices.Equal(r.GetResourses(), []string{zResource}) {
		return oidc.ErrInvalidTarget().WithDescription("audience or resource not served here")
	}
	for _, sc := range r.GetScopes() {
		if sc != "records.read" && sc != "records.write" {
			return oidc.ErrInvalidScope().WithDescription("scope %s unknown", sc)
		}
	}
	return nil
}

func (s *exchangeStorage) last() op.TokenExchangeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		return nil
	}
	return s.seen[len(s.seen)-1]
}

type zitadelOP struct {
	issuer string
	srv    *httptest.Server
	store  *exchangeStorage
}

// startZitadel runs the provider on 127.0.0.1 with TLS. legacyServer
// selects zitadel's newer HTTP layer (RegisterLegacyServer) instead of the
// Provider's own router; both parse token requests independently.
func startZitadel(t *testing.T, legacyServer bool) *zitadelOP {
	t.Helper()
	// zitadel logs every refused request through slog's default logger.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	var handler atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	issuer := srv.URL

	clients := map[string]*storage.Client{zClientID: storage.WebClient(zClientID, zClientSecret)}
	store := &exchangeStorage{Storage: storage.NewStorageWithClients(storage.NewUserStore(issuer), clients)}

	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256(key[:])}, store, op.StaticIssuer(issuer))
	if err != nil {
		t.Fatalf("zitadel NewProvider: %v", err)
	}
	var h http.Handler = provider
	if legacyServer {
		h = op.RegisterLegacyServer(op.NewLegacyServer(provider, *op.DefaultEndpoints), op.AuthorizeCallbackHandler(provider))
	}
	handler.Store(h)
	return &zitadelOP{issuer: issuer, srv: srv, store: store}
}

// discover reads the provider's metadata, as an operator would to fill in
// the delegation profile's token endpoint.
func (z *zitadelOP) discover(t *testing.T) (tokenEndpoint string) {
	t.Helper()
	resp, err := z.srv.Client().Get(z.issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var meta struct {
		TokenEndpoint string   `json:"token_endpoint"`
		GrantTypes    []string `json:"grant_types_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		t.Fatalf("discovery: %v", err)
	}
	if !slices.Contains(meta.GrantTypes, te.GrantTypeTokenExchange) {
		t.Fatalf("provider does not advertise token exchange: %v", meta.GrantTypes)
	}
	return meta.TokenEndpoint
}

// subjectToken obtains an access token for the service user from the
// provider (client credentials grant): the actor's token our exchange
// starts from.
func (z *zitadelOP) subjectToken(t *testing.T, tokenEndpoint string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"openid"}}
	req, _ := http.NewRequest(http.MethodPost, tokenEndpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(zServiceUser, zServiceSecret)
	resp, err := z.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("client credentials: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 || body.AccessToken == "" {
		t.Fatalf("client credentials: status %d, err %v", resp.StatusCode, err)
	}
	return body.AccessToken
}

func TestAgainstZitadelOP(t *testing.T) {
	for _, mode := range []struct {
		name   string
		legacy bool
	}{{"provider router", false}, {"legacy server layer", true}} {
		t.Run(mode.name, func(t *testing.T) {
			z := startZitadel(t, mode.legacy)
			tokenEndpoint := z.discover(t)
			subject := z.subjectToken(t, tokenEndpoint)

			t0 := time.Now()
			c, err := te.New(te.Options{HTTPClient: z.srv.Client(), Clock: testingclock.NewFakePassiveClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			req := te.Request{
				TokenEndpoint:    tokenEndpoint,
				ClientID:         zClientID,
				ClientSecret:     secret.New(zClientSecret),
				SubjectToken:     secret.New(subject),
				SubjectTokenType: te.TokenTypeAccessToken,
				Audience:         zAudience,
				Scopes:           []string{"records.read", "records.write"},
				Resource:         zResource,
			}
			allowed := te.Allowed{Audiences: []string{zAudience, "elsewhere"}, Scopes: []string{"records.read", "records.write", "records.admin"}}

			tok, err := c.Exchange(context.Background(), req, allowed, allowed)
			if err != nil {
				t.Fatalf("Exchange against zitadel: %v", err)
			}

			// What zitadel parsed from our form.
			seen := z.store.last()
			if seen == nil {
				t.Fatal("zitadel's exchange policy was never consulted")
			}
			if seen.GetClientID() != zClientID {
				t.Errorf("zitadel authenticated client %q", seen.GetClientID())
			}
			if seen.GetExchangeSubject() != zServiceUser || seen.GetExchangeSubjectTokenType() != oidc.AccessTokenType {
				t.Errorf("subject %q of type %q", seen.GetExchangeSubject(), seen.GetExchangeSubjectTokenType())
			}
			if seen.GetRequestedTokenType() != oidc.AccessTokenType {
				t.Errorf("requested token type %q", seen.GetRequestedTokenType())
			}
			if !slices.Equal(seen.GetScopes(), []string{"records.read", "records.write"}) {
				t.Errorf("scopes %v", seen.GetScopes())
			}

			// What we made of zitadel's response.
			if tok.Type != te.TokenTypeAccessToken || tok.TokenType != te.BearerTokenType {
				t.Errorf("types %q / %q", tok.Type, tok.TokenType)
			}
			if !slices.Equal(tok.Scope, []string{"records.read", "records.write"}) {
				t.Errorf("scope %v", tok.Scope)
			}
			// The example storage issues tokens for 5 minutes; zitadel
			// reports the remaining whole seconds.
			if life := tok.ExpiresAt.Sub(t0); life < 4*time.Minute || life > 5*time.Minute {
				t.Errorf("lifetime %v, want about 5m", life)
			}

			// The issued token is a JWT signed by the provider, verified
			// with zitadel's own verifier against the published keys.
			keys := rp.NewRemoteKeySet(z.srv.Client(), z.issuer+"/keys")
			claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](context.Background(), tok.Value.Reveal(), op.NewAccessTokenVerifier(z.issuer, keys))
			if err != nil {
				t.Fatalf("issued token does not verify: %v", err)
			}
			if !slices.Equal([]string(claims.Audience), []string{zAudience}) || claims.Subject != zServiceUser || claims.ClientID != zClientID {
				t.Errorf("claims aud %v sub %q client %q", claims.Audience, claims.Subject, claims.ClientID)
			}
			// zitadel puts no scope claim into JWT access tokens; the granted
			// scope is checked above, in its policy hook and its response.
			if exp := claims.GetExpiration(); tok.ExpiresAt.After(exp) {
				t.Errorf("our expiry %v is later than the token's %v", tok.ExpiresAt, exp)
			}
			cred, err := tok.Credential()
			if err != nil || cred.Value.Reveal() != tok.Value.Reveal() {
				t.Errorf("credential: %v", err)
			}

			// zitadel's refusals, mapped to our kinds without its words.
			refusals := []struct {
				name string
				mut  func(*te.Request)
				kind te.Kind
			}{
				{"wrong client secret", func(r *te.Request) { r.ClientSecret = secret.New("wrong") }, te.KindInvalidClient},
				// zitadel reports an unverifiable subject token as
				// invalid_request ("subject_token is invalid").
				{"forged subject token", func(r *te.Request) { r.SubjectToken = secret.New("forged") }, te.KindInvalidRequest},
				{"scope refused by the issuer", func(r *te.Request) { r.Scopes = []string{"records.admin"} }, te.KindInvalidScope},
				{"audience refused by the issuer", func(r *te.Request) { r.Audience = "elsewhere" }, te.KindInvalidTarget},
			}
			for _, rf := range refusals {
				r := req
				rf.mut(&r)
				_, err := c.Exchange(context.Background(), r, allowed, allowed)
				e := wantKind(t, err, rf.kind)
				if strings.Contains(err.Error(), "unknown") || strings.Contains(err.Error(), "invalid basic") ||
					strings.Contains(err.Error(), "not served") || strings.Contains(err.Error(), "subject_token is invalid") {
					t.Errorf("%s: zitadel's description leaked: %v", rf.name, err)
				}
				if e.StatusCode < 400 || e.StatusCode > 401 {
					t.Errorf("%s: status %d", rf.name, e.StatusCode)
				}
			}
		})
	}
}
