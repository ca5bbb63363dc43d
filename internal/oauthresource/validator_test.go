package oauthresource_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"golang.org/x/sys/unix"
	"k8s.io/apiserver/pkg/authentication/user"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

const (
	resource      = "https://gateway.example.test/mcp"
	otherResource = "https://other.example.test/mcp"
)

// lines collects what the validator logs, to search it for tokens.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, prefix+" "+args)
	}, funcr.Options{Verbosity: 9})
}

func (l *lines) text() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// withClients adds the provider's clients the tests mint tokens for.
func withClients(p *oidcprovider.Provider) *oidcprovider.Provider {
	p.AddClient("agent", oidcprovider.Client{
		Secret: "agent-s3cret", Subject: "alice", Audience: []string{resource},
		Claims: map[string]any{"email": "alice@example.test", "email_verified": true, "groups": []string{"dev", "ops"}},
	})
	// A token minted for the client itself, as an ID token would be.
	p.AddClient("cli", oidcprovider.Client{Secret: "cli-s3cret", Subject: "alice", Audience: []string{"cli"},
		Claims: map[string]any{"email": "alice@example.test"}})
	// A token minted for another resource (RFC 8707).
	p.AddClient("elsewhere", oidcprovider.Client{Secret: "elsewhere-s3cret", Subject: "alice", Audience: []string{otherResource},
		Claims: map[string]any{"email": "alice@example.test"}})
	return p
}

func options(p *oidcprovider.Provider, clock *testingclock.FakeClock, log *lines) oauthresource.Options {
	prefix := "oidc:"
	o := oauthresource.DefaultOptions()
	o.Resource = resource
	o.Scopes = []string{"mcp.tools"}
	o.Issuers = []oauthresource.Issuer{{
		URL:                  p.Issuer,
		CertificateAuthority: p.CAPEM,
		ClaimMappings: oauthresource.ClaimMappings{
			Username: oauthresource.PrefixedClaim{Claim: "email"},
			Groups:   oauthresource.PrefixedClaim{Claim: "groups", Prefix: &prefix},
		},
	}}
	o.Clock = clock
	if log != nil {
		o.Log = log.logger()
	}
	return o
}

