package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind classifies a failed operation. The values are CamelCase so a controller
// can use them directly as a Kubernetes condition reason.
type Kind string

// The kinds of failure an operation can end in. Each is decided from typed
// facts (a status code, a JSON-RPC field, a Go error type), never by matching
// text.
const (
	// KindInvalidEndpoint: the Endpoint itself is unusable (URL, scheme,
	// userinfo in the URL, credential header name or value).
	KindInvalidEndpoint Kind = "InvalidEndpoint"
	// KindInvalidArgument: the caller's input cannot be sent (a tool name that
	// fails ValidToolName, arguments that do not encode as JSON).
	KindInvalidArgument Kind = "InvalidArgument"
	// KindUnreachable: no HTTP exchange completed (DNS, connect, TLS, reset).
	KindUnreachable Kind = "Unreachable"
	// KindUntrustedCertificate: the TLS handshake failed because the
	// server's certificate did not verify (unknown authority, wrong host,
	// expired): the server is up, but not the one the trust anchors vouch
	// for.
	KindUntrustedCertificate Kind = "UntrustedCertificate"
	// KindBlockedAddress: the dialer refused the resolved address (SSRF guard).
	KindBlockedAddress Kind = "BlockedAddress"
	// KindBudgetExhausted: the operation's time budget ran out, either before
	// a leg could be sent or while a leg was in flight.
	KindBudgetExhausted Kind = "BudgetExhausted"
	// KindCancelled: the caller's context ended the operation.
	KindCancelled Kind = "Cancelled"
	// KindUnauthorized: HTTP 401.
	KindUnauthorized Kind = "Unauthorized"
	// KindForbidden: HTTP 403.
	KindForbidden Kind = "Forbidden"
	// KindServerError: HTTP 5xx.
	KindServerError Kind = "ServerError"
	// KindRedirect: HTTP 3xx; redirects are never followed.
	KindRedirect Kind = "Redirect"
	// KindHTTPStatus: any other unexpected HTTP status (other 4xx, 1xx, odd 2xx).
	KindHTTPStatus Kind = "HTTPStatus"
	// KindSessionExpired: HTTP 404 on a request that carried a session id.
	KindSessionExpired Kind = "SessionExpired"
	// KindRPCError: the server answered with a JSON-RPC error object.
	KindRPCError Kind = "RPCError"
	// KindNotMCP: the body is not JSON-RPC at all (an HTML maintenance page,
	// plain text, a JSON body that is not an object).
	KindNotMCP Kind = "NotMCP"
	// KindNoResponse: the body held no response to our request (an event
	// stream with only notifications, a lone notification).
	KindNoResponse Kind = "NoResponse"
	// KindInvalidResponse: a response that breaks the strictness rules
	// (jsonrpc member, id, result/error exclusivity, result shape, a second or
	// foreign response, fields of the wrong type).
	KindInvalidResponse Kind = "InvalidResponse"
	// KindEmptyBody: a response was required and the body was empty.
	KindEmptyBody Kind = "EmptyBody"
	// KindOversized: the body exceeded the read cap.
	KindOversized Kind = "Oversized"
	// KindUnsupportedVersion: no protocol version both sides speak.
	KindUnsupportedVersion Kind = "UnsupportedVersion"
	// KindInputRequired: a 2026-07-28 server asked for client input
	// (resultType "input_required"); this client declares no capabilities and
	// provides none.
	KindInputRequired Kind = "InputRequired"
	// KindTasksUnsupported: a task-augmented request to a server of a
	// revision whose tasks this client does not speak (2026-07-28's
	// extension), or whose answer held no task.
	KindTasksUnsupported Kind = "TasksUnsupported"
	// KindInsecureCredential: a credential would travel over plain http
	// without the explicit opt-in, or to a host other than the endpoint's.
	KindInsecureCredential Kind = "InsecureCredential"
	// KindCredentialExpired: the credential's expiry passed before a leg.
	KindCredentialExpired Kind = "CredentialExpired"
	// KindPageLimit: tools/list still had a next page at the page ceiling.
	KindPageLimit Kind = "PageLimit"
	// KindRepeatedCursor: tools/list returned a cursor it had returned before.
	KindRepeatedCursor Kind = "RepeatedCursor"
	// KindToolLimit: tools/list offered more tools than the tool ceiling.
	KindToolLimit Kind = "ToolLimit"
	// KindCatalogTooLarge: the definitions tools/list offered exceed the
	// catalog byte budget (Endpoint.MaxCatalogBytes); Limit is the budget.
	KindCatalogTooLarge Kind = "CatalogTooLarge"
	// KindNotOffered: the server offers no notifications of tool list
	// changes (ListenTools): it does not declare tools.listChanged, answers
	// the stream request with 405, or does not agree to toolsListChanged.
	KindNotOffered Kind = "NotOffered"
	// KindStreamEnded: the server ended a listening stream.
	KindStreamEnded Kind = "StreamEnded"
)

