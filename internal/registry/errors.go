package registry

import (
	"errors"
	"fmt"
)

// Reason says why a registry request failed; callers branch on it.
type Reason string

// Reasons of an Error.
const (
	// ReasonInvalidURL: the registry URL is not an absolute http(s) URL
	// without user information, query or fragment.
	ReasonInvalidURL Reason = "InvalidURL"
	// ReasonUnreachable: no answer (connection refused, DNS, TLS).
	ReasonUnreachable Reason = "Unreachable"
	// ReasonTimeout: the request's time ran out.
	ReasonTimeout Reason = "Timeout"
	// ReasonNotFound: the registry answered 404.
	ReasonNotFound Reason = "NotFound"
	// ReasonRedirect: the registry answered with a redirect, which is
	// never followed.
	ReasonRedirect Reason = "Redirect"
	// ReasonStatus: any other status than 200.
	ReasonStatus Reason = "UnexpectedStatus"
	// ReasonTooLarge: the answer is larger than the client's byte bound.
	ReasonTooLarge Reason = "TooLarge"
	// ReasonMalformed: the answer is not the JSON the API prescribes.
	ReasonMalformed Reason = "Malformed"
	// ReasonCursorLoop: a page named a cursor already followed.
	ReasonCursorLoop Reason = "CursorLoop"
	// ReasonTooManyPages: the page or result ceiling was reached.
	ReasonTooManyPages Reason = "TooManyPages"
	// ReasonNotImportable: the server has no remote the operator can use.
	ReasonNotImportable Reason = "NotImportable"
	// ReasonChoiceMissing: an import lacks the data class or the approval
	// choice, which only a person can make.
	ReasonChoiceMissing Reason = "ChoiceMissing"
)

// Error is every failure of this package. It names the registry's host and
// what was asked, never bytes of the answer.
type Error struct {
	Reason Reason
	// Host is the registry's host (and port).
	Host string
	// Op says what was asked, for example "list servers".
	Op string
	// StatusCode is the HTTP status, when the registry answered.
	StatusCode int
	// Detail is this package's own words about the failure.
	Detail string
	Err    error
}

func (e *Error) Error() string {
	msg := "registry"
	if e.Host != "" {
		msg += " " + e.Host
	}
	msg += fmt.Sprintf(": %s: %s", e.Op, e.Reason)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// IsReason says whether err is an Error with reason r.
func IsReason(err error, r Reason) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == r
}
