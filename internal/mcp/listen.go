package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
)

// Bounds on a listening stream. A notification is a few hundred bytes; the
// limits leave room for servers that add metadata and keep-alive comments,
// and end a stream that sends more. The caller reconnects, with backoff.
const (
	// MaxListenEventBytes bounds one event (and one line) of the stream.
	MaxListenEventBytes = 64 << 10
	// MaxListenStreamBytes bounds everything one stream may send.
	MaxListenStreamBytes = 4 << 20
)

// ToolListener receives what a listening stream reports. The callbacks run
// on the goroutine that reads the stream and must not block.
type ToolListener struct {
	// Ready, if set, is called once the stream is open (in the 2026-07-28
	// revision: once the server acknowledged the subscription), with the
	// protocol revision spoken. A change after Ready is reported.
	Ready func(protocolVersion string)
	// Changed is called for every notifications/tools/list_changed. A
	// server may send many; the caller coalesces them.
	Changed func()
}

// ListenTools tells l when the server's tool list changes, for as long as
// ctx lasts and the server keeps the stream open. It returns only with an
// error: KindCancelled once ctx ends, KindNotOffered when the server offers
// no such notifications (it does not declare tools.listChanged, answers the
// stream request with 405, or acknowledges a subscription without
// toolsListChanged), which is not worth retrying until its capabilities
// change; KindStreamEnded when the server closed the stream; otherwise the
// kind of the failure, as for the other operations.
//
// The handshake and the opening of the stream (up to the acknowledgment)
// run under the endpoint's operation budget; the open stream has no time
// limit but is bounded in bytes (MaxListenEventBytes,
// MaxListenStreamBytes). A credential with an expiry ends the stream at
// that expiry, so that the caller reconnects with a fresh one.
//
// Initialize-era servers are listened to on the session's GET stream,
// 2026-07-28 servers with subscriptions/listen.
func (c *Client) ListenTools(ctx context.Context, ep Endpoint, l ToolListener) error {
	if cr := ep.Credential; cr != nil && !cr.Expires.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, cr.Expires)
		defer cancel()
	}
	o, err := c.open(ctx, ep)
	if err != nil {
		return err
	}
	defer func() {
		// The session (if any) is ended under a budget of its own: the
		// stream may have been open far longer than the operation budget.
		o.budget = newBudget(ep.Timeout, c.now)
		o.end(ctx)
	}()
	if !o.probe.ToolsListChanged {
		return o.failDetail(KindNotOffered, "", "the server does not declare tools.listChanged")
	}
	if o.era == eraModern {
		return o.listenModern(ctx, l)
	}
	return o.listenLegacy(ctx, l)
}

// stream is an open listening stream.
type stream struct {
	resp   *http.Response
	body   *cappedReader
	cancel context.CancelFunc
	// opening ends the stream when the budget runs out before ready.
	opening *time.Timer
	expired chan struct{}
}

// ready stops the opening deadline; false means it already fired.
func (s *stream) ready() bool {
	return s.opening.Stop()
}

func (s *stream) close() {
	s.opening.Stop()
	s.cancel()
	_ = s.resp.Body.Close()
}

