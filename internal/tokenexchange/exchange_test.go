package tokenexchange_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
	te "github.com/mcp-catalog/operator/internal/tokenexchange"
)

// The policy used unless a test says otherwise. It allows more than the test
// endpoint knows ("unknown-api", "records.admin") so that the server's own
// refusals (invalid_target, invalid_scope) can be provoked.
var (
	profileAllowed = te.Allowed{
		Audiences: []string{"mcp-api", "other-api", "unknown-api"},
		Scopes:    []string{"records.read", "records.write", "records.admin"},
	}
	actorAllowed = te.Allowed{
		Audiences: []string{"mcp-api", "other-api", "unknown-api"},
		Scopes:    []string{"records.read", "records.write", "records.admin"},
	}
)

func baseRequest(as *testAS) te.Request {
	return te.Request{
		TokenEndpoint:    as.URL(),
		ClientID:         asClientID,
		ClientSecret:     secret.New(asClientSecret),
		SubjectToken:     secret.New(asSubjectToken),
		SubjectTokenType: te.TokenTypeAccessToken,
		Audience:         asAudience,
		Scopes:           []string{"records.read"},
		Resource:         asResource,
	}
}

func newClient(t *testing.T, as *testAS, opts te.Options) *te.Client {
	t.Helper()
	if opts.HTTPClient == nil && opts.RootCAs == nil {
		opts.HTTPClient = as.srv.Client()
	}
	c, err := te.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func wantKind(t *testing.T, err error, kind te.Kind) *te.Error {
	t.Helper()
	var e *te.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *tokenexchange.Error of kind %s", err, err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("kind = %s (%v), want %s", e.Kind, err, kind)
	}
	return e
}

func TestExchangeSendsRFC8693RequestAndReturnsToken(t *testing.T) {
	as := newTestAS(t)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := newClient(t, as, te.Options{Clock: testingclock.NewFakePassiveClock(t0)})
	req := baseRequest(as)
	req.Scopes = []string{"records.read", "records.write"}

	tok, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	as.checkNoViolations(t)

	form := as.form()
	want := map[string]string{
		"grant_type":           "urn:ietf:params:oauth:grant-type:token-exchange",
		"subject_token":        asSubjectToken,
		"subject_token_type":   "urn:ietf:params:oauth:token-type:access_token",
		"requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"audience":             asAudience,
		"scope":                "records.read records.write",
		"resource":             asResource,
	}
	for k, v := range want {
		if got := form.Get(k); got != v {
			t.Errorf("form %s = %q, want %q", k, got, v)
		}
	}
	if len(form) != len(want) {
		t.Errorf("form has %d parameters, want %d: %v", len(form), len(want), keys(form))
	}

	it, ok := as.issuedToken(tok.Value.Reveal())
	if !ok {
		t.Fatalf("returned token was not issued by the endpoint")
	}
	if it.clientID != asClientID || it.subject != asSubjectToken || it.audience != asAudience || it.resource != asResource ||
		!slices.Equal(it.scopes, []string{"records.read", "records.write"}) {
		t.Errorf("issued for %+v", it)
	}
	if tok.Type != te.TokenTypeAccessToken || tok.TokenType != te.BearerTokenType {
		t.Errorf("types = %q / %q", tok.Type, tok.TokenType)
	}
	if !tok.ExpiresAt.Equal(t0.Add(300 * time.Second)) {
		t.Errorf("ExpiresAt = %v, want %v", tok.ExpiresAt, t0.Add(300*time.Second))
	}
	if !slices.Equal(tok.Scope, []string{"records.read", "records.write"}) {
		t.Errorf("Scope = %v", tok.Scope)
	}
}

