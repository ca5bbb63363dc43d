package mcp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
)

// MaxBodyBytes caps every response body the client reads. A body of
// MaxBodyBytes is accepted; one byte more is KindOversized.
const MaxBodyBytes = 2 << 20

// responseLinger is how long an event stream is still read after our
// response arrived. Servers should close the stream after the response; one
// that does not is cut off after this grace instead of holding the leg open.
// A second or foreign response seen within it is still rejected.
const responseLinger = 200 * time.Millisecond

// Header names used on the wire.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerParamPrefix     = "Mcp-Param-"
	acceptBoth            = "application/json, text/event-stream"
)

// methodDelete names the session teardown leg in errors.
const methodDelete = "DELETE"

// leg describes one HTTP exchange of an operation.
type leg struct {
	// method is the JSON-RPC method, or methodDelete for the teardown.
	method string
	// params are the request params (nil for none).
	params any
	// notify makes the message a notification (no id, no response body).
	notify bool
	// version is the MCP-Protocol-Version header value; "" sends none.
	version string
	// modern adds the 2026-07-28 request metadata headers.
	modern bool
	// name is the Mcp-Name header source (params.name of tools/call).
	name string
	// extra holds further headers (Mcp-Param-*).
	extra http.Header
	// sent, if set, receives the request's JSON-RPC id once it is sent.
	sent *string
	// body, if set, is the message sent as it is (an answer to the
	// server's request), with notify set: nothing is read back.
	body []byte
}

// legResult is the outcome of an exchange that produced an HTTP status.
type legResult struct {
	status int
	header http.Header
	// msg is the validated response for a request answered with 2xx.
	msg *message
	// errBody is a JSON-RPC error found in a non-2xx body, if any.
	errBody *rpcError
	// sentSession records whether the request carried a session id, which
	// is what turns a 404 into an expired session.
	sentSession bool
}

// mayStart refuses a leg before anything is sent: the caller gave up, the
// operation's budget is spent, or the credential has expired.
func (o *operation) mayStart(ctx context.Context, l leg) error {
	if err := ctx.Err(); err != nil {
		return o.fail(KindCancelled, l.method, err)
	}
	if o.budget.exhausted() {
		return o.budgetErr(l.method, nil)
	}
	if c := o.ep.Credential; c != nil && !c.Expires.IsZero() && !o.c.now().Before(c.Expires) {
		return o.fail(KindCredentialExpired, l.method, nil)
	}
	return nil
}

// exchange performs one leg under the operation's budget and returns the
// HTTP outcome. It fails only where there is no status to look at: refusals
// before sending, transport failures, and bodies that cannot be read or
// break the strictness rules.
func (o *operation) exchange(ctx context.Context, l leg) (*legResult, error) {
	if err := o.mayStart(ctx, l); err != nil {
		return nil, err
	}

	var (
		id   string
		body io.Reader
	)
	httpMethod := http.MethodPost
	switch {
	case l.method == methodDelete:
		httpMethod = http.MethodDelete
	case l.body != nil:
		body = bytes.NewReader(l.body)
	default:
		req := rpcRequest{JSONRPC: "2.0", Method: l.method, Params: l.params}
		if !l.notify {
			id = o.c.ids.next()
			req.ID = id
			o.inflight = id
			if l.sent != nil {
				*l.sent = id
			}
		}
		b, err := encodeRequest(req)
		if err != nil {
			return nil, o.fail(KindInvalidArgument, l.method, err)
		}
		body = bytes.NewReader(b)
	}

	// The leg's context carries the address policy to the dialer and the
	// leg's share of the budget; cancelling it also ends a lingering stream.
	share := o.budget.legTimeout()
	legCtx, cancel := context.WithTimeout(withLegShare(egress.WithGrant(ctx, o.grant), share), share)
	defer cancel()
	req, err := newRequest(legCtx, httpMethod, o.url, body)
	if err != nil {
		return nil, o.fail(KindInvalidEndpoint, l.method, nil)
	}
	o.setHeaders(req, l)
	if err := o.attachCredential(req, l.method); err != nil {
		return nil, err
	}
	res := &legResult{sentSession: req.Header.Get(headerSessionID) != ""}

	resp, err := roundTrip(o.hc, req)
	if err != nil {
		return nil, o.transportErr(ctx, legCtx, l.method, err)
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	res.header = resp.Header

	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		if resp.StatusCode >= 400 && resp.StatusCode <= 499 {
			// The body of a 4xx is inspected for a JSON-RPC error: era
			// detection depends on it, and callers get code and data.
			if b, rerr := io.ReadAll(&cappedReader{r: resp.Body, limit: MaxBodyBytes}); rerr == nil {
				res.errBody = parseErrorBody(b, id)
			}
		}
		return res, nil
	case l.notify || httpMethod == http.MethodDelete:
		// Nothing to read; a small drain lets the connection be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return res, nil
	}

	msg, err := o.readResponse(ctx, legCtx, cancel, l.method, id, resp)
	if err != nil {
		return nil, err
	}
	res.msg = msg
	o.inflight = ""
	return res, nil
}