func newValidator(t testing.TB, o oauthresource.Options) *oauthresource.Validator {
	t.Helper()
	v, err := oauthresource.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAcceptsATokenOfARealProviderAsAKubernetesIdentity(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	clock := testingclock.NewFakeClock(time.Now())
	v := newValidator(t, options(p, clock, nil))

	id, err := v.Validate(context.Background(), p.Mint(t, "agent", "mcp.tools", "offline"))
	if err != nil {
		t.Fatal(err)
	}
	var info user.Info = id
	if info.GetName() != "alice@example.test" || info.GetUID() != "alice" ||
		!slices.Equal(info.GetGroups(), []string{"oidc:dev", "oidc:ops"}) ||
		!slices.Equal(info.GetExtra()[oauthresource.ExtraIssuer], []string{p.Issuer}) {
		t.Errorf("identity: %+v", id)
	}
	if id.Issuer != p.Issuer || id.Subject != "alice" || id.ClientID != "agent" || !slices.Equal(id.Scopes, []string{"mcp.tools", "offline"}) {
		t.Errorf("token facts: %+v", id)
	}
	if m := id.MissingScopes([]string{"mcp.tools", "mcp.admin"}); !slices.Equal(m, []string{"mcp.admin"}) {
		t.Errorf("missing scopes: %v", m)
	}
	if d := id.Expiry.Sub(clock.Now()); d <= 0 || d > 10*time.Minute {
		t.Errorf("expiry %s from now", d)
	}
}

// The default username mapping is the API server's: sub, prefixed with
// the issuer and "#".
func TestDefaultUsernameIsTheIssuersSubject(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	o := options(p, testingclock.NewFakeClock(time.Now()), nil)
	o.Issuers[0].ClaimMappings = oauthresource.ClaimMappings{}
	id, err := newValidator(t, o).Validate(context.Background(), p.Mint(t, "agent"))
	if err != nil {
		t.Fatal(err)
	}
	if id.Username != p.Issuer+"#alice" || id.Groups != nil {
		t.Errorf("identity: %+v", id)
	}
}

func segment(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestRefusesEveryBadTokenWithItsOwnError(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	stranger := withClients(oidcprovider.Start(t)) // a provider nobody configured
	good := p.Mint(t, "agent")
	f := oidcprovider.ForgeFrom(t, good)
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&p.Current().PrivateKey().PublicKey)

	now := time.Now()
	cases := []struct {
		name  string
		token string
		at    time.Time
		want  error
	}{
		{"expired", good, now.Add(10 * time.Minute), oauthresource.ErrExpired},
		{"not yet valid", good, now.Add(-10 * time.Minute), oauthresource.ErrNotYetValid},
		{"audience is the client", p.Mint(t, "cli"), now, oauthresource.ErrAudience},
		{"minted for another resource", p.Mint(t, "elsewhere"), now, oauthresource.ErrAudience},
		{"issuer not configured", stranger.Mint(t, "agent"), now, oauthresource.ErrUnknownIssuer},
		{"alg none", f.Unsigned(), now, oauthresource.ErrAlgorithm},
		{"HS256 keyed with the public key", f.HMACWith(pub), now, oauthresource.ErrAlgorithm},
		{"unknown key id", f.SignedBy(forger, "made-up-key"), now, oauthresource.ErrUnknownKey},
		{"published key id, forged signature", f.SignedBy(forger, f.KeyID()), now, oauthresource.ErrSignature},
		{"not a JWT", "not-a-jwt", now, oauthresource.ErrMalformed},
		{"oversized", strings.Repeat("a", 17<<10), now, oauthresource.ErrMalformed},
	}
	log := &lines{}
	var texts []string
	tokens := []string{good}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tokens = append(tokens, tc.token)
			v := newValidator(t, options(p, testingclock.NewFakeClock(tc.at), log))
			id, err := v.Validate(context.Background(), tc.token)
			if err == nil {
				t.Fatalf("accepted: %+v", id)
			}
			texts = append(texts, err.Error(), fmt.Sprintf("%v %+v %#v", err, err, err), v.InvalidTokenChallenge(asTokenError(err)))
			var te *oauthresource.TokenError
			if !errors.As(err, &te) || !errors.Is(err, tc.want) {
				t.Fatalf("got %T %v, want %v", err, err, tc.want)
			}
			for _, other := range []*oauthresource.TokenError{oauthresource.ErrExpired, oauthresource.ErrAudience, oauthresource.ErrAlgorithm, oauthresource.ErrUnknownKey, oauthresource.ErrSignature} {
				if other.Reason != te.Reason && errors.Is(err, other) {
					t.Errorf("%v is also %v", err, other)
				}
			}
		})
	}
	// And the good token, at the right time, is good.
	if _, err := newValidator(t, options(p, testingclock.NewFakeClock(now), log)).Validate(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	noTokenIn(t, tokens, append(texts, log.text()...))
}

func asTokenError(err error) *oauthresource.TokenError {
	var te *oauthresource.TokenError
	errors.As(err, &te)
	return te
}

// noTokenIn fails if any text holds a token, or its signature or claims
// segment (a token's identifying parts).
func noTokenIn(t *testing.T, tokens, texts []string) {
	t.Helper()
	if len(texts) == 0 {
		t.Fatal("nothing to search")
	}
	for _, tok := range tokens {
		needles := []string{tok}
		for _, part := range strings.Split(tok, ".") {
			if len(part) >= 16 {
				needles = append(needles, part)
			}
		}
		for _, text := range texts {
			for _, n := range needles {
				if strings.Contains(text, n) {
					t.Errorf("a token's value appears in %q", text)
				}
			}
		}
	}
}

