package bench

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/test/oidcprovider"
)

// oauthResource is the gateway's resource in BenchmarkOAuthIdentify, and
// oauthEndpoint team-a's endpoint, the resource its token is issued for.
const (
	oauthResource = "https://gateway.example.test/mcp"
	oauthEndpoint = "https://gateway.example.test/namespaces/team-a/mcp"
)

// BenchmarkOAuthIdentify is what the gateway's identify stage spends on a
// request carrying a person's access token it has validated before: the
// stage as the gateway mounts it at a namespace's endpoint (the bearer
// token read, the table of bad tokens consulted, the endpoint's resource
// made, the cached validation, the identity put in the request's
// context), called in this process without a network in between, against
// a real OpenID Provider (zitadel's, over TLS). It reports the CPU per
// request (cpu-ns/op, getrusage), the requests the provider received for
// the first request (discovery and keys) and during the measured ones
// (idp-requests, which must be 0).
func BenchmarkOAuthIdentify(b *testing.B) {
	p := oidcprovider.Start(b)
	p.AddClient("alice", oidcprovider.Client{
		Secret: "alice-s3cret", Subject: "alice", Audience: []string{oauthEndpoint},
		Claims: map[string]any{"email": "alice@example.test", "email_verified": true, "groups": []string{"support"}},
	})
	prefix := "oidc:"
	o := oauthresource.DefaultOptions()
	o.Resource, o.Scopes = oauthResource, []string{"mcp.tools"}
	o.Issuers = []oauthresource.Issuer{{
		URL: p.Issuer, CertificateAuthority: p.CAPEM,
		ClaimMappings: oauthresource.ClaimMappings{
			Username: oauthresource.PrefixedClaim{Claim: "email"},
			Groups:   oauthresource.PrefixedClaim{Claim: "groups", Prefix: &prefix},
		},
	}}
	v, err := oauthresource.New(o)
	if err != nil {
		b.Fatal(err)
	}
	identified := 0
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if id := authn.IdentityOf(auth.TokenInfoFromContext(r.Context())); id != nil && id.Username == "alice@example.test" && id.Namespace == "team-a" {
			identified++
		}
	})
	mux := http.NewServeMux()
	mux.Handle(gateway.NamespacedPath, authn.NewIdentifier(noServiceAccounts{}, v, 0, 0, nil).Handler(next))
	token := p.Mint(b, "alice", "mcp.tools")
	req, err := http.NewRequest(http.MethodPost, "https://gateway.example.test/namespaces/team-a/mcp", http.NoBody)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	w := &discardWriter{header: http.Header{}}

	before := p.Requests.Load()
	mux.ServeHTTP(w, req)
	if w.code != 0 || identified != 1 {
		b.Fatalf("the first request was not identified: status %d", w.code)
	}
	first := p.Requests.Load() - before
	identified = 0
	before = p.Requests.Load()
	b.ReportAllocs()
	cpu := cpuOfSelf(b)
	for b.Loop() {
		mux.ServeHTTP(w, req)
	}
	b.ReportMetric(float64((cpuOfSelf(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(first), "idp-requests-first")
	b.ReportMetric(float64(p.Requests.Load()-before), "idp-requests")
	if n := p.Requests.Load() - before; n != 0 {
		b.Errorf("validated tokens made %d requests to the identity provider", n)
	}
	if identified != b.N || w.code != 0 {
		b.Fatalf("%d of %d requests identified, status %d", identified, b.N, w.code)
	}
}

// noServiceAccounts is TokenReview for a benchmark without ServiceAccount
// tokens: it is never asked.
type noServiceAccounts struct{}

func (noServiceAccounts) Authenticate(context.Context, string) (*authn.Identity, error) {
	return nil, authn.ErrUnauthenticated
}

// discardWriter is a ResponseWriter that keeps only a status written.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