// readResponse reads a 2xx body as a single JSON object or an event stream.
func (o *operation) readResponse(ctx, legCtx context.Context, cancel context.CancelFunc, method, id string, resp *http.Response) (*message, error) {
	mediaType := mediaTypeOf(resp.Header.Get("Content-Type"))
	if mediaType == "text/html" {
		return nil, o.fail(KindNotMCP, method, nil)
	}
	body := &cappedReader{r: resp.Body, limit: o.bodyLimit()}
	if mediaType == "text/event-stream" {
		return o.readStream(ctx, legCtx, cancel, method, id, body)
	}
	size := resp.ContentLength
	if size > o.bodyLimit() {
		// Read up to the cap, which fails; the server's claim is not
		// allocated for.
		size = -1
	}
	// A tool's result may carry an image: read in blocks when it is
	// long and of unknown length (splice.go).
	buf, more, err := readBody(body, size, method == "tools/call")
	if err != nil {
		putBody(buf)
		return nil, o.readErr(ctx, legCtx, method, err)
	}
	var sp *splice
	if more != nil {
		first := buf
		if buf, sp = splitBody(append([][]byte{first}, more...)); sp == nil {
			putBody(first)
		}
		defer func() {
			// The first block goes back to the pool unless the body's
			// result still holds a part of it.
			if sp != nil && (sp.blocks != nil || !sp.firstHeld) {
				putBody(first)
			}
		}()
	}
	b := buf
	if len(bytes.TrimSpace(b)) == 0 {
		putBody(buf)
		return nil, o.fail(KindEmptyBody, method, nil)
	}
	msg, err := parseMessage(b, id)
	if sp != nil {
		if err == nil && sp.placed(msg) {
			msg.tape.split = sp
		} else {
			// A long string elsewhere, or a body that is not a result:
			// it is read whole, as before, and fails or not as it did.
			msg.release()
			putBody(buf)
			buf = sp.join()
			msg, err = parseMessage(buf, id)
		}
	}
	if err != nil {
		putBody(buf)
		return nil, o.protoFail(method, err)
	}
	if msg.kind != kindResponse {
		msg.release()
		putBody(buf)
		return nil, o.failDetail(KindNoResponse, method, "body holds a notification or request, not a response")
	}
	msg.own(buf)
	return msg, nil
}

// readBody reads r to its end. A large body's buffer comes from bodyPool;
// the caller hands it back with putBody (or passes it on with
// message.own). With split, a body of unknown size that outgrows
// spliceFrom is not grown further: the rest of it is more, in blocks.
func readBody(r io.Reader, size int64, split bool) (b []byte, more [][]byte, err error) {
	switch {
	case size > 0 && size < largeInput:
		// A body of a known small size (a server that wrote its answer
		// whole has one) is read into a buffer of that size, and one byte
		// more for the read that finds its end, not into a 4 KiB one.
		b = make([]byte, 0, size+1)
	case size > 0:
		// A large one too (a result carrying an image), pooled or made
		// once: grown by doubling, it held the old buffer and one twice
		// its size at once, and copied itself at every step.
		b = growBody(nil, int(size)+1)
	}
	for {
		if len(b) == cap(b) {
			if split && size <= 0 && cap(b) >= spliceFrom {
				more, err = readBlocks(r)
				return b, more, err
			}
			b = growBody(b, 4<<10)
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b, nil, nil
			}
			return b, nil, err
		}
	}
}