// An identity provider could name a user or a group in Kubernetes' own
// namespace; with an empty prefix it would become a ServiceAccount or
// system:masters in the SubjectAccessReview. The mapping refuses it.
func TestNoTokenMapsIntoTheSystemNamespace(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	p.AddClient("impostor", oidcprovider.Client{Secret: "impostor-s3cret", Subject: "system:serviceaccount:kube-system:admin", Audience: []string{resource}})
	p.AddClient("masters", oidcprovider.Client{Secret: "masters-s3cret", Subject: "mallory", Audience: []string{resource},
		Claims: map[string]any{"groups": []string{"dev", "system:masters"}}})
	none := ""
	o := options(p, testingclock.NewFakeClock(time.Now()), nil)
	o.Issuers[0].ClaimMappings = oauthresource.ClaimMappings{
		Username: oauthresource.PrefixedClaim{Claim: "sub", Prefix: &none},
		Groups:   oauthresource.PrefixedClaim{Claim: "groups", Prefix: &none},
	}
	v := newValidator(t, o)
	for _, client := range []string{"impostor", "masters"} {
		id, err := v.Validate(context.Background(), p.Mint(t, client))
		if !errors.Is(err, oauthresource.ErrClaims) {
			t.Errorf("%s: got %+v, %v; want refused", client, id, err)
		}
	}
}

func TestUnverifiedEmailIsRefused(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	p.AddClient("unverified", oidcprovider.Client{Secret: "u-s3cret", Subject: "bob", Audience: []string{resource},
		Claims: map[string]any{"email": "alice@example.test", "email_verified": false}})
	v := newValidator(t, options(p, testingclock.NewFakeClock(time.Now()), nil))
	if _, err := v.Validate(context.Background(), p.Mint(t, "unverified")); !errors.Is(err, oauthresource.ErrClaims) {
		t.Errorf("got %v", err)
	}
}

// The identity provider unreachable is not the token's fault: a distinct
// error with a Retry-After, no request while the last failure is recent,
// and the token accepted once the provider answers again.
func TestUnreachableProviderIsUnavailableNotRefused(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	token := p.Mint(t, "agent")
	clock := testingclock.NewFakeClock(time.Now())
	log := &lines{}
	v := newValidator(t, options(p, clock, log))
	ctx := context.Background()

	p.Down.Store(true)
	_, err := v.Validate(ctx, token)
	var un *oauthresource.UnavailableError
	if !errors.As(err, &un) || errors.As(err, new(*oauthresource.TokenError)) {
		t.Fatalf("provider down at discovery: got %T %v", err, err)
	}
	if un.RetryAfter <= 0 || un.RetryAfterSeconds() != "10" {
		t.Errorf("retry after %s (%s)", un.RetryAfter, un.RetryAfterSeconds())
	}
	texts := []string{err.Error(), fmt.Sprintf("%+v", err)}

	before := p.Requests.Load()
	clock.Step(oauthresource.DefaultKeyRefreshInterval / 2)
	if _, err = v.Validate(ctx, token); !errors.As(err, &un) || un.RetryAfterSeconds() != "5" {
		t.Fatalf("within the interval: got %v", err)
	}
	if p.Requests.Load() != before {
		t.Error("the provider was asked again within the refresh interval")
	}

	p.Down.Store(false)
	clock.Step(oauthresource.DefaultKeyRefreshInterval)
	if _, err := v.Validate(ctx, token); err != nil {
		t.Fatalf("provider back: %v", err)
	}

	// Down again once its keys are known: tokens signed by a known key are
	// still checked, with no request; a key not seen before cannot be.
	p.Down.Store(true)
	before = p.Requests.Load()
	if _, err := v.Validate(ctx, p.Mint(t, "agent", "another")); err != nil {
		t.Fatalf("known key while the provider is down: %v", err)
	}
	if p.Requests.Load() != before {
		t.Error("a known key needed a request")
	}
	p.Rotate(t, true)
	clock.Step(oauthresource.DefaultKeyRefreshInterval)
	rotated := p.Mint(t, "agent")
	if _, err = v.Validate(ctx, rotated); !errors.As(err, &un) {
		t.Fatalf("new key while the provider is down: got %T %v", err, err)
	}
	texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
	noTokenIn(t, []string{token, rotated}, append(texts, log.text()...))
}

