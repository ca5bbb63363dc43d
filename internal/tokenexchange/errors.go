package tokenexchange

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies a failed exchange. The values are CamelCase so a controller
// can use them directly as a Kubernetes condition reason.
type Kind string

// The kinds of failure. Each is decided from typed facts (a status code, a
// JSON member, a Go error type), never by matching text.
const (
	// KindInvalidInput: the Request or Options cannot be used (missing client
	// id, secret or subject token, unknown subject token type, malformed
	// scope, endpoint or resource URL). Nothing was sent.
	KindInvalidInput Kind = "InvalidInput"
	// KindInsecureEndpoint: the token endpoint is plain http and
	// Options.AllowHTTP is false. Nothing was sent.
	KindInsecureEndpoint Kind = "InsecureEndpoint"
	// KindAudienceNotAllowed: the audience is not in both allowed sets.
	// Nothing was sent.
	KindAudienceNotAllowed Kind = "AudienceNotAllowed"
	// KindScopeNotAllowed: a scope is not in both allowed sets. Nothing was
	// sent.
	KindScopeNotAllowed Kind = "ScopeNotAllowed"

	// KindUnreachable: no HTTP exchange completed (DNS, connect, TLS, reset).
	KindUnreachable Kind = "Unreachable"
	// KindBlockedAddress: the endpoint resolves to an address the egress
	// policy refuses (private outside the administrator's ranges, loopback,
	// link-local, metadata). Err is the *egress.BlockedAddressError.
	KindBlockedAddress Kind = "BlockedAddress"
	// KindUntrustedCertificate: the token endpoint's TLS certificate did not
	// verify against the trusted CAs (the request's bundle or the roots).
	KindUntrustedCertificate Kind = "UntrustedCertificate"
	// KindTimeout: the context's deadline or Options.Timeout passed.
	KindTimeout Kind = "Timeout"
	// KindCancelled: the caller cancelled the context.
	KindCancelled Kind = "Cancelled"
	// KindRedirect: HTTP 3xx; redirects are never followed, so the
	// credentials never reach the redirect target.
	KindRedirect Kind = "Redirect"
	// KindServerError: HTTP 5xx.
	KindServerError Kind = "ServerError"
	// KindHTTPStatus: any other unexpected status (a 4xx without an OAuth
	// error body, 1xx, a 2xx other than 200).
	KindHTTPStatus Kind = "HTTPStatus"
	// KindOversized: the response body exceeded Options.MaxResponseBytes.
	KindOversized Kind = "Oversized"
	// KindNotJSON: a 200 response that is not JSON (wrong content type, an
	// HTML page, unparsable bytes).
	KindNotJSON Kind = "NotJSON"
	// KindInvalidResponse: a 200 JSON response that is not a valid token
	// exchange response (see Detail), including a granted scope wider than
	// the allowed sets.
	KindInvalidResponse Kind = "InvalidResponse"

	// OAuth error responses (RFC 6749 §5.2, RFC 8693 §2.2.2), one kind per
	// registered error code.
	KindInvalidRequest       Kind = "InvalidRequest"
	KindInvalidClient        Kind = "InvalidClient"
	KindInvalidGrant         Kind = "InvalidGrant"
	KindUnauthorizedClient   Kind = "UnauthorizedClient"
	KindUnsupportedGrantType Kind = "UnsupportedGrantType"
	KindInvalidScope         Kind = "InvalidScope"
	KindInvalidTarget        Kind = "InvalidTarget"
	// KindUnknownOAuthError: a well-formed OAuth error response whose code is
	// not one of the above. The code itself is not kept (server bytes).
	KindUnknownOAuthError Kind = "UnknownOAuthError"

	// KindNotBearer: Token.Credential was asked for a token whose token_type
	// is N_A, which the issuer says is not usable as a bearer access token.
	KindNotBearer Kind = "NotBearer"
)

// oauthKinds maps the registered error codes to kinds.
var oauthKinds = map[string]Kind{
	"invalid_request":        KindInvalidRequest,
	"invalid_client":         KindInvalidClient,
	"invalid_grant":          KindInvalidGrant,
	"unauthorized_client":    KindUnauthorizedClient,
	"unsupported_grant_type": KindUnsupportedGrantType,
	"invalid_scope":          KindInvalidScope,
	"invalid_target":         KindInvalidTarget,
}