func keys(v url.Values) []string {
	var out []string
	for k := range v {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestClientAuthenticationIsFormEncodedBasic(t *testing.T) {
	as := newTestAS(t)
	c := newClient(t, as, te.Options{})
	if _, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed); err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	as.checkNoViolations(t)
	h := as.authorization()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if !strings.HasPrefix(h, "Basic ") || err != nil {
		t.Fatalf("Authorization header is not Basic")
	}
	// Exactly one ':' may remain: the separator. The id's own ':' and the
	// secret's ' ', '+', '/', '%', 'ü', '=' must all be form-encoded.
	want := url.QueryEscape(asClientID) + ":" + url.QueryEscape(asClientSecret)
	if string(raw) != want {
		t.Errorf("Basic credentials are not the form-encoded id and secret")
	}
	if strings.Count(string(raw), ":") != 1 {
		t.Errorf("Basic credentials contain an unencoded ':'")
	}
	form := as.form()
	if form.Has("client_id") || form.Has("client_secret") {
		t.Errorf("client credentials also sent in the body")
	}
}

func TestScopesAreDedupedAndOptionalParametersOmitted(t *testing.T) {
	as := newTestAS(t)
	c := newClient(t, as, te.Options{})

	req := baseRequest(as)
	req.Scopes = []string{"records.read", "records.write", "records.read"}
	if _, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed); err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if got := as.form().Get("scope"); got != "records.read records.write" {
		t.Errorf("scope = %q", got)
	}

	req.Scopes, req.Resource = nil, ""
	tok, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
	if err != nil {
		t.Fatalf("Exchange without scope and resource: %v", err)
	}
	if f := as.form(); f.Has("scope") || f.Has("resource") {
		t.Errorf("empty scope or resource sent: %v", keys(f))
	}
	if len(tok.Scope) != 0 {
		t.Errorf("Scope = %v, want none", tok.Scope)
	}
	as.checkNoViolations(t)
}

func TestOAuthErrorResponsesAreTyped(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(as *testAS, r *te.Request)
		kind   te.Kind
		status int
	}{
		{"wrong client secret", func(_ *testAS, r *te.Request) { r.ClientSecret = secret.New("wrong") }, te.KindInvalidClient, 401},
		{"unknown client", func(_ *testAS, r *te.Request) { r.ClientID = "nobody" }, te.KindInvalidClient, 401},
		{"client without the grant", func(_ *testAS, r *te.Request) {
			r.ClientID, r.ClientSecret = "no-exchange", secret.New("other-secret")
		}, te.KindUnauthorizedClient, 400},
		{"grant disabled", func(as *testAS, _ *te.Request) { as.grantDisabled = true }, te.KindUnsupportedGrantType, 400},
		{"unknown subject token", func(_ *testAS, r *te.Request) { r.SubjectToken = secret.New("forged") }, te.KindInvalidGrant, 400},
		{"subject token of the wrong type", func(_ *testAS, r *te.Request) { r.SubjectTokenType = te.TokenTypeJWT }, te.KindInvalidRequest, 400},
		{"scope unknown to the issuer", func(_ *testAS, r *te.Request) { r.Scopes = []string{"records.admin"} }, te.KindInvalidScope, 400},
		{"audience unknown to the issuer", func(_ *testAS, r *te.Request) { r.Audience = "unknown-api" }, te.KindInvalidTarget, 400},
		{"resource not the audience's", func(_ *testAS, r *te.Request) { r.Resource = "https://evil.example.test/mcp" }, te.KindInvalidTarget, 400},
		{"unregistered error code", func(as *testAS, _ *te.Request) {
			as.respond = func(w http.ResponseWriter, _ *http.Request) { oauthError(w, 400, "access_denied") }
		}, te.KindUnknownOAuthError, 400},
		{"oauth error on 403", func(as *testAS, _ *te.Request) {
			as.respond = func(w http.ResponseWriter, _ *http.Request) { oauthError(w, 403, "unauthorized_client") }
		}, te.KindUnauthorizedClient, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			req := baseRequest(as)
			tc.setup(as, &req)
			c := newClient(t, as, te.Options{})
			tok, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
			e := wantKind(t, err, tc.kind)
			if e.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", e.StatusCode, tc.status)
			}
			if !te.IsOAuthError(e.Kind) {
				t.Errorf("IsOAuthError(%s) = false", e.Kind)
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), "rejected by the test token endpoint") {
				t.Errorf("error_description leaked into the error: %v", err)
			}
			if !tok.Value.IsZero() {
				t.Errorf("a token was returned with the error")
			}
			if as.requests.Load() != 1 {
				t.Errorf("requests = %d, want 1 (no retry)", as.requests.Load())
			}
			as.checkNoViolations(t)
		})
	}
}