// openStream sends a request whose answer is a long-lived event stream: the
// egress grant on its context like every leg, the credential as on every
// leg, and the operation budget for the time until the caller calls ready.
func (o *operation) openStream(ctx context.Context, httpMethod string, l leg, body []byte) (*stream, error) {
	if err := o.mayStart(ctx, l); err != nil {
		return nil, err
	}
	share := o.budget.legTimeout()
	streamCtx, cancel := context.WithCancel(withLegShare(egress.WithGrant(ctx, o.grant), share))
	s := &stream{cancel: cancel, expired: make(chan struct{})}
	s.opening = time.AfterFunc(share, func() {
		close(s.expired)
		cancel()
	})
	var rb io.Reader
	if body != nil {
		rb = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(streamCtx, httpMethod, o.url.String(), rb)
	if err != nil {
		s.opening.Stop()
		cancel()
		return nil, o.fail(KindInvalidEndpoint, l.method, nil)
	}
	o.setHeaders(req, l)
	req.Header.Set("Accept", "text/event-stream")
	if httpMethod == http.MethodPost {
		req.Header.Set("Accept", acceptBoth)
	}
	if err := o.attachCredential(req, l.method); err != nil {
		s.opening.Stop()
		cancel()
		return nil, err
	}
	sentSession := req.Header.Get(headerSessionID) != ""
	resp, err := o.hc.Do(req) //nolint:bodyclose // the stream's close closes it
	if err != nil {
		s.opening.Stop()
		cancel()
		if s.timedOut() {
			return nil, o.budgetErr(l.method, err)
		}
		return nil, o.transportErr(ctx, streamCtx, l.method, err)
	}
	s.resp = resp
	s.body = &cappedReader{r: resp.Body, limit: MaxListenEventBytes}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer s.close()
		if resp.StatusCode == http.StatusMethodNotAllowed {
			return nil, &Error{Kind: KindNotOffered, Server: o.ep.Name, Method: l.method, StatusCode: resp.StatusCode,
				Detail: "the server offers no stream at this endpoint"}
		}
		r := &legResult{status: resp.StatusCode, header: resp.Header, sentSession: sentSession}
		if resp.StatusCode >= 400 && resp.StatusCode <= 499 {
			if b, rerr := io.ReadAll(&cappedReader{r: resp.Body, limit: MaxListenEventBytes}); rerr == nil {
				r.errBody = parseErrorBody(b, "")
			}
		}
		return nil, o.statusErr(l.method, r)
	}
	return s, nil
}

func (s *stream) timedOut() bool {
	select {
	case <-s.expired:
		return true
	default:
		return false
	}
}

// listenLegacy opens the GET stream of an initialize-era server.
func (o *operation) listenLegacy(ctx context.Context, l ToolListener) error {
	const method = "GET"
	s, err := o.openStream(ctx, http.MethodGet, leg{method: method, version: o.version}, nil)
	if err != nil {
		return err
	}
	defer s.close()
	if mt, _, _ := mime.ParseMediaType(s.resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return o.failDetail(KindNotMCP, method, "the stream request was not answered with an event stream")
	}
	if !s.ready() {
		return o.budgetErr(method, nil)
	}
	if l.Ready != nil {
		l.Ready(o.version)
	}
	return o.readListen(ctx, s, method, func(m *listenMessage) error {
		if m.Method == "notifications/tools/list_changed" && len(m.ID) == 0 {
			l.Changed()
		}
		// Requests and other notifications are not for this listener, and
		// a GET stream carries no responses to us.
		return nil
	})
}