// readStream reads an event stream to its end, skipping notifications and
// answering the server's own requests (answerServerRequest). Once our response is seen the
// stream is read only for responseLinger more, so that a server that keeps
// the stream open cannot hold the leg; a second or foreign response inside
// what is read is rejected.
func (o *operation) readStream(ctx, legCtx context.Context, cancel context.CancelFunc, method, id string, body io.Reader) (*message, error) {
	dec := newSSEDecoder(body)
	// A tool's result may carry an image: a long data line is read in
	// blocks (splice.go).
	dec.split = method == "tools/call"
	defer dec.close()
	var (
		found   *message
		linger  *time.Timer
		scratch streamScratch
	)
	defer func() {
		if linger != nil {
			linger.Stop()
		}
		scratch.release()
	}()
	for {
		ev, err := dec.Next()
		if err != nil {
			switch {
			case found != nil && !errors.Is(err, errOversized) && ctx.Err() == nil:
				// End of stream, or the linger cut it: either way done.
				return found, nil
			case errors.Is(err, io.EOF):
				return nil, o.failDetail(KindNoResponse, method, "event stream ended without a response")
			default:
				return nil, o.readErr(ctx, legCtx, method, err)
			}
		}
		if ev.Blocks != nil {
			if ev.Type != "message" {
				continue
			}
			// One long data line, read in blocks.
			msg, buf, perr := parseBlocks(ev.Blocks, id)
			if perr != nil {
				return nil, o.protoFail(method, perr)
			}
			if msg.kind != kindResponse {
				// A server's own message of that size is read, and its
				// buffer left to the collector.
				if msg.kind == kindServerRequest {
					o.answerServerRequest(ctx, msg)
				} else {
					o.notified(msg)
				}
				msg.release()
				continue
			}
			if found != nil {
				msg.release()
				return nil, o.failDetail(KindInvalidResponse, method, "event stream carries a second response")
			}
			msg.own(buf)
			found = msg
			linger = time.AfterFunc(responseLinger, cancel)
			continue
		}
		if ev.Type != "message" || len(bytes.TrimSpace(ev.Data)) == 0 {
			// Other event types are not MCP messages; an empty data field
			// is a priming event (2025-11-25 servers send one for resumption).
			continue
		}
		msg, perr := scratch.parse(ev.Data, id)
		buf := dec.claim()
		if perr != nil {
			putBody(buf)
			return nil, o.protoFail(method, perr)
		}
		switch msg.kind {
		case kindServerRequest, kindNotification:
			// The scratch message and the event's buffer serve the next
			// event: a stream of notifications allocates nothing per
			// notification.
			if msg.kind == kindServerRequest {
				o.answerServerRequest(ctx, msg)
			} else {
				o.notified(msg)
			}
			dec.reuse(buf)
			continue
		}
		if found != nil {
			msg.release()
			putBody(buf)
			return nil, o.failDetail(KindInvalidResponse, method, "event stream carries a second response")
		}
		msg.own(buf)
		found = msg
		linger = time.AfterFunc(responseLinger, cancel)
	}
}