// raw answers with a fixed status, content type and body.
func raw(status int, contentType, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

const validBody = `{"access_token":"aGVsbG8","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":120}`

func TestResponseStatusesAndBodies(t *testing.T) {
	const html = "<html><body><h1>Down for maintenance</h1></body></html>"
	cases := []struct {
		name   string
		status int
		ct     string
		body   string
		kind   te.Kind // "" means success
	}{
		{"500 html", 500, "text/html", html, te.KindServerError},
		{"502 empty", 502, "", "", te.KindServerError},
		{"503 with an oauth error body", 503, "application/json", `{"error":"invalid_grant"}`, te.KindServerError},
		{"400 html", 400, "text/html", html, te.KindHTTPStatus},
		{"404 text", 404, "text/plain", "not found", te.KindHTTPStatus},
		{"400 json without error", 400, "application/json", `{"message":"no"}`, te.KindHTTPStatus},
		{"400 json error not a string", 400, "application/json", `{"error":42}`, te.KindHTTPStatus},
		{"400 oauth error as text/plain", 400, "text/plain", `{"error":"invalid_grant"}`, te.KindHTTPStatus},
		{"204", 204, "", "", te.KindHTTPStatus},
		{"201 with a valid body", 201, "application/json", validBody, te.KindHTTPStatus},
		{"200 html", 200, "text/html; charset=utf-8", html, te.KindNotJSON},
		{"200 json as text/plain", 200, "text/plain", validBody, te.KindNotJSON},
		{"200 no content type", 200, "", validBody, te.KindNotJSON},
		{"200 json content type, html body", 200, "application/json", html, te.KindNotJSON},
		{"200 empty", 200, "application/json", "", te.KindNotJSON},
		{"200 array", 200, "application/json", `[` + validBody + `]`, te.KindInvalidResponse},
		{"200 null", 200, "application/json", `null`, te.KindInvalidResponse},
		{"200 with an error member", 200, "application/json", `{"error":"invalid_grant","access_token":"x","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}`, te.KindInvalidResponse},
		{"200 charset parameter", 200, "application/json; charset=UTF-8", validBody, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			as.respond = raw(tc.status, tc.ct, tc.body)
			c := newClient(t, as, te.Options{})
			tok, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("Exchange: %v", err)
				}
				if tok.Value.Reveal() != "aGVsbG8" {
					t.Errorf("token value not taken from the body")
				}
				return
			}
			e := wantKind(t, err, tc.kind)
			if e.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", e.StatusCode, tc.status)
			}
			if strings.Contains(err.Error(), "maintenance") || strings.Contains(err.Error(), "not found") {
				t.Errorf("body bytes in the error: %v", err)
			}
		})
	}
}

func TestMalformedSuccessResponsesRefused(t *testing.T) {
	// The full decoder table is in decode_test.go; these go through the
	// whole client to prove the decoder's verdict reaches the caller.
	bodies := map[string]string{
		"access_token missing":    `{"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}`,
		"issued_token_type gone":  `{"access_token":"abc","token_type":"Bearer"}`,
		"issued type unknown":     `{"access_token":"abc","issued_token_type":"urn:example:custom","token_type":"Bearer"}`,
		"issued type refresh":     `{"access_token":"abc","issued_token_type":"urn:ietf:params:oauth:token-type:refresh_token","token_type":"Bearer"}`,
		"token_type mac":          `{"access_token":"abc","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"MAC"}`,
		"expires_in zero":         `{"access_token":"abc","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":0}`,
		"expires_in string":       `{"access_token":"abc","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":"3600"}`,
		"token with header break": `{"access_token":"abc\r\nX-Evil: 1","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			as := newTestAS(t)
			as.respond = raw(200, "application/json", body)
			c := newClient(t, as, te.Options{})
			_, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
			e := wantKind(t, err, te.KindInvalidResponse)
			if e.Detail == "" {
				t.Errorf("no detail says which rule the response broke")
			}
		})
	}
}

func TestGrantedScopeMustStayWithinPolicy(t *testing.T) {
	as := newTestAS(t)
	c := newClient(t, as, te.Options{})
	actor := te.Allowed{Audiences: []string{asAudience}, Scopes: []string{"records.read"}}
	grant := func(scope string) {
		as.respond = raw(200, "application/json",
			`{"access_token":"abc","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"bearer","scope":"`+scope+`"}`)
	}

	grant("records.read records.admin")
	_, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actor)
	wantKind(t, err, te.KindInvalidResponse)

	grant("records.read")
	tok, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actor)
	if err != nil {
		t.Fatalf("granted scope within policy refused: %v", err)
	}
	if tok.TokenType != te.BearerTokenType {
		t.Errorf("token_type %q not normalised to Bearer", tok.TokenType)
	}

	// A narrower grant than requested is the issuer's right.
	grant("")
	req := baseRequest(as)
	req.Scopes = []string{"records.read"}
	tok, err = c.Exchange(context.Background(), req, profileAllowed, actor)
	if err != nil || len(tok.Scope) != 0 {
		t.Fatalf("narrower grant: scope %v, err %v", tok.Scope, err)
	}

	// Omitted scope means "as requested" (RFC 8693 §2.2.1).
	as.respond = nil
	as.omitScope = true
	tok, err = c.Exchange(context.Background(), req, profileAllowed, actor)
	if err != nil || !slices.Equal(tok.Scope, []string{"records.read"}) {
		t.Fatalf("omitted scope: scope %v, err %v", tok.Scope, err)
	}
}