// A provider that answers, but with an error or a redirect, is as
// unavailable as one that does not answer; its bytes are not repeated.
func TestProviderAnsweringAnErrorIsUnavailable(t *testing.T) {
	for _, code := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusFound, http.StatusNotFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			p := withClients(oidcprovider.Start(t))
			token := p.Mint(t, "agent")
			clock := testingclock.NewFakeClock(time.Now())
			v := newValidator(t, options(p, clock, nil))
			p.FailWith.Store(int32(code))
			_, err := v.Validate(context.Background(), token)
			var un *oauthresource.UnavailableError
			if !errors.As(err, &un) {
				t.Fatalf("discovery answered %d: got %T %v", code, err, err)
			}
			if s := fmt.Sprintf("%v %+v", err, errors.Unwrap(err)); strings.Contains(s, "maintenance") {
				t.Errorf("the provider's bytes are repeated: %s", s)
			}
			// Discovered, then the key set answers the error.
			p.FailWith.Store(0)
			clock.Step(oauthresource.DefaultKeyRefreshInterval)
			v = newValidator(t, options(p, clock, nil))
			p.KeysFailWith.Store(int32(code))
			_, err = v.Validate(context.Background(), token)
			if !errors.As(err, &un) {
				t.Fatalf("keys answered %d: got %T %v", code, err, err)
			}
			if s := fmt.Sprintf("%v %+v", err, errors.Unwrap(err)); strings.Contains(s, "maintenance") {
				t.Errorf("the provider's bytes are repeated: %s", s)
			}
		})
	}
}

// Rotation: a token signed by a key published after the set was fetched
// is accepted once the set is fetched again, which a new key id triggers
// at most once per refresh interval.
func TestRotatedKeyIsAcceptedAfterARefresh(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	clock := testingclock.NewFakeClock(time.Now())
	v := newValidator(t, options(p, clock, nil))
	ctx := context.Background()
	if _, err := v.Validate(ctx, p.Mint(t, "agent")); err != nil {
		t.Fatal(err)
	}
	if n := p.Keys.Load(); n != 1 {
		t.Fatalf("%d key set fetches", n)
	}
	p.Rotate(t, false)
	rotated := p.Mint(t, "agent")

	// Within the interval the set is not fetched again: the key is
	// unknown for now.
	if _, err := v.Validate(ctx, rotated); !errors.Is(err, oauthresource.ErrUnknownKey) {
		t.Fatalf("within the interval: %v", err)
	}
	clock.Step(oauthresource.DefaultKeyRefreshInterval)
	if _, err := v.Validate(ctx, rotated); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
	if n := p.Keys.Load(); n != 2 {
		t.Errorf("%d key set fetches, want 2", n)
	}
}

