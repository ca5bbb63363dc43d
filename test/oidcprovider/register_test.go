package oidcprovider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-catalog/operator/test/oidcprovider"
)

func post(t *testing.T, p *oidcprovider.Provider, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.Issuer+oidcprovider.RegistrationPath, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	resp, err := p.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The provider's metadata advertises its registration endpoint, which
// registers a public client the go-sdk's RFC 7591 client reads back.
func TestRegistrationIsAdvertisedAndRegistersAPublicClient(t *testing.T) {
	p := oidcprovider.Start(t)
	ctx := context.Background()
	meta, err := oauthex.GetAuthServerMeta(ctx, p.Issuer+"/.well-known/openid-configuration", p.Issuer, p.Client())
	if err != nil || meta.RegistrationEndpoint != p.Issuer+oidcprovider.RegistrationPath || meta.TokenEndpoint == "" {
		t.Fatalf("metadata: %+v, %v", meta, err)
	}
	reg, err := oauthex.RegisterClient(ctx, meta.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{"http://127.0.0.1:43123/callback", "https://agent.example.com/cb"}, TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, ClientName: "an agent",
	}, p.Client())
	if err != nil || reg.ClientID == "" || reg.ClientSecret != "" || p.Registered() != 1 {
		t.Fatalf("registration: %+v, %v", reg, err)
	}
}

// A registration the provider cannot honour is refused with RFC 7591's
// error code and a description saying what is wrong, and registers
// nothing.
func TestBadRegistrationsAreRefusedClearly(t *testing.T) {
	p := oidcprovider.Start(t)
	for name, c := range map[string]struct {
		contentType, body, code, says string
	}{
		"no redirect URIs":            {"application/json", `{"token_endpoint_auth_method":"none"}`, "invalid_redirect_uri", "redirect_uris is required"},
		"an http redirect elsewhere":  {"application/json", `{"redirect_uris":["http://agent.example.com/cb"],"token_endpoint_auth_method":"none"}`, "invalid_redirect_uri", "neither https nor http at a loopback"},
		"a relative redirect":         {"application/json", `{"redirect_uris":["/cb"],"token_endpoint_auth_method":"none"}`, "invalid_redirect_uri", "not an absolute URL"},
		"a redirect with a fragment":  {"application/json", `{"redirect_uris":["https://agent.example.com/cb#x"],"token_endpoint_auth_method":"none"}`, "invalid_redirect_uri", "fragment"},
		"the implicit grant":          {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"grant_types":["implicit"],"token_endpoint_auth_method":"none"}`, "invalid_client_metadata", `grant type "implicit" is not supported`},
		"client credentials":          {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"grant_types":["client_credentials"],"token_endpoint_auth_method":"none"}`, "invalid_client_metadata", "not supported"},
		"refresh without code":        {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"grant_types":["refresh_token"],"token_endpoint_auth_method":"none"}`, "invalid_client_metadata", "authorization_code"},
		"a token response type":       {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"response_types":["token"],"token_endpoint_auth_method":"none"}`, "invalid_client_metadata", `response type "token"`},
		"a confidential client":       {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata", "only public clients"},
		"RFC 7591's default auth":     {"application/json", `{"redirect_uris":["https://a.example.com/cb"]}`, "invalid_client_metadata", "only public clients"},
		"not JSON":                    {"application/json", `redirect_uris=https://a.example.com/cb`, "invalid_client_metadata", "not a JSON object"},
		"a form":                      {"application/x-www-form-urlencoded", `redirect_uris=https://a.example.com/cb`, "invalid_client_metadata", "application/json"},
		"redirect URIs of wrong type": {"application/json", `{"redirect_uris":"https://a.example.com/cb","token_endpoint_auth_method":"none"}`, "invalid_client_metadata", "not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			status, out := post(t, p, c.contentType, c.body)
			desc, _ := out["error_description"].(string)
			if status != http.StatusBadRequest || out["error"] != c.code || !strings.Contains(desc, c.says) {
				t.Fatalf("%d %v; want 400 %s saying %q", status, out, c.code, c.says)
			}
		})
	}
	if p.Registered() != 0 {
		t.Fatalf("%d clients registered", p.Registered())
	}
}

// An attack: a client that registers itself asks for a resource the
// provider's policy does not give registered clients. Registering granted
// it nothing: the authorization request is refused (invalid_target),
// while one for a resource of the policy goes on to the login page.
func TestARegisteredClientGetsOnlyWhatThePolicyGives(t *testing.T) {
	p := oidcprovider.Start(t)
	p.SetRegistrationPolicy(oidcprovider.PublicClient{Resources: []string{"https://gateway.example.com/namespaces/team-a/"}})
	const redirect = "http://127.0.0.1:40000/callback"
	status, reg := post(t, p, "application/json", `{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`)
	id, _ := reg["client_id"].(string)
	if status != http.StatusCreated || id == "" {
		t.Fatalf("registration: %d %v", status, reg)
	}
	browser := &http.Client{Transport: p.Client().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authorize := func(resource string) string {
		q := url.Values{"client_id": {id}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"openid"}, "state": {"s"},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "resource": {resource}}
		resp, err := browser.Get(p.Issuer + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.Header.Get("Location")
	}
	if loc := authorize("https://gateway.example.com/namespaces/team-b/mcp"); !strings.HasPrefix(loc, redirect) || !strings.Contains(loc, "invalid_target") {
		t.Fatalf("another resource was answered with a redirect to %q", loc)
	}
	if loc := authorize("https://gateway.example.com/namespaces/team-a/mcp"); !strings.Contains(loc, oidcprovider.LoginPath) {
		t.Fatalf("the policy's resource was answered with a redirect to %q", loc)
	}
}