func TestOversizedResponsesRefused(t *testing.T) {
	pad := func(body string, size int) string {
		// JSON allows trailing whitespace; this keeps the body valid so
		// only the size decides.
		return body + strings.Repeat(" ", size-len(body))
	}
	cases := []struct {
		name   string
		limit  int64
		status int
		size   int
		kind   te.Kind
	}{
		{"default cap exactly", 0, 200, te.DefaultMaxResponseBytes, ""},
		{"default cap plus one", 0, 200, te.DefaultMaxResponseBytes + 1, te.KindOversized},
		{"huge body", 0, 200, 8 << 20, te.KindOversized},
		{"oversized error body", 0, 400, te.DefaultMaxResponseBytes + 1, te.KindOversized},
		{"custom cap", 1024, 200, 1025, te.KindOversized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			body := validBody
			if tc.status != 200 {
				body = `{"error":"invalid_grant"}`
			}
			as.respond = raw(tc.status, "application/json", pad(body, tc.size))
			c := newClient(t, as, te.Options{MaxResponseBytes: tc.limit})
			_, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("body at the cap refused: %v", err)
				}
				return
			}
			e := wantKind(t, err, tc.kind)
			want := tc.limit
			if want == 0 {
				want = te.DefaultMaxResponseBytes
			}
			if e.Limit != want || e.StatusCode != tc.status {
				t.Errorf("limit %d status %d, want %d %d", e.Limit, e.StatusCode, want, tc.status)
			}
		})
	}
}

func TestRedirectsRefusedAndCredentialsNotForwarded(t *testing.T) {
	var targetHits atomic.Int32
	// The same httptest certificate serves both servers, so the test
	// client would trust the target: following the redirect would work.
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		targetHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(validBody))
	}))
	defer target.Close()

	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			as := newTestAS(t)
			as.respond = func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/oauth/token", status)
			}
			// A caller's client that would follow redirects must not.
			caller := as.srv.Client()
			caller.CheckRedirect = nil
			c, err := te.New(te.Options{HTTPClient: caller})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
			e := wantKind(t, err, te.KindRedirect)
			if e.StatusCode != status {
				t.Errorf("status = %d", e.StatusCode)
			}
			if strings.Contains(err.Error(), target.URL) {
				t.Errorf("Location echoed in the error")
			}
			if n := targetHits.Load(); n != 0 {
				t.Fatalf("redirect target received %d requests", n)
			}
			if caller.CheckRedirect != nil {
				t.Errorf("the caller's http.Client was modified")
			}
		})
	}
}