// listenModern opens a 2026-07-28 subscriptions/listen stream for tool list
// changes. The first message must be the acknowledgment carrying this
// request's id as the subscription id; later notifications must carry it
// too, others are ignored. A response to the request ends the subscription.
func (o *operation) listenModern(ctx context.Context, l ToolListener) error {
	const method = "subscriptions/listen"
	lg := o.workLeg(method, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	id := o.c.ids.next()
	body, err := encodeRequest(rpcRequest{JSONRPC: "2.0", ID: id, Method: method, Params: lg.params})
	if err != nil {
		return o.fail(KindInvalidArgument, method, err)
	}
	s, err := o.openStream(ctx, http.MethodPost, lg, body)
	if err != nil {
		if e := (*Error)(nil); errors.As(err, &e) && e.RPCCode == -32601 {
			e.Kind, e.Detail = KindNotOffered, "the server does not implement subscriptions/listen"
		}
		return err
	}
	defer s.close()
	if mt, _, _ := mime.ParseMediaType(s.resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A plain JSON answer ends the subscription at once: an error, or
		// a completion.
		b, rerr := io.ReadAll(s.body)
		if rerr != nil {
			return o.readErr(ctx, ctx, method, rerr)
		}
		msg, perr := parseMessage(b, id)
		if perr != nil {
			return o.protoFail(method, perr)
		}
		defer msg.release()
		if msg.err != nil {
			k := KindRPCError
			if msg.err.Code == -32601 {
				k = KindNotOffered
			}
			return &Error{Kind: k, Server: o.ep.Name, Method: method, StatusCode: s.resp.StatusCode,
				RPCCode: msg.err.Code, RPCMessage: msg.err.Message, RPCData: msg.err.Data}
		}
		return o.failDetail(KindStreamEnded, method, "the server ended the subscription at once")
	}
	acked := false
	return o.readListen(ctx, s, method, func(m *listenMessage) error {
		if len(m.ID) > 0 && m.Method == "" {
			// The response to the listen request: the server ended the
			// subscription (or refused it).
			var rid string
			if json.Unmarshal(m.ID, &rid) != nil || rid != id {
				return o.failDetail(KindInvalidResponse, method, "response id does not match the request")
			}
			if m.Error != nil {
				return o.failDetail(KindRPCError, method, "the server ended the subscription with an error")
			}
			return o.failDetail(KindStreamEnded, method, "the server ended the subscription")
		}
		if len(m.ID) > 0 || m.Method == "" {
			return nil // a server request: not answered, not for this listener
		}
		if !m.subscription(id) {
			if !acked {
				return o.failDetail(KindInvalidResponse, method, "a message before the acknowledgment")
			}
			return nil
		}
		if !acked {
			if m.Method != "notifications/subscriptions/acknowledged" {
				return o.failDetail(KindInvalidResponse, method, "the first message is not the acknowledgment")
			}
			if !s.ready() {
				return o.budgetErr(method, nil)
			}
			if !m.Params.Notifications.ToolsListChanged {
				return o.failDetail(KindNotOffered, method, "the server did not agree to toolsListChanged")
			}
			acked = true
			if l.Ready != nil {
				l.Ready(o.version)
			}
			return nil
		}
		if m.Method == "notifications/tools/list_changed" {
			l.Changed()
		}
		return nil
	})
}

// listenMessage is what the listener reads of one message. Messages on a
// listening stream are small; they are decoded with encoding/json under
// MaxListenEventBytes.
type listenMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Error   json.RawMessage `json:"error"`
	Params  struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications struct {
			ToolsListChanged bool `json:"toolsListChanged"`
		} `json:"notifications"`
	} `json:"params"`
}

// subscription reports whether the message names subscription id.
func (m *listenMessage) subscription(id string) bool {
	raw, ok := m.Params.Meta["io.modelcontextprotocol/subscriptionId"]
	if !ok {
		return false
	}
	var got string
	return json.Unmarshal(raw, &got) == nil && got == id
}

// readListen reads the stream until it ends or handle returns an error. Each
// event may be MaxListenEventBytes long, and the stream MaxListenStreamBytes
// in all.
func (o *operation) readListen(ctx context.Context, s *stream, method string, handle func(*listenMessage) error) error {
	dec := newSSEDecoder(s.body)
	defer dec.close()
	for {
		ev, err := dec.Next()
		if err != nil {
			switch {
			case s.timedOut():
				return o.budgetErr(method, err)
			case errors.Is(err, errOversized):
				return &Error{Kind: KindOversized, Server: o.ep.Name, Method: method, Limit: int(s.body.limit)}
			case ctx.Err() != nil && o.ep.Credential != nil && !o.ep.Credential.Expires.IsZero() && !o.c.now().Before(o.ep.Credential.Expires):
				return o.fail(KindCredentialExpired, method, nil)
			case ctx.Err() != nil:
				return o.fail(KindCancelled, method, ctx.Err())
			case errors.Is(err, io.EOF):
				return o.failDetail(KindStreamEnded, method, "the server closed the stream")
			default:
				return o.transportErr(ctx, ctx, method, err)
			}
		}
		// The next event gets a fresh allowance from where it starts (what
		// was read ahead already counts), within the stream's.
		s.body.limit = min(s.body.n-int64(dec.r.Buffered())+MaxListenEventBytes, MaxListenStreamBytes)
		if ev.Type != "message" || len(bytes.TrimSpace(ev.Data)) == 0 {
			putBody(dec.claim())
			continue
		}
		var m listenMessage
		uerr := json.Unmarshal(ev.Data, &m)
		putBody(dec.claim())
		if uerr != nil || m.JSONRPC != "2.0" {
			return o.failDetail(KindInvalidResponse, method, "an event is not a JSON-RPC message")
		}
		if err := handle(&m); err != nil {
			return err
		}
	}
}
