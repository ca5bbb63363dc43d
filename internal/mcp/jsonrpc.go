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
	// tape indexes the message when it carries a result, and resultAt is
	// the result's entry, so that the result is not scanned again. A
	// notification or a server-to-client request keeps its tape too, with
	// the entries of its method, id and params (-1 where absent), for the
	// caller to read what it relays or answers before releasing it.
	tape     *tape
	resultAt int
	methodAt int
	idAt     int
	paramsAt int
}

// own makes the message responsible for the pooled buffer its bytes are
// in: release hands it back. A message without a tape holds nothing of
// the buffer (an error's data is copied), so the buffer goes back at once.
func (m *message) own(buf []byte) {
	if m.tape != nil {
		m.tape.body = buf
		return
	}
	putBody(buf)
}

// release returns the message's tape and buffer for reuse. The result must
// not be used afterwards. Releasing is optional: an unreleased message is
// collected as usual.
func (m *message) release() {
	if m == nil || m.tape == nil {
		return
	}
	m.tape.release()
	m.tape, m.result = nil, nil
}

// keepFrom is the size from which a result the caller keeps stays in the
// buffer it was read into rather than being copied out of it.
const keepFrom = 64 << 10

// keep returns the message's result for the caller to keep after the
// message is released. A large result that fills most of its buffer takes
// the buffer out of the pool, which is then the caller's, instead of being
// copied; a small one, or one in a much larger pooled buffer, is copied,
// so the buffer goes back to the pool.
func (m *message) keep() json.RawMessage {
	if m.tape == nil || len(m.result) < keepFrom || cap(m.tape.body) > 2*len(m.result) {
		return bytes.Clone(m.result)
	}
	m.tape.body = nil
	return m.result
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

// parseMessage decodes one JSON-RPC message from the server and applies the
// strictness rules to a response: "jsonrpc" is exactly "2.0", the id is
// exactly wantID (a JSON string), exactly one of result/error is present, a
// result is an object, an error has an integer code and a string message.
// Notifications and server-to-client requests are returned as such for the
// caller to skip.
//
// The message is indexed into a tape in one pass over its bytes; a response
// with a result keeps the tape for the caller (see message.release).
func parseMessage(raw []byte, wantID string) (*message, error) {
	t, err := indexObject(raw)
	if err == nil && t.hasDuplicate(0) {
		t.release()
		err = errDuplicateMember
	}
	if err != nil {
		return nil, indexErr(err)
	}
	m, err := readMessage(t, wantID)
	if m == nil || m.tape == nil {
		t.release()
	}
	return m, err
}

// indexErr is the protocol error for a message that could not be indexed.
func indexErr(err error) error {
	switch {
	case errors.Is(err, errBatch):
		return protoErr(KindInvalidResponse, "batch responses are not accepted")
	case errors.Is(err, errDuplicateMember):
		return protoErr(KindInvalidResponse, "message repeats a member")
	case errors.Is(err, errTrailing):
		return protoErr(KindInvalidResponse, "data after the message")
	default:
		return protoErr(KindNotMCP, "body is not a JSON-RPC message")
	}
}

// streamScratch is what the messages of one event stream are read into,
// one after another: a tape and a message reused for every notification
// and server request (each handled before the next is read), so that a
// stream of any number of them allocates nothing per message. The answer
// takes the tape with it, and a later message gets another.
type streamScratch struct {
	t *tape
	m message
}

// release returns the scratch tape to the pool rules of every tape.
func (sc *streamScratch) release() {
	if sc.t != nil {
		sc.t.release()
		sc.t = nil
	}
}

// parse is parseMessage for one event's data. A notification or server
// request is the scratch message, valid until the next parse; a response
// is the caller's.
func (sc *streamScratch) parse(raw []byte, wantID string) (*message, error) {
	if sc.t == nil {
		sc.t = new(tape)
	}
	t := sc.t
	err := indexObjectIn(t, raw)
	if err == nil && t.hasDuplicate(0) {
		err = errDuplicateMember
	}
	if err != nil {
		return nil, indexErr(err)
	}
	if err := readMessageInto(&sc.m, t, wantID); err != nil {
		return nil, err
	}
	if sc.m.kind != kindResponse {
		return &sc.m, nil
	}
	m := sc.m
	if m.tape != nil {
		sc.t = nil
	}
	return &m, nil
}

// indexObject indexes raw, which must be one JSON object. Its errors are
// decodeObject's for the same bytes: when the tape cannot be built, the
// byte-level reader decides which fault comes first.
func indexObject(raw []byte) (*tape, error) {
	s := jsonScanner{b: raw}
	s.skipSpace()
	switch {
	case s.i >= len(raw):
		return nil, errNotJSON
	case raw[s.i] == '[':
		return nil, errBatch
	case raw[s.i] == '{':
		if t, ok := parseTape(raw); ok {
			return t, nil
		}
	}
	if _, err := decodeObject(raw); err != nil {
		return nil, err
	}
	return nil, errNotJSON // not reached: both readers accept the same bytes
}

// indexObjectIn is indexObject into t.
func indexObjectIn(t *tape, raw []byte) error {
	s := jsonScanner{b: raw}
	s.skipSpace()
	switch {
	case s.i >= len(raw):
		return errNotJSON
	case raw[s.i] == '[':
		return errBatch
	case raw[s.i] == '{':
		if parseTapeIn(t, raw) {
			return nil
		}
	}
	if _, err := decodeObject(raw); err != nil {
		return err
	}
	return errNotJSON // not reached: both readers accept the same bytes
}

// readMessage applies parseMessage's rules to the indexed message. The
// returned message holds t only when it is a response with a result.
func readMessage(t *tape, wantID string) (*message, error) {
	m := new(message)
	if err := readMessageInto(m, t, wantID); err != nil {
		return nil, err
	}
	return m, nil
}

// readMessageInto is readMessage filling m.
func readMessageInto(m *message, t *tape, wantID string) error {
	version, id, method, result, rpcErr, params := -1, -1, -1, -1, -1, -1
	for k, end := 1, t.next(0); k < end; k = t.next(k + 1) {
		switch {
		case t.is(k, "jsonrpc"):
			version = k + 1
		case t.is(k, "id"):
			id = k + 1
		case t.is(k, "method"):
			method = k + 1
		case t.is(k, "result"):
			result = k + 1
		case t.is(k, "error"):
			rpcErr = k + 1
		case t.is(k, "params"):
			params = k + 1
		}
	}
	if version < 0 || !t.stringIs(version, "2.0") {
		return protoErr(KindInvalidResponse, `"jsonrpc" is not "2.0"`)
	}
	if method >= 0 {
		if k := t.e[method].kind; k != kString && k != kNull {
			return protoErr(KindInvalidResponse, "method is not a string")
		}
		*m = message{kind: kindNotification, tape: t, methodAt: method, idAt: -1, paramsAt: params}
		if id >= 0 && t.e[id].kind != kNull {
			m.kind, m.idAt = kindServerRequest, id
		}
		return nil
	}
	if id < 0 {
		return protoErr(KindInvalidResponse, "response has no id")
	}
	if !t.stringIs(id, wantID) {
		return protoErr(KindInvalidResponse, "response id does not match the request")
	}
	switch {
	case result >= 0 && rpcErr >= 0:
		return protoErr(KindInvalidResponse, "response has both result and error")
	case result < 0 && rpcErr < 0:
		return protoErr(KindInvalidResponse, "response has neither result nor error")
	case result >= 0:
		if t.e[result].kind != kObject {
			return protoErr(KindInvalidResponse, "result is not an object")
		}
		*m = message{kind: kindResponse, result: t.raw(result), tape: t, resultAt: result}
		return nil
	default:
		e, perr := parseErrorObject(t.raw(rpcErr))
		if perr != nil {
			return perr
		}
		*m = message{kind: kindResponse, err: e}
		return nil
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