func TestPlainHTTPNeedsAllowHTTP(t *testing.T) {
	as := newTestASWith(t, false)
	req := baseRequest(as)
	if !strings.HasPrefix(req.TokenEndpoint, "http://") {
		t.Fatalf("test endpoint is not plain http")
	}

	c := newClient(t, as, te.Options{})
	_, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
	wantKind(t, err, te.KindInsecureEndpoint)
	if n := as.requests.Load(); n != 0 {
		t.Fatalf("plain http endpoint received %d requests without AllowHTTP", n)
	}

	c = newClient(t, as, te.Options{AllowHTTP: true})
	if _, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed); err != nil {
		t.Fatalf("AllowHTTP exchange: %v", err)
	}
	if n := as.requests.Load(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestPolicyRefusedBeforeSending(t *testing.T) {
	profile := te.Allowed{Audiences: []string{"mcp-api", "profile-only"}, Scopes: []string{"records.read", "records.write", "a b"}}
	actor := te.Allowed{Audiences: []string{"mcp-api", "actor-only"}, Scopes: []string{"records.read", "actor.scope", "a b"}}
	cases := []struct {
		name           string
		audience       string
		scopes         []string
		profile, actor te.Allowed
		kind           te.Kind
	}{
		{"audience only in profile", "profile-only", nil, profile, actor, te.KindAudienceNotAllowed},
		{"audience only in actor", "actor-only", nil, profile, actor, te.KindAudienceNotAllowed},
		{"audience in neither", "elsewhere", nil, profile, actor, te.KindAudienceNotAllowed},
		{"audience empty", "", nil, profile, actor, te.KindAudienceNotAllowed},
		{"audience differs in case", "MCP-API", nil, profile, actor, te.KindAudienceNotAllowed},
		{"scope only in profile", "mcp-api", []string{"records.read", "records.write"}, profile, actor, te.KindScopeNotAllowed},
		{"scope only in actor", "mcp-api", []string{"actor.scope"}, profile, actor, te.KindScopeNotAllowed},
		{"scope in neither", "mcp-api", []string{"records.delete"}, profile, actor, te.KindScopeNotAllowed},
		{"empty actor allows nothing", "mcp-api", nil, profile, te.Allowed{}, te.KindAudienceNotAllowed},
		{"actor without scopes", "mcp-api", []string{"records.read"}, profile, te.Allowed{Audiences: []string{"mcp-api"}}, te.KindScopeNotAllowed},
		{"empty profile allows nothing", "mcp-api", nil, te.Allowed{}, actor, te.KindAudienceNotAllowed},
		// Allowed on both sides, but the issuer would read two scopes.
		{"scope with a space", "mcp-api", []string{"a b"}, profile, actor, te.KindInvalidInput},
		{"empty scope string", "mcp-api", []string{""}, profile, actor, te.KindInvalidInput},
		{"scope with a quote", "mcp-api", []string{`x"y`}, profile, actor, te.KindInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			c := newClient(t, as, te.Options{})
			req := baseRequest(as)
			req.Audience, req.Scopes = tc.audience, tc.scopes
			_, err := c.Exchange(context.Background(), req, tc.profile, tc.actor)
			wantKind(t, err, tc.kind)
			if te.KindOf(te.CheckAllowed(req, tc.profile, tc.actor)) != tc.kind {
				t.Errorf("CheckAllowed disagrees with Exchange")
			}
			if n := as.requests.Load(); n != 0 {
				t.Fatalf("token endpoint received %d requests", n)
			}
		})
	}

	// The same sets allow a request that stays inside both.
	req := te.Request{Audience: "mcp-api", Scopes: []string{"records.read"}}
	if err := te.CheckAllowed(req, profile, actor); err != nil {
		t.Errorf("CheckAllowed refused an allowed request: %v", err)
	}
}

func TestInvalidInputRefusedBeforeSending(t *testing.T) {
	cases := []struct {
		name string
		mut  func(r *te.Request)
		kind te.Kind
	}{
		{"no client id", func(r *te.Request) { r.ClientID = "" }, te.KindInvalidInput},
		{"no client secret", func(r *te.Request) { r.ClientSecret = secret.Secret{} }, te.KindInvalidInput},
		{"no subject token", func(r *te.Request) { r.SubjectToken = secret.New("") }, te.KindInvalidInput},
		{"no subject token type", func(r *te.Request) { r.SubjectTokenType = "" }, te.KindInvalidInput},
		{"unknown subject token type", func(r *te.Request) { r.SubjectTokenType = "urn:example:token" }, te.KindInvalidInput},
		{"relative resource", func(r *te.Request) { r.Resource = "/mcp" }, te.KindInvalidInput},
		{"resource with fragment", func(r *te.Request) { r.Resource = asResource + "#frag" }, te.KindInvalidInput},
		{"endpoint relative", func(r *te.Request) { r.TokenEndpoint = "/oauth/token" }, te.KindInvalidInput},
		{"endpoint without host", func(r *te.Request) { r.TokenEndpoint = "https:///oauth/token" }, te.KindInvalidInput},
		{"endpoint with userinfo", func(r *te.Request) {
			r.TokenEndpoint = strings.Replace(r.TokenEndpoint, "https://", "https://user:pw@", 1)
		}, te.KindInvalidInput},
		{"endpoint with fragment", func(r *te.Request) { r.TokenEndpoint += "#x" }, te.KindInvalidInput},
		{"endpoint ftp", func(r *te.Request) { r.TokenEndpoint = strings.Replace(r.TokenEndpoint, "https", "ftp", 1) }, te.KindInvalidInput},
		{"endpoint unparsable", func(r *te.Request) { r.TokenEndpoint = "https://[::1" }, te.KindInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			c := newClient(t, as, te.Options{})
			req := baseRequest(as)
			tc.mut(&req)
			_, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
			wantKind(t, err, tc.kind)
			if n := as.requests.Load(); n != 0 {
				t.Fatalf("token endpoint received %d requests", n)
			}
		})
	}
}

