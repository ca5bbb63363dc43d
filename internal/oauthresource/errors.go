package oauthresource

import (
	"fmt"
	"strconv"
	"time"
)

// Reason says why a token was refused. The values are CamelCase, so that
// the gateway can use them as a metric label or an audit reason as they
// are.
type Reason string

// The reasons a token is refused. Each is decided from a typed fact (a Go
// error type or sentinel of go-jose, a claim's value), never from text.
const (
	// ReasonMalformed: not a compact JWS with a JSON claims object, or
	// larger than a token may be.
	ReasonMalformed Reason = "Malformed"
	// ReasonAlgorithm: the header names an algorithm outside the
	// allow-list: "none", an HMAC (HS256, ...) or anything unknown.
	ReasonAlgorithm Reason = "AlgorithmNotAllowed"
	// ReasonUnknownIssuer: the iss claim is not an issuer the
	// administrator configured.
	ReasonUnknownIssuer Reason = "UnknownIssuer"
	// ReasonUnknownKey: the header names a key id the issuer does not
	// publish, even after its keys were fetched again (or while they may
	// not be fetched again yet).
	ReasonUnknownKey Reason = "UnknownKey"
	// ReasonSignature: no key of the issuer verifies the signature,
	// though the key id is one it publishes (or the token names none).
	ReasonSignature Reason = "BadSignature"
	// ReasonExpired: exp is past, beyond the clock skew allowed.
	ReasonExpired Reason = "Expired"
	// ReasonNotYetValid: nbf or iat is in the future, beyond the skew.
	ReasonNotYetValid Reason = "NotYetValid"
	// ReasonAudience: aud names neither the gateway's resource URI nor
	// another audience configured for the issuer: a token minted for
	// another resource or client.
	ReasonAudience Reason = "WrongAudience"
	// ReasonClaims: a claim the identity is made of is missing or unusable
	// (no exp, no subject, a username or group the mapping cannot make,
	// one in the reserved system: namespace, an unverified email).
	ReasonClaims Reason = "BadClaims"
)

// TokenError is a refused token: the caller gets 401 with an
// invalid_token challenge. The message names the reason and, where it
// helps an administrator, the issuer or the claim; it never holds the
// token, and anything read from the token is quoted and cut short.
type TokenError struct {
	Reason Reason
	// Issuer is the configured issuer the token claimed, when known.
	Issuer string
	detail string
}

func (e *TokenError) Error() string {
	msg := "access token refused (" + string(e.Reason) + ")"
	if e.Issuer != "" {
		msg += " for issuer " + e.Issuer
	}
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

// Is makes errors.Is(err, ErrExpired) and the like true for every
// TokenError of that reason.
func (e *TokenError) Is(target error) bool {
	t, ok := target.(*TokenError)
	return ok && t.Reason == e.Reason && t.Issuer == "" && t.detail == ""
}

// Sentinels for errors.Is, one per reason.
var (
	ErrMalformed     = &TokenError{Reason: ReasonMalformed}
	ErrAlgorithm     = &TokenError{Reason: ReasonAlgorithm}
	ErrUnknownIssuer = &TokenError{Reason: ReasonUnknownIssuer}
	ErrUnknownKey    = &TokenError{Reason: ReasonUnknownKey}
	ErrSignature     = &TokenError{Reason: ReasonSignature}
	ErrExpired       = &TokenError{Reason: ReasonExpired}
	ErrNotYetValid   = &TokenError{Reason: ReasonNotYetValid}
	ErrAudience      = &TokenError{Reason: ReasonAudience}
	ErrClaims        = &TokenError{Reason: ReasonClaims}
)

func refused(r Reason, issuer, format string, args ...any) *TokenError {
	return &TokenError{Reason: r, Issuer: issuer, detail: fmt.Sprintf(format, args...)}
}

// UnavailableError: the token could not be checked because its issuer's
// discovery document or keys could not be fetched (unreachable, an error
// status, an unusable answer), or may not be fetched again yet after such
// a failure. It is not the token's fault: the gateway answers 503 with
// Retry-After, and does not remember the token as bad.
type UnavailableError struct {
	Issuer string
	// RetryAfter is when asking again may succeed: the time left until the
	// issuer may be asked again, at least a second.
	RetryAfter time.Duration
	stage      string
	cause      error
}

func (e *UnavailableError) Error() string {
	return "the identity provider " + e.Issuer + " could not be reached to check the token (" + e.stage + "); try again"
}

// Unwrap gives the cause to errors.Is and errors.As (a context's error, a
// *url.Error). Its text may hold the identity provider's URLs; it never
// holds the token.
func (e *UnavailableError) Unwrap() error { return e.cause }

// RetryAfterSeconds is RetryAfter as the Retry-After header writes it.
func (e *UnavailableError) RetryAfterSeconds() string {
	s := int64((e.RetryAfter + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// quote shows a value read from a token in an error: quoted, and cut to
// a length that identifies it without letting a token fill a log.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
