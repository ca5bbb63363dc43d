package oauthresource_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// servedValidator serves the metadata handler at the paths it names on a
// TLS server whose URL + "/mcp" is the resource, as the gateway will.
func servedValidator(t *testing.T, path string) (*oauthresource.Validator, *httptest.Server) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	o := oauthresource.DefaultOptions()
	o.Resource = srv.URL + path
	o.Scopes = []string{"mcp.tools", "mcp.approvals"}
	o.Issuers = []oauthresource.Issuer{{URL: "https://idp.example.test/realms/a"}, {URL: "https://login.example.test"}}
	v, err := oauthresource.New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range v.MetadataPaths() {
		mux.Handle(p, v.MetadataHandler())
	}
	return v, srv
}

// The go-sdk's client reads the metadata from the URL the challenge names
// and from both well-known forms, and checks that it is the resource's.
func TestMetadataIsWhatAnMCPClientReads(t *testing.T) {
	v, srv := servedValidator(t, "/mcp")
	ctx := context.Background()

	if got, want := v.MetadataPaths(), []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}; !slices.Equal(got, want) {
		t.Errorf("paths %v, want %v", got, want)
	}
	challenges, err := oauthex.ParseWWWAuthenticate([]string{v.Challenge()})
	if err != nil || len(challenges) != 1 || challenges[0].Scheme != "bearer" {
		t.Fatalf("challenge %q: %v %+v", v.Challenge(), err, challenges)
	}
	metaURL := challenges[0].Params["resource_metadata"]
	if metaURL != srv.URL+"/.well-known/oauth-protected-resource/mcp" || challenges[0].Params["scope"] != "mcp.tools mcp.approvals" {
		t.Errorf("challenge params %v", challenges[0].Params)
	}
	for _, u := range []string{metaURL, srv.URL + "/.well-known/oauth-protected-resource"} {
		m, err := oauthex.GetProtectedResourceMetadata(ctx, u, srv.URL+"/mcp", srv.Client())
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if !slices.Equal(m.AuthorizationServers, []string{"https://idp.example.test/realms/a", "https://login.example.test"}) ||
			!slices.Equal(m.BearerMethodsSupported, []string{"header"}) || !slices.Equal(m.ScopesSupported, []string{"mcp.tools", "mcp.approvals"}) {
			t.Errorf("%s: %+v", u, m)
		}
	}
	resp, err := srv.Client().Get(srv.URL + "/.well-known/oauth-protected-resource/other")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another resource's metadata: %d", resp.StatusCode)
	}
}

func TestMetadataOfAResourceWithoutAPath(t *testing.T) {
	v, srv := servedValidator(t, "")
	if got := v.MetadataPaths(); !slices.Equal(got, []string{"/.well-known/oauth-protected-resource"}) {
		t.Errorf("paths %v", got)
	}
	if v.MetadataURL() != srv.URL+"/.well-known/oauth-protected-resource" {
		t.Errorf("url %s", v.MetadataURL())
	}
	if _, err := oauthex.GetProtectedResourceMetadata(context.Background(), v.MetadataURL(), srv.URL, srv.Client()); err != nil {
		t.Fatal(err)
	}
}

func TestChallenges(t *testing.T) {
	v, _ := servedValidator(t, "/mcp")
	parse := func(h string) map[string]string {
		t.Helper()
		c, err := oauthex.ParseWWWAuthenticate([]string{h})
		if err != nil || len(c) != 1 {
			t.Fatalf("%q: %v", h, err)
		}
		return c[0].Params
	}
	invalid := parse(v.InvalidTokenChallenge(&oauthresource.TokenError{Reason: oauthresource.ReasonExpired}))
	if invalid["error"] != "invalid_token" || invalid["resource_metadata"] != v.MetadataURL() || !strings.Contains(invalid["error_description"], "Expired") {
		t.Errorf("invalid token: %v", invalid)
	}
	scope := parse(v.InsufficientScopeChallenge([]string{"mcp.tools", "mcp.approvals"}, `approving needs "mcp.approvals"`))
	if scope["error"] != "insufficient_scope" || scope["scope"] != "mcp.tools mcp.approvals" ||
		scope["resource_metadata"] != v.MetadataURL() || scope["error_description"] != `approving needs "mcp.approvals"` {
		t.Errorf("insufficient scope: %v", scope)
	}
}
