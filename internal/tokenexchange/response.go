package tokenexchange

import (
	"bytes"
	"encoding/json"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-catalog/operator/internal/secret"
)

// Token types of the token_type member as this package reports them.
const (
	BearerTokenType = "Bearer"
	NATokenType     = "N_A"
)

// maxExpiresIn bounds expires_in so the lifetime always fits a
// time.Duration; 2^31-1 seconds is about 68 years.
const maxExpiresIn = 1<<31 - 1

// Token is an issued token.
type Token struct {
	// Value is the access token.
	Value secret.Secret
	// Type is the issued_token_type (TokenTypeAccessToken or TokenTypeJWT).
	Type string
	// TokenType is the normalised token_type: BearerTokenType or
	// NATokenType.
	TokenType string
	// ExpiresAt is when the token must no longer be used: the time the
	// request was sent plus expires_in (or the default lifetime).
	ExpiresAt time.Time
	// Scope is the granted scope: the response's scope member, or the
	// requested scopes when the issuer omitted it (RFC 8693 §2.2.1 allows
	// that only when they are identical).
	Scope []string
}

// Credential turns the token into what the MCP client attaches to each leg:
// "Authorization: Bearer <token>" with Expires set, so the client refuses the
// token before any leg once it has expired.
func (t Token) Credential() (secret.Credential, error) {
	if t.TokenType != BearerTokenType {
		return secret.Credential{}, &Error{Kind: KindNotBearer}
	}
	if t.Value.IsZero() {
		return secret.Credential{}, &Error{Kind: KindInvalidInput, Detail: detailEmptyTokenValue}
	}
	return secret.Credential{Value: t.Value, Expires: t.ExpiresAt}, nil
}

// jsonContentType reports whether a Content-Type header names JSON.
func jsonContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// decodeObject parses body as one JSON object.
func decodeObject(ct string, body []byte, status int) (map[string]json.RawMessage, error) {
	if !jsonContentType(ct) {
		return nil, &Error{Kind: KindNotJSON, StatusCode: status, Detail: detailContentType}
	}
	if !json.Valid(body) {
		return nil, &Error{Kind: KindNotJSON, StatusCode: status, Detail: detailUnparsable}
	}
	var m map[string]json.RawMessage
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(body, &m) != nil {
		return nil, &Error{Kind: KindInvalidResponse, StatusCode: status, Detail: detailNotObject}
	}
	return m, nil
}

// jsonString decodes raw as a JSON string; null and other types fail.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeSuccess validates a 200 response body (RFC 8693 §2.2.1). requested
// is what was asked for; it stands in for an absent scope member.
func decodeSuccess(ct string, body []byte, sentAt time.Time, defaultLifetime time.Duration, requested []string) (Token, error) {
	const status = 200
	fail := func(d string) (Token, error) {
		return Token{}, &Error{Kind: KindInvalidResponse, StatusCode: status, Detail: d}
	}
	m, err := decodeObject(ct, body, status)
	if err != nil {
		return Token{}, err
	}
	if _, ok := m["error"]; ok {
		return fail(detailErrorMember)
	}

	value, ok := jsonString(m["access_token"])
	if !ok || value == "" {
		return fail(detailAccessToken)
	}

	issued, ok := jsonString(m["issued_token_type"])
	switch {
	case !ok:
		return fail(detailIssuedTypeMissing)
	case !knownTokenType(issued):
		return fail(detailIssuedTypeUnknown)
	case issued != TokenTypeAccessToken && issued != TokenTypeJWT:
		// We always request an access token; an id_token, refresh token or
		// SAML assertion presented as a bearer credential would be misuse.
		return fail(detailIssuedTypeUnusable)
	}

	tt, ok := jsonString(m["token_type"])
	switch {
	case !ok:
		return fail(detailTokenTypeMissing)
	case strings.EqualFold(tt, BearerTokenType):
		tt = BearerTokenType
		if !validBearerValue(value) {
			// It goes into an Authorization header; anything outside the
			// b64token syntax could break or inject header content.
			return fail(detailAccessTokenSyntax)
		}
	case strings.EqualFold(tt, NATokenType):
		tt = NATokenType
	default:
		return fail(detailTokenTypeUnknown)
	}

	lifetime := defaultLifetime
	if raw, present := m["expires_in"]; present {
		// RFC 6749 Appendix A.14: expires-in = 1*DIGIT. Strings, fractions,
		// exponents, zero, negatives and null are refused, not guessed at.
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n <= 0 || n > maxExpiresIn || !allDigits(raw) {
			return fail(detailExpiresIn)
		}
		lifetime = time.Duration(n) * time.Second
	}

	scope := append([]string(nil), requested...)
	if raw, present := m["scope"]; present {
		s, ok := jsonString(raw)
		if !ok {
			return fail(detailScopeType)
		}
		scope = []string{}
		for _, part := range strings.Split(s, " ") {
			if part == "" {
				continue
			}
			if !validScopeToken(part) {
				return fail(detailScopeSyntax)
			}
			scope = append(scope, part)
		}
	}

	return Token{
		Value:     secret.New(value),
		Type:      issued,
		TokenType: tt,
		ExpiresAt: sentAt.Add(lifetime),
		Scope:     scope,
	}, nil
}

// decodeOAuthError maps a 4xx response. A JSON object with a string error
// member is an OAuth error response (RFC 6749 §5.2); anything else is only an
// unexpected status. No byte of the body is kept.
func decodeOAuthError(status int, ct string, body []byte) error {
	m, err := decodeObject(ct, body, status)
	if err != nil {
		return &Error{Kind: KindHTTPStatus, StatusCode: status}
	}
	code, ok := jsonString(m["error"])
	if !ok || code == "" {
		return &Error{Kind: KindHTTPStatus, StatusCode: status}
	}
	if k, known := oauthKinds[code]; known {
		return &Error{Kind: k, StatusCode: status}
	}
	return &Error{Kind: KindUnknownOAuthError, StatusCode: status}
}

// validBearerValue implements RFC 6750 §2.1:
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func validBearerValue(s string) bool {
	s = strings.TrimRight(s, "=")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/':
		default:
			return false
		}
	}
	return true
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
