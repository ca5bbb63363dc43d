package tokenexchange

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var sentAt = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

const (
	at  = `"access_token":"eyJhbGciOi.eyJzdWIiOi.c2ln"`
	itt = `"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"`
	tt  = `"token_type":"Bearer"`
)

func obj(members ...string) string { return "{" + strings.Join(members, ",") + "}" }

func TestDecodeSuccessTable(t *testing.T) {
	requested := []string{"records.read"}
	cases := []struct {
		name   string
		ct     string
		body   string
		kind   Kind
		detail string
		check  func(t *testing.T, tok Token)
	}{
		{name: "minimal", body: obj(at, itt, tt), check: func(t *testing.T, tok Token) {
			if tok.Value.Reveal() != "eyJhbGciOi.eyJzdWIiOi.c2ln" || tok.Type != TokenTypeAccessToken || tok.TokenType != BearerTokenType {
				t.Errorf("token %+v", tok)
			}
			if !tok.ExpiresAt.Equal(sentAt.Add(DefaultLifetime)) {
				t.Errorf("ExpiresAt %v", tok.ExpiresAt)
			}
			if !slices.Equal(tok.Scope, requested) {
				t.Errorf("absent scope should be the requested one, got %v", tok.Scope)
			}
		}},
		{name: "jwt issued type", body: obj(at, `"issued_token_type":"urn:ietf:params:oauth:token-type:jwt"`, tt), check: func(t *testing.T, tok Token) {
			if tok.Type != TokenTypeJWT {
				t.Errorf("Type %q", tok.Type)
			}
		}},
		{name: "bearer any case", body: obj(at, itt, `"token_type":"bEaReR"`), check: func(t *testing.T, tok Token) {
			if tok.TokenType != BearerTokenType {
				t.Errorf("TokenType %q", tok.TokenType)
			}
		}},
		{name: "N_A any case", body: obj(`"access_token":"opaque value with spaces"`, itt, `"token_type":"n_a"`), check: func(t *testing.T, tok Token) {
			if tok.TokenType != NATokenType {
				t.Errorf("TokenType %q", tok.TokenType)
			}
		}},
		{name: "expires_in", body: obj(at, itt, tt, `"expires_in":3600`), check: func(t *testing.T, tok Token) {
			if !tok.ExpiresAt.Equal(sentAt.Add(time.Hour)) {
				t.Errorf("ExpiresAt %v", tok.ExpiresAt)
			}
		}},
		{name: "expires_in at the bound", body: obj(at, itt, tt, `"expires_in":`+strconv.Itoa(maxExpiresIn))},
		{name: "scope parsed", body: obj(at, itt, tt, `"scope":"a  b c"`), check: func(t *testing.T, tok Token) {
			if !slices.Equal(tok.Scope, []string{"a", "b", "c"}) {
				t.Errorf("Scope %v", tok.Scope)
			}
		}},
		{name: "empty scope grants nothing", body: obj(at, itt, tt, `"scope":""`), check: func(t *testing.T, tok Token) {
			if tok.Scope == nil || len(tok.Scope) != 0 {
				t.Errorf("Scope %#v", tok.Scope)
			}
		}},
		{name: "refresh token ignored", body: obj(at, itt, tt, `"refresh_token":"rt"`)},
		{name: "unknown members ignored", body: obj(at, itt, tt, `"x":{"y":[1,2]}`)},
		{name: "bearer padding", body: obj(`"access_token":"YWJj=="`, itt, tt)},

		{name: "wrong content type", ct: "text/plain", body: obj(at, itt, tt), kind: KindNotJSON, detail: detailContentType},
		{name: "json-ish content type", ct: "application/jsonp", body: obj(at, itt, tt), kind: KindNotJSON, detail: detailContentType},
		{name: "broken json", body: `{"access_token":`, kind: KindNotJSON, detail: detailUnparsable},
		{name: "trailing garbage", body: obj(at, itt, tt) + "x", kind: KindNotJSON, detail: detailUnparsable},
		{name: "two objects", body: obj(at, itt, tt) + obj(at, itt, tt), kind: KindNotJSON, detail: detailUnparsable},
		{name: "string", body: `"token"`, kind: KindInvalidResponse, detail: detailNotObject},
		{name: "number", body: `42`, kind: KindInvalidResponse, detail: detailNotObject},
		{name: "error member", body: obj(at, itt, tt, `"error":null`), kind: KindInvalidResponse, detail: detailErrorMember},
		{name: "no access_token", body: obj(itt, tt), kind: KindInvalidResponse, detail: detailAccessToken},
		{name: "empty access_token", body: obj(`"access_token":""`, itt, tt), kind: KindInvalidResponse, detail: detailAccessToken},
		{name: "null access_token", body: obj(`"access_token":null`, itt, tt), kind: KindInvalidResponse, detail: detailAccessToken},
		{name: "numeric access_token", body: obj(`"access_token":12345`, itt, tt), kind: KindInvalidResponse, detail: detailAccessToken},
		{name: "object access_token", body: obj(`"access_token":{"v":"x"}`, itt, tt), kind: KindInvalidResponse, detail: detailAccessToken},
		{name: "bearer with space", body: obj(`"access_token":"a b"`, itt, tt), kind: KindInvalidResponse, detail: detailAccessTokenSyntax},
		{name: "bearer with CRLF", body: obj(`"access_token":"a\r\nb"`, itt, tt), kind: KindInvalidResponse, detail: detailAccessTokenSyntax},
		{name: "bearer only padding", body: obj(`"access_token":"=="`, itt, tt), kind: KindInvalidResponse, detail: detailAccessTokenSyntax},
		{name: "bearer padding inside", body: obj(`"access_token":"a=b"`, itt, tt), kind: KindInvalidResponse, detail: detailAccessTokenSyntax},
		{name: "bearer non-ascii", body: obj(`"access_token":"tökén"`, itt, tt), kind: KindInvalidResponse, detail: detailAccessTokenSyntax},
		{name: "no issued_token_type", body: obj(at, tt), kind: KindInvalidResponse, detail: detailIssuedTypeMissing},
		{name: "issued_token_type number", body: obj(at, `"issued_token_type":1`, tt), kind: KindInvalidResponse, detail: detailIssuedTypeMissing},
		{name: "issued_token_type unknown", body: obj(at, `"issued_token_type":"urn:x:y"`, tt), kind: KindInvalidResponse, detail: detailIssuedTypeUnknown},
		{name: "issued_token_type wrong case", body: obj(at, `"issued_token_type":"URN:IETF:PARAMS:OAUTH:TOKEN-TYPE:ACCESS_TOKEN"`, tt), kind: KindInvalidResponse, detail: detailIssuedTypeUnknown},
		{name: "issued id_token", body: obj(at, `"issued_token_type":"urn:ietf:params:oauth:token-type:id_token"`, tt), kind: KindInvalidResponse, detail: detailIssuedTypeUnusable},
		{name: "issued refresh_token", body: obj(at, `"issued_token_type":"urn:ietf:params:oauth:token-type:refresh_token"`, tt), kind: KindInvalidResponse, detail: detailIssuedTypeUnusable},
		{name: "issued saml2", body: obj(at, `"issued_token_type":"urn:ietf:params:oauth:token-type:saml2"`, tt), kind: KindInvalidResponse, detail: detailIssuedTypeUnusable},
		{name: "no token_type", body: obj(at, itt), kind: KindInvalidResponse, detail: detailTokenTypeMissing},
		{name: "token_type null", body: obj(at, itt, `"token_type":null`), kind: KindInvalidResponse, detail: detailTokenTypeMissing},
		{name: "token_type DPoP", body: obj(at, itt, `"token_type":"DPoP"`), kind: KindInvalidResponse, detail: detailTokenTypeUnknown},
		{name: "token_type empty", body: obj(at, itt, `"token_type":""`), kind: KindInvalidResponse, detail: detailTokenTypeUnknown},
		{name: "token_type padded", body: obj(at, itt, `"token_type":" Bearer"`), kind: KindInvalidResponse, detail: detailTokenTypeUnknown},
		{name: "expires_in zero", body: obj(at, itt, tt, `"expires_in":0`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in negative", body: obj(at, itt, tt, `"expires_in":-5`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in fraction", body: obj(at, itt, tt, `"expires_in":1.5`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in exponent", body: obj(at, itt, tt, `"expires_in":1e3`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in string", body: obj(at, itt, tt, `"expires_in":"3600"`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in null", body: obj(at, itt, tt, `"expires_in":null`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in above the bound", body: obj(at, itt, tt, `"expires_in":`+strconv.Itoa(maxExpiresIn+1)), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "expires_in beyond int64", body: obj(at, itt, tt, `"expires_in":99999999999999999999999`), kind: KindInvalidResponse, detail: detailExpiresIn},
		{name: "scope array", body: obj(at, itt, tt, `"scope":["a"]`), kind: KindInvalidResponse, detail: detailScopeType},
		{name: "scope null", body: obj(at, itt, tt, `"scope":null`), kind: KindInvalidResponse, detail: detailScopeType},
		{name: "scope with tab", body: obj(at, itt, tt, `"scope":"a\tb"`), kind: KindInvalidResponse, detail: detailScopeSyntax},
		{name: "scope with quote", body: obj(at, itt, tt, `"scope":"a\"b"`), kind: KindInvalidResponse, detail: detailScopeSyntax},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.ct
			if ct == "" {
				ct = "application/json"
			}
			tok, err := decodeSuccess(ct, []byte(tc.body), sentAt, DefaultLifetime, requested)
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if tc.check != nil {
					tc.check(t, tok)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != tc.kind || e.Detail != tc.detail {
				t.Fatalf("err = %v, want %s / %q", err, tc.kind, tc.detail)
			}
			if !tok.Value.IsZero() {
				t.Errorf("token returned with an error")
			}
		})
	}
}

func TestDecodeOAuthErrorTable(t *testing.T) {
	cases := []struct {
		ct, body string
		kind     Kind
	}{
		{"application/json", `{"error":"invalid_request"}`, KindInvalidRequest},
		{"application/json", `{"error":"invalid_client"}`, KindInvalidClient},
		{"application/json", `{"error":"invalid_grant","error_description":"x"}`, KindInvalidGrant},
		{"application/json", `{"error":"unauthorized_client"}`, KindUnauthorizedClient},
		{"application/json", `{"error":"unsupported_grant_type"}`, KindUnsupportedGrantType},
		{"application/json", `{"error":"invalid_scope"}`, KindInvalidScope},
		{"application/json", `{"error":"invalid_target"}`, KindInvalidTarget},
		{"application/json", `{"error":"temporarily_unavailable"}`, KindUnknownOAuthError},
		{"application/json", `{"error":"INVALID_GRANT"}`, KindUnknownOAuthError},
		{"application/json", `{"error":""}`, KindHTTPStatus},
		{"application/json", `{"error":null}`, KindHTTPStatus},
		{"application/json", `{"error":["invalid_grant"]}`, KindHTTPStatus},
		{"application/json", `{}`, KindHTTPStatus},
		{"application/json", `[{"error":"invalid_grant"}]`, KindHTTPStatus},
		{"application/json", `not json`, KindHTTPStatus},
		{"text/html", `{"error":"invalid_grant"}`, KindHTTPStatus},
	}
	for _, tc := range cases {
		err := decodeOAuthError(400, tc.ct, []byte(tc.body))
		var e *Error
		if !errors.As(err, &e) || e.Kind != tc.kind || e.StatusCode != 400 || e.Detail != "" {
			t.Errorf("%s %s: err = %v, want %s", tc.ct, tc.body, err, tc.kind)
		}
	}
}

// details is every Detail this package can produce. The fuzz target checks
// membership, which proves no detail is ever assembled from response bytes.
var details = []string{
	"", detailNoClientID, detailNoClientSecret, detailNoSubjectToken, detailSubjectTokenType, detailNoAudience,
	detailBadScope, detailBadResource, detailBadEndpoint, detailContentType, detailUnparsable, detailNotObject,
	detailAccessToken, detailAccessTokenSyntax, detailIssuedTypeMissing, detailIssuedTypeUnknown,
	detailIssuedTypeUnusable, detailTokenTypeMissing, detailTokenTypeUnknown, detailExpiresIn, detailScopeType,
	detailScopeSyntax, detailScopeWidened, detailErrorMember, detailEmptyTokenValue, detailHTTPClientAndRootCA,
}

func FuzzDecodeResponse(f *testing.F) {
	seeds := []string{
		obj(at, itt, tt),
		obj(at, itt, tt, `"expires_in":3600`, `"scope":"a b"`),
		obj(at, `"issued_token_type":"urn:ietf:params:oauth:token-type:jwt"`, `"token_type":"n_a"`),
		obj(at, itt, tt, `"expires_in":1.5`),
		obj(at, itt, tt, `"expires_in":"60"`),
		obj(at, itt, tt, `"expires_in":99999999999999999999`),
		obj(`"access_token":"a\r\nb"`, itt, tt),
		obj(at, itt, tt, `"error":"invalid_grant"`),
		`{"error":"invalid_grant","error_description":"nope"}`,
		`{"error":"invalid_target"}`,
		`[1,2,3]`, `null`, `"x"`, ``, `{`, `<html>down</html>`,
		"\xef\xbb\xbf" + obj(at, itt, tt),
	}
	for _, s := range seeds {
		f.Add(s, "application/json")
	}
	f.Add(obj(at, itt, tt), "text/html")
	f.Fuzz(func(t *testing.T, body, ct string) {
		tok, err := decodeSuccess(ct, []byte(body), sentAt, DefaultLifetime, []string{"r"})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Kind != KindNotJSON && e.Kind != KindInvalidResponse) {
				t.Fatalf("unexpected error %v", err)
			}
			if !slices.Contains(details, e.Detail) {
				t.Fatalf("detail %q is not a fixed phrase", e.Detail)
			}
			if !tok.Value.IsZero() {
				t.Fatal("token returned with an error")
			}
		} else {
			if tok.Value.IsZero() || !knownTokenType(tok.Type) || !tok.ExpiresAt.After(sentAt) {
				t.Fatalf("accepted an invalid token: %+v", tok)
			}
			if tok.TokenType != BearerTokenType && tok.TokenType != NATokenType {
				t.Fatalf("token_type %q", tok.TokenType)
			}
			if tok.TokenType == BearerTokenType && !validBearerValue(tok.Value.Reveal()) {
				t.Fatal("bearer value outside b64token accepted")
			}
			for _, s := range tok.Scope {
				if !validScopeToken(s) {
					t.Fatalf("scope %q accepted", s)
				}
			}
		}

		err = decodeOAuthError(400, ct, []byte(body))
		var e *Error
		if !errors.As(err, &e) || e.Detail != "" || e.StatusCode != 400 {
			t.Fatalf("oauth error decode: %v", err)
		}
		if e.Kind != KindHTTPStatus && !IsOAuthError(e.Kind) {
			t.Fatalf("oauth error kind %s", e.Kind)
		}
	})
}