// setHeaders puts the transport headers on a request.
func (o *operation) setHeaders(req *http.Request, l leg) {
	h := req.Header
	// Values that are the same on every request are shared slices (nothing
	// writes a header's values in place), under their canonical names:
	// setting them allocated each on every leg.
	if req.Method == http.MethodPost {
		h["Content-Type"], h["Accept"] = postContentType, postAccept
	}
	h["User-Agent"] = o.c.userAgentValue
	if l.version != "" {
		if v, ok := versionValues[l.version]; ok {
			h[canonicalProtocolVersion] = v
		} else {
			h.Set(headerProtocolVersion, l.version)
		}
	}
	if o.session != "" {
		h.Set(headerSessionID, o.session)
	}
	if l.modern && req.Method == http.MethodPost {
		h.Set(headerMethod, l.method)
		if l.name != "" {
			h.Set(headerName, encodeHeaderValue(l.name))
		}
	}
	if o.trace.Traceparent != "" {
		h.Set("traceparent", o.trace.Traceparent)
		if o.trace.Tracestate != "" {
			h.Set("tracestate", o.trace.Tracestate)
		}
	}
	for k, vs := range l.extra {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
}

// The shared values of setHeaders.
var (
	postContentType          = []string{"application/json"}
	postAccept               = []string{acceptBoth}
	canonicalProtocolVersion = http.CanonicalHeaderKey(headerProtocolVersion)
	// versionValues holds a value for each revision this client speaks.
	versionValues = func() map[string][]string {
		m := map[string][]string{}
		for _, v := range append(slices.Clone(modernVersions), legacyVersions...) {
			m[v] = []string{v}
		}
		return m
	}()
)

// attachCredential adds the credential, after checking that the request goes
// to the endpoint's own origin and over https unless plain http was opted
// into. Both were checked when the operation began; checking again here keeps
// the rule next to the only code that reveals the secret.
func (o *operation) attachCredential(req *http.Request, method string) error {
	c := o.ep.Credential
	if c == nil {
		return nil
	}
	if originOf(req.URL) != o.origin {
		return o.failDetail(KindInsecureCredential, method, "request host is not the endpoint host")
	}
	if req.URL.Scheme != "https" && !o.ep.AllowInsecureCredential {
		return o.failDetail(KindInsecureCredential, method, "plain http without AllowInsecureCredential")
	}
	if c.Header == "" {
		req.Header.Set("Authorization", "Bearer "+c.Value.Reveal())
	} else {
		req.Header.Set(c.Header, c.Value.Reveal())
	}
	return nil
}

// statusErr turns a status other than 2xx into the error for it. The class
// comes from the status code alone.
func (o *operation) statusErr(method string, r *legResult) error {
	var k Kind
	switch s := r.status; {
	case s >= 200 && s <= 299:
		return nil
	case s >= 300 && s <= 399:
		k = KindRedirect
	case s == http.StatusUnauthorized:
		k = KindUnauthorized
	case s == http.StatusForbidden:
		k = KindForbidden
	case s == http.StatusNotFound && r.sentSession:
		k = KindSessionExpired
	case s >= 500 && s <= 599:
		k = KindServerError
	default:
		k = KindHTTPStatus
	}
	e := &Error{Kind: k, Server: o.ep.Name, Method: method, StatusCode: r.status}
	if k == KindUnauthorized && r.header.Get("WWW-Authenticate") != "" {
		e.Challenged = true
	}
	if r.errBody != nil {
		e.RPCCode, e.RPCMessage, e.RPCData = r.errBody.Code, r.errBody.Message, r.errBody.Data
	}
	return e
}

// rpcErr is the error for a JSON-RPC error object in a 2xx response.
func (o *operation) rpcErr(method string, status int, e *rpcError) error {
	return &Error{
		Kind: KindRPCError, Server: o.ep.Name, Method: method, StatusCode: status,
		RPCCode: e.Code, RPCMessage: e.Message, RPCData: e.Data,
	}
}

func (o *operation) fail(k Kind, method string, cause error) error {
	return &Error{Kind: k, Server: o.ep.Name, Method: method, Err: cause}
}

func (o *operation) failDetail(k Kind, method, detail string) error {
	return &Error{Kind: k, Server: o.ep.Name, Method: method, Detail: detail}
}

func (o *operation) budgetErr(method string, cause error) error {
	return &Error{Kind: KindBudgetExhausted, Server: o.ep.Name, Method: method, Budget: o.budget.total, Err: cause}
}

func (o *operation) protoFail(method string, err error) error {
	var pe *protocolError
	if errors.As(err, &pe) {
		return o.failDetail(pe.kind, method, pe.detail)
	}
	return o.failDetail(KindInvalidResponse, method, "")
}

// transportErr classifies a failed round trip: the caller's cancellation
// first, then the leg's deadline (the budget), then the dialer's refusal,
// then everything else as unreachable with a fixed phrase for the cause.
func (o *operation) transportErr(ctx, legCtx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return o.fail(KindCancelled, method, err)
	}
	if errors.Is(legCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return o.budgetErr(method, err)
	}
	var blocked *egress.BlockedAddressError
	if errors.As(err, &blocked) {
		e := &Error{Kind: KindBlockedAddress, Server: o.ep.Name, Method: method, Err: err}
		if blocked.Private {
			e.Detail = "private or loopback address: without the server's private-network opt-in, or outside the ranges the administrator allows"
		} else {
			e.Detail = "link-local, metadata or reserved address"
		}
		return e
	}
	if egress.IsVerificationFailure(err) {
		d := "the certificate is not signed by a trusted CA or does not name the host"
		if o.ep.CABundle != nil {
			d = "the certificate is not signed by a CA of the endpoint's bundle or does not name the host"
		}
		return &Error{Kind: KindUntrustedCertificate, Server: o.ep.Name, Method: method, Err: err, Detail: d}
	}
	e := &Error{Kind: KindUnreachable, Server: o.ep.Name, Method: method, Err: err}
	e.Detail = unreachableDetail(err)
	return e
}