// Attack: tokens naming made-up key ids, each of which go-oidc alone
// would answer by fetching the key set again. The provider sees at most
// one fetch per refresh interval, however many arrive.
func TestMadeUpKeyIDsCostTheProviderNothing(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	clock := testingclock.NewFakeClock(time.Now())
	v := newValidator(t, options(p, clock, nil))
	ctx := context.Background()
	good := p.Mint(t, "agent")
	if _, err := v.Validate(ctx, good); err != nil {
		t.Fatal(err)
	}
	f := oidcprovider.ForgeFrom(t, good)
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	before := p.Keys.Load()
	for i := range 50 {
		if _, err := v.Validate(ctx, f.SignedBy(forger, fmt.Sprintf("made-up-%d", i))); !errors.Is(err, oauthresource.ErrUnknownKey) {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	if n := p.Keys.Load() - before; n != 0 {
		t.Errorf("50 made-up key ids made %d key set fetches within the refresh interval", n)
	}
	clock.Step(oauthresource.DefaultKeyRefreshInterval)
	for i := range 50 {
		_, _ = v.Validate(ctx, f.SignedBy(forger, fmt.Sprintf("more-made-up-%d", i)))
	}
	if n := p.Keys.Load() - before; n != 1 {
		t.Errorf("after the interval: %d fetches, want 1", n)
	}
}

// A token validated once is answered from memory: no request to the
// provider, even when it is down, and one identity for every caller.
func TestCachedTokenMakesNoRequestToTheProvider(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	clock := testingclock.NewFakeClock(time.Now())
	v := newValidator(t, options(p, clock, nil))
	ctx := context.Background()
	token := p.Mint(t, "agent")
	first, err := v.Validate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Requests.Load(); n != 2 {
		t.Errorf("the first validation made %d requests; want 2 (discovery and keys)", n)
	}
	p.Down.Store(true)
	for range 100 {
		id, err := v.Validate(ctx, token)
		if err != nil || id != first {
			t.Fatalf("cached: %v, same identity %v", err, id == first)
		}
	}
	if n := p.Requests.Load(); n != 2 {
		t.Errorf("%d requests after the first validation's 2", n-2)
	}
	// Not past its expiry.
	clock.SetTime(first.Expiry.Add(2 * time.Minute))
	if _, err := v.Validate(ctx, token); !errors.Is(err, oauthresource.ErrExpired) {
		t.Errorf("after expiry: %v", err)
	}
}

// The cache holds at most TokenCacheSize tokens: the least recently used
// goes first, and is validated again (from the cached keys) when it
// comes back.
func TestTokenCacheIsBounded(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	o := options(p, testingclock.NewFakeClock(time.Now()), nil)
	o.TokenCacheSize = 2
	v := newValidator(t, o)
	ctx := context.Background()
	tokens := []string{p.Mint(t, "agent", "a"), p.Mint(t, "agent", "b"), p.Mint(t, "agent", "c")}
	ids := make([]*oauthresource.Identity, len(tokens))
	for i, tok := range tokens {
		id, err := v.Validate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	if id, _ := v.Validate(ctx, tokens[2]); id != ids[2] {
		t.Error("the most recent token is not cached")
	}
	if id, _ := v.Validate(ctx, tokens[0]); id == ids[0] {
		t.Error("a third token did not push the first out of a cache of two")
	}
	if n := p.Requests.Load(); n != 2 {
		t.Errorf("%d requests; validating again needs none", n)
	}
}

// Many first tokens at once, on a validator that has fetched nothing:
// every one is accepted, with one discovery and one key set fetch. A
// caller that found the key set empty and asks go-oidc for it again just
// after another caller's fetch must get that fetch's keys, not a refusal.
func TestConcurrentFirstTokensShareOneFetch(t *testing.T) {
	p := withClients(oidcprovider.Start(t))
	tokens := make([]string, 40)
	for i := range tokens {
		tokens[i] = p.Mint(t, "agent", fmt.Sprintf("scope-%d", i))
	}
	for round := range 5 {
		p.Discovery.Store(0)
		p.Keys.Store(0)
		v := newValidator(t, options(p, testingclock.NewFakeClock(time.Now()), nil))
		var wg sync.WaitGroup
		errs := make([]error, len(tokens))
		for i, tok := range tokens {
			wg.Go(func() { _, errs[i] = v.Validate(context.Background(), tok) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, token %d: %v", round, i, err)
			}
		}
		if d, k := p.Discovery.Load(), p.Keys.Load(); d != 1 || k != 1 {
			t.Errorf("round %d: %d discoveries and %d key set fetches, want 1 and 1", round, d, k)
		}
	}
}

// BenchmarkValidateCached is the cost of a token seen before: the
// target is at most 20µs of CPU per validation, with no request to the
// identity provider (cpu-ns/op is the process's CPU time per validation).
func BenchmarkValidateCached(b *testing.B) {
	p := withClients(oidcprovider.Start(b))
	v, err := oauthresource.New(benchOptions(p))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	token := p.Mint(b, "agent", "mcp.tools")
	if _, err := v.Validate(ctx, token); err != nil {
		b.Fatal(err)
	}
	requests := p.Requests.Load()
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.Validate(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if p.Requests.Load() != requests {
		b.Errorf("cached validations made %d requests to the provider", p.Requests.Load()-requests)
	}
}

func benchOptions(p *oidcprovider.Provider) oauthresource.Options {
	o := options(p, nil, nil)
	o.Clock = nil
	return o
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// failing is a transport to an identity provider that never answers.
type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in this test")
}

// FuzzValidate: no input panics, and every refusal is typed.
func FuzzValidate(f *testing.F) {
	claims := segment(map[string]any{"iss": "https://idp.example.test", "sub": "a", "aud": resource, "exp": 4102444800})
	for _, seed := range []string{
		"", ".", "..", "a.b.c", "not-a-jwt",
		segment(map[string]any{"alg": "none"}) + "." + claims + ".",
		segment(map[string]any{"alg": "RS256", "kid": "k"}) + "." + claims + ".c2ln",
		segment(map[string]any{"alg": "RS256"}) + "." + segment([]int{1}) + ".c2ln",
		segment(map[string]any{"alg": "ES256", "crit": []string{"x"}}) + "." + claims + ".c2ln",
	} {
		f.Add(seed)
	}
	o := oauthresource.DefaultOptions()
	o.Resource = resource
	o.Issuers = []oauthresource.Issuer{{URL: "https://idp.example.test"}}
	o.Transport = failing{}
	v, err := oauthresource.New(o)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Validate(context.Background(), token)
		if err == nil {
			t.Fatalf("accepted %+v", id)
		}
		var te *oauthresource.TokenError
		var un *oauthresource.UnavailableError
		if !errors.As(err, &te) && !errors.As(err, &un) {
			t.Fatalf("untyped error %T %v", err, err)
		}
	})
}

// A validator for another resource of the gateway (a namespace's) takes
// only tokens issued for that resource, even one the first accepted and
// remembered, and its metadata and challenges name it.
func TestForResourceBindsTokensToThatResource(t *testing.T) {
	const teamA = "https://gateway.example.test/namespaces/team-a/mcp"
	p := withClients(oidcprovider.Start(t))
	p.AddClient("team-a", oidcprovider.Client{Secret: "team-a-s3cret", Subject: "alice", Audience: []string{teamA},
		Claims: map[string]any{"email": "alice@example.test"}})
	v := newValidator(t, options(p, testingclock.NewFakeClock(time.Now()), nil))
	a, err := v.ForResource(teamA)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base, forA := p.Mint(t, "agent"), p.Mint(t, "team-a")
	if _, err := v.Validate(ctx, base); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Validate(ctx, base); !errors.Is(err, oauthresource.ErrAudience) {
		t.Errorf("a token of the base resource at team-a's: %v, want WrongAudience", err)
	}
	if _, err := a.Validate(ctx, forA); err != nil {
		t.Errorf("team-a's token at team-a's resource: %v", err)
	}
	if _, err := v.Validate(ctx, forA); !errors.Is(err, oauthresource.ErrAudience) {
		t.Errorf("team-a's token at the base resource: %v, want WrongAudience", err)
	}
	if a.Metadata().Resource != teamA || a.MetadataURL() != "https://gateway.example.test/.well-known/oauth-protected-resource/namespaces/team-a/mcp" {
		t.Errorf("metadata %q at %q", a.Metadata().Resource, a.MetadataURL())
	}
	if _, err := v.ForResource("http://gateway.example.test/namespaces/team-a/mcp"); err == nil {
		t.Error("a plain-http resource off loopback was accepted")
	}
}