// Error is a failed exchange. Its text is fixed, client-authored wording: it
// never contains the server's bytes (no error_description, error_uri, body or
// Location), the endpoint URL, or any secret. Deliberately no field holds
// server-supplied text either, because a struct dump (%#v) of an error would
// print it, and an authorization server may echo a submitted token in its
// error_description.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// StatusCode is the HTTP status of the response, 0 when none arrived.
	StatusCode int
	// Limit is the byte cap, set for KindOversized.
	Limit int64
	// Detail is a short, fixed, client-authored phrase refining the kind.
	Detail string
	// Err is the underlying cause (context or transport error) for
	// errors.Is and errors.As. Its text is not part of Error(): transport
	// errors quote the URL.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("token exchange: ")
	b.WriteString(kindPhrase(e.Kind))
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", HTTP %d", e.StatusCode)
	}
	if e.Limit > 0 {
		fmt.Fprintf(&b, ", limit %d bytes", e.Limit)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of the first *Error in err's chain, or "" when err
// is nil or not from this package.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// IsOAuthError reports whether k came from an OAuth error response of the
// token endpoint (as opposed to a local refusal or a transport failure).
func IsOAuthError(k Kind) bool {
	if k == KindUnknownOAuthError {
		return true
	}
	for _, v := range oauthKinds {
		if v == k {
			return true
		}
	}
	return false
}

func kindPhrase(k Kind) string {
	switch k {
	case KindInvalidInput:
		return "request cannot be sent"
	case KindInsecureEndpoint:
		return "token endpoint is not https"
	case KindAudienceNotAllowed:
		return "audience not allowed"
	case KindScopeNotAllowed:
		return "scope not allowed"
	case KindUntrustedCertificate:
		return "token endpoint certificate not trusted"
	case KindUnreachable:
		return "token endpoint unreachable"
	case KindBlockedAddress:
		return "token endpoint address is blocked"
	case KindTimeout:
		return "timed out"
	case KindCancelled:
		return "cancelled"
	case KindRedirect:
		return "redirect refused"
	case KindServerError:
		return "token endpoint server error"
	case KindHTTPStatus:
		return "unexpected HTTP status"
	case KindOversized:
		return "response body too large"
	case KindNotJSON:
		return "response is not JSON"
	case KindInvalidResponse:
		return "invalid token response"
	case KindInvalidRequest:
		return "OAuth error invalid_request"
	case KindInvalidClient:
		return "OAuth error invalid_client"
	case KindInvalidGrant:
		return "OAuth error invalid_grant"
	case KindUnauthorizedClient:
		return "OAuth error unauthorized_client"
	case KindUnsupportedGrantType:
		return "OAuth error unsupported_grant_type"
	case KindInvalidScope:
		return "OAuth error invalid_scope"
	case KindInvalidTarget:
		return "OAuth error invalid_target"
	case KindUnknownOAuthError:
		return "OAuth error with an unregistered code"
	case KindNotBearer:
		return "token is not a bearer token"
	default:
		return "failed"
	}
}

// Fixed details. They are constants so a test can prove that no error
// detail is ever built from response bytes.
const (
	detailNoClientID          = "client id is empty"
	detailNoClientSecret      = "client secret is empty"
	detailNoSubjectToken      = "subject token is empty"
	detailSubjectTokenType    = "subject token type is not an RFC 8693 token type"
	detailNoAudience          = "audience is empty"
	detailBadScope            = "scope is not a valid scope token"
	detailBadResource         = "resource must be an absolute URI without fragment"
	detailBadEndpoint         = "token endpoint must be an absolute URL with a host, without userinfo or fragment"
	detailContentType         = "content type is not application/json"
	detailUnparsable          = "body is not valid JSON"
	detailNotObject           = "body is not a JSON object"
	detailAccessToken         = "access_token missing, empty or not a string"
	detailAccessTokenSyntax   = "access_token is not a valid bearer token value"
	detailIssuedTypeMissing   = "issued_token_type missing or not a string"
	detailIssuedTypeUnknown   = "issued_token_type is not a known token type"
	detailIssuedTypeUnusable  = "issued_token_type is not usable as an access token"
	detailTokenTypeMissing    = "token_type missing or not a string"
	detailTokenTypeUnknown    = "token_type is neither Bearer nor N_A"
	detailExpiresIn           = "expires_in is not a positive integer number of seconds"
	detailScopeType           = "scope is not a string"
	detailScopeSyntax         = "scope contains an invalid scope token"
	detailScopeWidened        = "granted scope exceeds the allowed scopes"
	detailErrorMember         = "success response carries an error member"
	detailEmptyTokenValue     = "token value is empty"
	detailHTTPClientAndRootCA = "HTTPClient and RootCAs are mutually exclusive"
	detailTransportTrust      = "the HTTP client's transport cannot take a CA bundle"
)