func TestEndpointQueryIsKept(t *testing.T) {
	as := newTestAS(t)
	var gotQuery atomic.Value
	as.respond = func(w http.ResponseWriter, r *http.Request) {
		gotQuery.Store(r.URL.RawQuery)
		raw(200, "application/json", validBody)(w, r)
	}
	c := newClient(t, as, te.Options{})
	req := baseRequest(as)
	req.TokenEndpoint += "?tenant=a"
	if _, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed); err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if gotQuery.Load() != "tenant=a" {
		t.Errorf("query = %v, want tenant=a (RFC 6749 §3.2)", gotQuery.Load())
	}
}

func TestTLSTrust(t *testing.T) {
	as := newTestAS(t)

	// System roots do not trust the test certificate. The test server is on
	// loopback, which the administrator's policy must allow.
	loopback := egress.Policy{AllowAllPrivate: true}
	c, err := te.New(te.Options{Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
	e := wantKind(t, err, te.KindUntrustedCertificate)
	var unknown x509.UnknownAuthorityError
	if !errors.As(e, &unknown) {
		t.Errorf("cause %v not kept for errors.Is/As", e.Err)
	}
	if n := as.requests.Load(); n != 0 {
		t.Fatalf("untrusted endpoint handled %d requests", n)
	}

	pool := x509.NewCertPool()
	pool.AddCert(as.srv.Certificate())
	c, err = te.New(te.Options{RootCAs: pool, Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed); err != nil {
		t.Fatalf("Exchange with RootCAs: %v", err)
	}

	_, err = te.New(te.Options{RootCAs: pool, HTTPClient: as.srv.Client()})
	wantKind(t, err, te.KindInvalidInput)
}

// TestRequestCABundle: a request's CA bundle is trusted for that request
// only; the client's default trust is unchanged for the next request.
func TestRequestCABundle(t *testing.T) {
	as := newTestAS(t)
	c, err := te.New(te.Options{Egress: egress.Policy{AllowAllPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := egress.ParseCABundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: as.srv.Certificate().Raw}))
	if err != nil {
		t.Fatal(err)
	}
	req := baseRequest(as)
	req.CABundle = bundle
	if _, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed); err != nil {
		t.Fatalf("Exchange with the request's bundle: %v", err)
	}
	if _, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed); te.KindOf(err) != te.KindUntrustedCertificate {
		t.Fatalf("Exchange without a bundle after one with it: %v", err)
	}
	if n := as.requests.Load(); n != 1 {
		t.Fatalf("the endpoint handled %d requests, want 1", n)
	}
	// A transport the client cannot copy is refused before anything is
	// sent rather than silently ignoring the bundle.
	odd, err := te.New(te.Options{HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Fatal("a request was sent")
		return nil, nil
	})}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = odd.Exchange(context.Background(), req, profileAllowed, actorAllowed)
	wantKind(t, err, te.KindInvalidInput)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestUnreachableEndpoint(t *testing.T) {
	as := newTestAS(t)
	req := baseRequest(as)
	c := newClient(t, as, te.Options{})
	as.srv.Close()
	_, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
	wantKind(t, err, te.KindUnreachable)
}

func TestDeadlinesAndCancellation(t *testing.T) {
	hang := func(as *testAS) chan struct{} {
		arrived := make(chan struct{}, 1)
		as.respond = func(_ http.ResponseWriter, r *http.Request) {
			// The server notices a closed connection only once the
			// body has been read.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case arrived <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		}
		return arrived
	}

	t.Run("context deadline", func(t *testing.T) {
		as := newTestAS(t)
		hang(as)
		c := newClient(t, as, te.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Exchange(ctx, baseRequest(as), profileAllowed, actorAllowed)
		e := wantKind(t, err, te.KindTimeout)
		if !errors.Is(e, context.DeadlineExceeded) {
			t.Errorf("cause is not context.DeadlineExceeded: %v", e.Err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("returned after %v", d)
		}
		if n := as.requests.Load(); n != 1 {
			t.Errorf("requests = %d, want 1: an exchange is never retried", n)
		}
	})

	t.Run("timeout option is a ceiling", func(t *testing.T) {
		as := newTestAS(t)
		hang(as)
		c := newClient(t, as, te.Options{Timeout: 300 * time.Millisecond})
		start := time.Now()
		_, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
		wantKind(t, err, te.KindTimeout)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("returned after %v", d)
		}
		// On a loaded machine the ceiling can pass before the request
		// arrives; what must never happen is a second one.
		if n := as.requests.Load(); n > 1 {
			t.Errorf("requests = %d, want at most 1: an exchange is never retried", n)
		}
	})

	t.Run("cancelled in flight", func(t *testing.T) {
		as := newTestAS(t)
		arrived := hang(as)
		c := newClient(t, as, te.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-arrived
			cancel()
		}()
		_, err := c.Exchange(ctx, baseRequest(as), profileAllowed, actorAllowed)
		e := wantKind(t, err, te.KindCancelled)
		if !errors.Is(e, context.Canceled) {
			t.Errorf("cause is not context.Canceled: %v", e.Err)
		}
	})

	t.Run("cancelled before", func(t *testing.T) {
		as := newTestAS(t)
		c := newClient(t, as, te.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Exchange(ctx, baseRequest(as), profileAllowed, actorAllowed)
		wantKind(t, err, te.KindCancelled)
		if n := as.requests.Load(); n != 0 {
			t.Errorf("requests = %d", n)
		}
	})
}

func TestExpiryComputation(t *testing.T) {
	t0 := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		expiresIn int // -1: omitted
		lifetime  time.Duration
		want      time.Time
	}{
		{"expires_in counts from the send time", 300, 0, t0.Add(300 * time.Second)},
		{"one second", 1, 0, t0.Add(time.Second)},
		{"omitted uses the conservative default", -1, 0, t0.Add(te.DefaultLifetime)},
		{"omitted uses the configured default", -1, 15 * time.Second, t0.Add(15 * time.Second)},
		{"configured default does not override expires_in", 900, 15 * time.Second, t0.Add(900 * time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			as.expiresIn = tc.expiresIn
			// The clock moves on while the request is served: the expiry
			// counts from the reading taken when it was sent.
			clk := testingclock.NewFakeClock(t0)
			as.onRequest = func() { clk.Step(time.Hour) }
			c := newClient(t, as, te.Options{Clock: clk, DefaultLifetime: tc.lifetime})
			tok, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
			if err != nil {
				t.Fatalf("Exchange: %v", err)
			}
			if !tok.ExpiresAt.Equal(tc.want) {
				t.Errorf("ExpiresAt = %v, want %v", tok.ExpiresAt, tc.want)
			}
		})
	}
	if te.DefaultLifetime > time.Minute {
		t.Errorf("DefaultLifetime %v is not conservative", te.DefaultLifetime)
	}
}

func TestCredential(t *testing.T) {
	exp := time.Date(2032, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := te.Token{Value: secret.New("abc.def"), Type: te.TokenTypeAccessToken, TokenType: te.BearerTokenType, ExpiresAt: exp}
	cred, err := tok.Credential()
	if err != nil {
		t.Fatalf("Credential: %v", err)
	}
	if cred.Header != "" || cred.Value.Reveal() != "abc.def" || !cred.Expires.Equal(exp) {
		t.Errorf("credential = header %q expires %v", cred.Header, cred.Expires)
	}

	tok.TokenType = te.NATokenType
	_, err = tok.Credential()
	wantKind(t, err, te.KindNotBearer)

	_, err = te.Token{TokenType: te.BearerTokenType}.Credential()
	wantKind(t, err, te.KindInvalidInput)
}

// TestExchangedTokenDrivesMCPClient proves the hand-off: the credential
// built from an exchanged token reaches the MCP server as a bearer token
// while valid, and the MCP client refuses it before any leg once expired.
func TestExchangedTokenDrivesMCPClient(t *testing.T) {
	as := newTestAS(t)
	t0 := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	c := newClient(t, as, te.Options{Clock: testingclock.NewFakePassiveClock(t0)})
	tok, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	cred, err := tok.Credential()
	if err != nil {
		t.Fatalf("Credential: %v", err)
	}

	var hits atomic.Int32
	var auth sync.Map
	mcpSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		auth.Store(r.Header.Get("Authorization"), true)
		http.Error(w, "not an MCP server", http.StatusServiceUnavailable)
	}))
	defer mcpSrv.Close()
	ep := mcp.Endpoint{Name: "test/mcp", URL: mcpSrv.URL + "/mcp", Credential: &cred, AllowPrivateNetwork: true, Timeout: 5 * time.Second}

	probe := func(now time.Time) error {
		client := mcp.New(mcp.Options{HTTPClient: mcpSrv.Client(), AllowPrivateNetworks: true, Clock: testingclock.NewFakePassiveClock(now)})
		_, err := client.Probe(context.Background(), ep)
		return err
	}

	// Expired: refused before any leg.
	err = probe(tok.ExpiresAt.Add(time.Second))
	if mcp.KindOf(err) != mcp.KindCredentialExpired {
		t.Fatalf("expired token: %v, want %s", err, mcp.KindCredentialExpired)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("MCP server received %d requests with an expired token", n)
	}

	// Valid: the server sees the exchanged token as a bearer credential.
	_ = probe(t0.Add(time.Second))
	if hits.Load() == 0 {
		t.Fatalf("MCP server received no request with a valid token")
	}
	if _, ok := auth.Load("Bearer " + tok.Value.Reveal()); !ok {
		t.Errorf("MCP server did not receive the exchanged token as a bearer credential")
	}
}

func TestConcurrentExchanges(t *testing.T) {
	as := newTestAS(t)
	c := newClient(t, as, te.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	values := make(chan string, 16)
	for range 16 {
		wg.Go(func() {
			tok, err := c.Exchange(context.Background(), baseRequest(as), profileAllowed, actorAllowed)
			errs <- err
			values <- tok.Value.Reveal()
		})
	}
	wg.Wait()
	close(errs)
	close(values)
	for err := range errs {
		if err != nil {
			t.Errorf("Exchange: %v", err)
		}
	}
	seen := map[string]bool{}
	for v := range values {
		if seen[v] {
			t.Errorf("two exchanges returned the same token")
		}
		seen[v] = true
		if _, ok := as.issuedToken(v); !ok {
			t.Errorf("token not issued by the endpoint")
		}
	}
	as.checkNoViolations(t)
}

func TestErrorKindsAndText(t *testing.T) {
	kinds := []te.Kind{
		te.KindInvalidInput, te.KindInsecureEndpoint, te.KindAudienceNotAllowed, te.KindScopeNotAllowed,
		te.KindUnreachable, te.KindTimeout, te.KindCancelled, te.KindRedirect, te.KindServerError,
		te.KindHTTPStatus, te.KindOversized, te.KindNotJSON, te.KindInvalidResponse,
		te.KindInvalidRequest, te.KindInvalidClient, te.KindInvalidGrant, te.KindUnauthorizedClient,
		te.KindUnsupportedGrantType, te.KindInvalidScope, te.KindInvalidTarget, te.KindUnknownOAuthError,
		te.KindNotBearer,
	}
	oauth := map[te.Kind]bool{
		te.KindInvalidRequest: true, te.KindInvalidClient: true, te.KindInvalidGrant: true, te.KindUnauthorizedClient: true,
		te.KindUnsupportedGrantType: true, te.KindInvalidScope: true, te.KindInvalidTarget: true, te.KindUnknownOAuthError: true,
	}
	texts := map[string]te.Kind{}
	unknown := (&te.Error{Kind: "NoSuchKind"}).Error()
	for _, k := range kinds {
		msg := (&te.Error{Kind: k}).Error()
		if msg == unknown {
			t.Errorf("kind %s has no phrase of its own", k)
		}
		if other, dup := texts[msg]; dup {
			t.Errorf("kinds %s and %s share the text %q", k, other, msg)
		}
		texts[msg] = k
		if te.IsOAuthError(k) != oauth[k] {
			t.Errorf("IsOAuthError(%s) = %v", k, !oauth[k])
		}
	}
	wrapped := fmt.Errorf("reconcile: %w", &te.Error{Kind: te.KindInvalidGrant, StatusCode: 400})
	if te.KindOf(wrapped) != te.KindInvalidGrant || te.KindOf(errors.New("x")) != "" || te.KindOf(nil) != "" {
		t.Errorf("KindOf does not follow the chain")
	}
	if got := wrapped.Error(); got != "reconcile: token exchange: OAuth error invalid_grant, HTTP 400" {
		t.Errorf("text = %q", got)
	}
}