// readErr classifies a failure while reading a body.
func (o *operation) readErr(ctx, legCtx context.Context, method string, err error) error {
	if errors.Is(err, errOversized) {
		return &Error{Kind: KindOversized, Server: o.ep.Name, Method: method, Limit: int(o.bodyLimit())}
	}
	return o.transportErr(ctx, legCtx, method, err)
}

// bodyLimit is the cap on a 2xx response body of the operation:
// MaxBodyBytes, or more where the caller raised it (WithMaxBodyBytes).
func (o *operation) bodyLimit() int64 {
	return max(o.maxBody, MaxBodyBytes)
}

// unreachableDetail names the class of a transport failure in fixed words.
func unreachableDetail(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	switch {
	case errors.As(err, &dnsErr):
		return "name resolution failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection reset"
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr),
		errors.As(err, &recordErr), errors.As(err, &alertErr):
		return "TLS handshake failed"
	default:
		return "connection failed"
	}
}

// encodeHeaderValue applies the 2026-07-28 value encoding for Mcp-Name and
// Mcp-Param-* headers: plain when the value is visible ASCII (plus inner
// spaces and tabs) and does not look like the sentinel, otherwise
// "=?base64?<base64 of the UTF-8 bytes>?=".
func encodeHeaderValue(v string) string {
	plain := v != "" && v == strings.TrimSpace(v) &&
		!(strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?="))
	for i := 0; plain && i < len(v); i++ {
		c := v[i]
		if (c < 0x20 || c > 0x7e) && c != '\t' {
			plain = false
		}
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

type legShareKey struct{}

// withLegShare records on a leg's context the share of the budget the leg
// was granted. The context's deadline says the same only against a clock
// read later, by whoever looks; the recorded share is exact, so a check of
// the rounding rule does not depend on how busy the machine is.
func withLegShare(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, legShareKey{}, d)
}

// legShareOf returns the share recorded by withLegShare.
func legShareOf(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(legShareKey{}).(time.Duration)
	return d, ok
}

// newRequest is http.NewRequestWithContext for a URL already parsed (the
// endpoint's, parsed once per operation, not written out and parsed again
// for every leg). The request gets its own copy of it.
func newRequest(ctx context.Context, method string, u *url.URL, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "", body)
	if err != nil {
		return nil, err
	}
	own := *u
	if u.User != nil {
		user := *u.User
		own.User = &user
	}
	req.URL, req.Host = &own, own.Host
	return req, nil
}

// roundTrip sends one request and returns its response, redirects not
// followed: what hc.Do does for this client's HTTP clients (which follow
// none and keep no cookies) without its per-request copy of the headers for
// redirects that never happen. An error is wrapped as Do wraps it, so
// what callers and people read does not change. A client given a timeout
// of its own goes through Do, which enforces it.
func roundTrip(hc *http.Client, req *http.Request) (*http.Response, error) {
	if hc.Timeout != 0 || hc.Jar != nil {
		return hc.Do(req)
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: req.Method[:1] + strings.ToLower(req.Method[1:]), URL: req.URL.Redacted(), Err: err}
	}
	return resp, nil
}

// mediaTypeOf is the media type of a Content-Type header: the header
// itself when it is one of the types answers come in, written plainly;
// what mime.ParseMediaType reads of it otherwise ("" when nothing).
func mediaTypeOf(contentType string) string {
	switch contentType {
	case "application/json", "text/event-stream":
		return contentType
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt
}