// Error is the failure of one MCP operation. Its Error text names the server
// (Endpoint.Name) and the kind with fixed, client-authored wording; it never
// contains bytes the server sent, the endpoint URL or a credential. Server
// supplied details are kept in fields for callers that want them.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// Server is Endpoint.Name of the server the operation talked to.
	Server string
	// Method is the JSON-RPC method (or "DELETE") of the leg that failed,
	// empty when the failure happened before any leg.
	Method string
	// StatusCode is the HTTP status of the failing response, 0 when none.
	StatusCode int
	// RPCCode is the JSON-RPC error code when the server sent an error object
	// (also filled for non-2xx statuses whose body carried one).
	RPCCode int
	// RPCMessage is the server's JSON-RPC error message. It is server bytes:
	// never put it in a condition message or a log line without care.
	RPCMessage string
	// RPCData is the server's JSON-RPC error data, verbatim.
	RPCData json.RawMessage
	// InputRequired is the input_required result as the server sent it,
	// set for KindInputRequired. It is server bytes, like RPCMessage.
	InputRequired json.RawMessage
	// Budget is the operation's whole budget, set for KindBudgetExhausted.
	Budget time.Duration
	// Limit is the ceiling that was hit, set for KindPageLimit, KindToolLimit,
	// KindOversized (bytes) and KindCatalogTooLarge (bytes).
	Limit int
	// Challenged is set on KindUnauthorized when the 401 carried a
	// WWW-Authenticate challenge: the server is up and asks for a
	// credential, as an OAuth-protected MCP server does.
	Challenged bool
	// Detail is a short, fixed, client-authored phrase refining the kind (for
	// example which strictness rule a response broke). Never server bytes.
	Detail string
	// Err is the underlying cause (a context error, a dial error), for
	// errors.Is / errors.As. Its text is deliberately not part of Error():
	// transport errors quote the URL, which may carry secrets.
	Err error
}

// Error implements error with client-authored text only.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("mcp server ")
	b.WriteString(strconv.Quote(e.Server))
	b.WriteString(": ")
	b.WriteString(kindPhrase(e.Kind))
	if e.Method != "" {
		b.WriteString(" (")
		b.WriteString(e.Method)
		b.WriteString(")")
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", HTTP %d", e.StatusCode)
	}
	if e.RPCCode != 0 {
		fmt.Fprintf(&b, ", JSON-RPC error %d", e.RPCCode)
	}
	if e.Kind == KindBudgetExhausted && e.Budget > 0 {
		fmt.Fprintf(&b, ", operation budget %s", e.Budget)
	}
	if e.Limit > 0 {
		fmt.Fprintf(&b, ", limit %d", e.Limit)
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

// kindPhrase is the fixed wording for each kind.
func kindPhrase(k Kind) string {
	switch k {
	case KindInvalidEndpoint:
		return "endpoint configuration is invalid"
	case KindInvalidArgument:
		return "request cannot be sent"
	case KindUnreachable:
		return "server unreachable"
	case KindBlockedAddress:
		return "server address is blocked"
	case KindUntrustedCertificate:
		return "server certificate not trusted"
	case KindBudgetExhausted:
		return "operation budget exhausted"
	case KindCancelled:
		return "operation cancelled"
	case KindUnauthorized:
		return "unauthorized"
	case KindForbidden:
		return "forbidden"
	case KindServerError:
		return "server error"
	case KindRedirect:
		return "redirect refused"
	case KindHTTPStatus:
		return "unexpected HTTP status"
	case KindSessionExpired:
		return "session expired"
	case KindRPCError:
		return "JSON-RPC error"
	case KindNotMCP:
		return "response is not MCP"
	case KindNoResponse:
		return "no response to the request"
	case KindInvalidResponse:
		return "invalid response"
	case KindEmptyBody:
		return "empty response body"
	case KindOversized:
		return "response body too large"
	case KindUnsupportedVersion:
		return "no mutually supported protocol version"
	case KindInputRequired:
		return "server requires client input"
	case KindTasksUnsupported:
		return "tasks not supported with this server"
	case KindInsecureCredential:
		return "credential refused for this transport"
	case KindCredentialExpired:
		return "credential expired"
	case KindPageLimit:
		return "tools/list page limit reached"
	case KindRepeatedCursor:
		return "tools/list repeated a cursor"
	case KindToolLimit:
		return "tools/list tool limit reached"
	case KindCatalogTooLarge:
		return "tools/list catalog byte budget exceeded"
	case KindNotOffered:
		return "server offers no tool change notifications"
	case KindStreamEnded:
		return "server ended the stream"
	default:
		return "failed"
	}
}
