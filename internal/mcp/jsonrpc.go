package mcp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
)

// JSON-RPC error codes of the 2026-07-28 revision; seeing one identifies a
// modern server. (-32601 "method not found" exists in both eras and
// identifies neither.)
const (
	codeHeaderMismatch                  = -32020
	codeMissingRequiredClientCapability = -32021
	codeUnsupportedProtocolVersion      = -32022
)

// isModernErrorCode reports whether code is one of the errors the 2026-07-28
// revision defines for protocol negotiation; a server that sends one speaks
// the modern era.
func isModernErrorCode(code int) bool {
	switch code {
	case codeHeaderMismatch, codeMissingRequiredClientCapability, codeUnsupportedProtocolVersion:
		return true
	}
	return false
}

// idSource issues request ids: opaque strings from a random per-process
// namespace plus a counter, so ids never repeat within a process and a server
// cannot predict another client's ids.
type idSource struct {
	prefix string
	n      atomic.Uint64
}

// processIDs is shared by every Client of the process.
var processIDs = newIDSource()

func newIDSource() *idSource {
	var b [9]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a fixed prefix
		// would still yield unique ids, only predictable ones.
		panic("mcp: crypto/rand unavailable: " + err.Error())
	}
	return &idSource{prefix: "mcpc-" + hex.EncodeToString(b[:]) + "-"}
}

func (s *idSource) next() string {
	return s.prefix + strconv.FormatUint(s.n.Add(1), 10)
}

// rpcRequest is an outgoing request or, with an empty ID, a notification.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error object as received.
type rpcError struct {
	Code    int
	Message string
	Data    json.RawMessage
}

// message is one decoded JSON-RPC message from the server.
type message struct {
	kind   messageKind
	result json.RawMessage // kindResponse with a result
	err    *rpcError       // kindResponse with an error
}

type messageKind int

const (
	kindResponse messageKind = iota + 1
	kindNotification
	kindServerRequest
)

// protocolError is an internal failure that the transport turns into an
// *Error with the server's name and the leg's method attached. Detail is
// always client-authored.
type protocolError struct {
	kind   Kind
	detail string
}

func (e *protocolError) Error() string { return string(e.kind) + ": " + e.detail }

func protoErr(k Kind, detail string) error { return &protocolError{kind: k, detail: detail} }

var (
	errNotJSON         = errors.New("not JSON")
	errNotObject       = errors.New("not a JSON object")
	errBatch           = errors.New("JSON array (batch)")
	errDuplicateMember = errors.New("duplicate member")
	errTrailing        = errors.New("trailing data")
)

// isJSONNull reports whether a raw member is the literal null.
func isJSONNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// isJSONObject reports whether raw starts an object (decodeObject-level
// validity was already established by the caller's decoding).
func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// parseMessage decodes one JSON-RPC message from the server and applies the
// strictness rules to a response: "jsonrpc" is exactly "2.0", the id is
// exactly wantID (a JSON string), exactly one of result/error is present, a
// result is an object, an error has an integer code and a string message.
// Notifications and server-to-client requests are returned as such for the
// caller to skip.
func parseMessage(raw []byte, wantID string) (*message, error) {
	m, err := decodeObject(raw)
	switch {
	case err == nil:
	case errors.Is(err, errBatch):
		return nil, protoErr(KindInvalidResponse, "batch responses are not accepted")
	case errors.Is(err, errDuplicateMember):
		return nil, protoErr(KindInvalidResponse, "message repeats a member")
	case errors.Is(err, errTrailing):
		return nil, protoErr(KindInvalidResponse, "data after the message")
	default:
		return nil, protoErr(KindNotMCP, "body is not a JSON-RPC message")
	}
	if version, ok := decodeString(m["jsonrpc"]); !ok || version != "2.0" {
		return nil, protoErr(KindInvalidResponse, `"jsonrpc" is not "2.0"`)
	}
	if rawMethod, ok := m["method"]; ok {
		if _, ok := decodeString(rawMethod); !ok && !isJSONNull(rawMethod) {
			return nil, protoErr(KindInvalidResponse, "method is not a string")
		}
		if id, ok := m["id"]; ok && !isJSONNull(id) {
			return &message{kind: kindServerRequest}, nil
		}
		return &message{kind: kindNotification}, nil
	}
	rawID, ok := m["id"]
	if !ok {
		return nil, protoErr(KindInvalidResponse, "response has no id")
	}
	if id, ok := decodeString(rawID); !ok || id != wantID {
		return nil, protoErr(KindInvalidResponse, "response id does not match the request")
	}
	rawResult, hasResult := m["result"]
	rawErr, hasErr := m["error"]
	switch {
	case hasResult && hasErr:
		return nil, protoErr(KindInvalidResponse, "response has both result and error")
	case !hasResult && !hasErr:
		return nil, protoErr(KindInvalidResponse, "response has neither result nor error")
	case hasResult:
		if !isJSONObject(rawResult) {
			return nil, protoErr(KindInvalidResponse, "result is not an object")
		}
		return &message{kind: kindResponse, result: rawResult}, nil
	default:
		e, perr := parseErrorObject(rawErr)
		if perr != nil {
			return nil, perr
		}
		return &message{kind: kindResponse, err: e}, nil
	}
}

// parseErrorObject decodes a JSON-RPC error object.
func parseErrorObject(raw json.RawMessage) (*rpcError, error) {
	bad := protoErr(KindInvalidResponse, "malformed error object")
	m, err := decodeObject(raw)
	if err != nil {
		return nil, bad
	}
	var code json.Number
	rawCode, ok := m["code"]
	if !ok || json.Unmarshal(rawCode, &code) != nil {
		return nil, bad
	}
	c, err := strconv.ParseInt(code.String(), 10, 32)
	if err != nil {
		return nil, bad
	}
	var msg string
	if rawMsg, ok := m["message"]; !ok || json.Unmarshal(rawMsg, &msg) != nil {
		return nil, bad
	}
	e := &rpcError{Code: int(c), Message: msg}
	if d, ok := m["data"]; ok {
		e.Data = append(json.RawMessage(nil), d...)
	}
	return e, nil
}

// parseErrorBody reads the body of a non-2xx response looking for a JSON-RPC
// error object. The transport specification lets such bodies omit the id
// ("an error response that has no id"), so an absent or null id is accepted
// here; an id that is present must still be ours. It returns nil when the
// body is not such an error.
func parseErrorBody(raw []byte, wantID string) *rpcError {
	m, err := decodeObject(raw)
	if err != nil {
		return nil
	}
	var version string
	if v, ok := m["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return nil
	}
	if _, ok := m["result"]; ok {
		return nil
	}
	if rawID, ok := m["id"]; ok && !isJSONNull(rawID) {
		var id string
		if json.Unmarshal(rawID, &id) != nil || id != wantID {
			return nil
		}
	}
	rawErr, ok := m["error"]
	if !ok {
		return nil
	}
	e, perr := parseErrorObject(rawErr)
	if perr != nil {
		return nil
	}
	return e
}
