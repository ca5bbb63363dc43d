package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// listening runs ListenTools in the background and reports what it saw.
type listening struct {
	ready   chan string
	changed chan struct{}
	done    chan error
	cancel  context.CancelFunc
}

func startListening(t *testing.T, c *mcp.Client, ep mcp.Endpoint) *listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listening{ready: make(chan string, 1), changed: make(chan struct{}, 1024), done: make(chan error, 1), cancel: cancel}
	go func() {
		l.done <- c.ListenTools(ctx, ep, mcp.ToolListener{
			Ready: func(v string) { l.ready <- v },
			Changed: func() {
				select {
				case l.changed <- struct{}{}:
				default:
				}
			},
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-l.done:
			if err == nil {
				t.Error("ListenTools returned nil")
			}
		case <-time.After(10 * time.Second):
			t.Error("ListenTools did not return after its context ended")
		}
	})
	return l
}

// awaitReady waits for the stream to open, failing on an early return.
func (l *listening) awaitReady(t *testing.T) string {
	t.Helper()
	select {
	case v := <-l.ready:
		return v
	case err := <-l.done:
		t.Fatalf("ListenTools returned before the stream opened: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not open")
	}
	return ""
}

func (l *listening) awaitChange(t *testing.T, what string) {
	t.Helper()
	select {
	case <-l.changed:
	case err := <-l.done:
		t.Fatalf("ListenTools returned before %s was reported: %v", what, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s was not reported", what)
	}
}

// The libraries of others notify a listener when a tool is added or
// removed: on the session's GET stream in the initialize era, on a
// subscriptions/listen stream in 2026-07-28.
func TestPeerListenReportsToolChanges(t *testing.T) {
	for _, p := range peers {
		if p.version != "2026-07-28" && !p.session {
			continue // no session, no GET stream: see TestPeerListenWithoutStream
		}
		if len(p.opts.ProtocolVersions) > 0 || p.opts.JSONResponse {
			continue // the same library and mode as another peer
		}
		t.Run(p.name, func(t *testing.T) {
			srv := startPeer(t, p, nil)
			c := newClient()
			pr, err := c.Probe(context.Background(), endpoint(srv))
			if err != nil {
				t.Fatal(err)
			}
			if !pr.ToolsListChanged {
				t.Fatal("the peer declares tools.listChanged, the probe did not report it")
			}
			l := startListening(t, c, endpoint(srv))
			if v := l.awaitReady(t); v != p.version {
				t.Errorf("listening spoke %q, want %q", v, p.version)
			}
			srv.AddTools("added_by_test")
			l.awaitChange(t, "an added tool")
			// Drain what the add may have sent more than once.
			for len(l.changed) > 0 {
				<-l.changed
			}
			srv.RemoveTools("added_by_test")
			l.awaitChange(t, "a removed tool")
		})
	}
}

// A session-less go-sdk server of the initialize era has no stream to
// offer and answers the GET with 405: ListenTools reports NotOffered after
// one attempt instead of retrying. (mcp-go keeps such a GET open.)
func TestPeerListenWithoutStream(t *testing.T) {
	p := peerNamed(t, "go-sdk/stateless/legacy")
	srv := startPeer(t, p, nil)
	err := newClient().ListenTools(context.Background(), endpoint(srv), mcp.ToolListener{Changed: func() {}})
	var e *mcp.Error
	if !errors.As(err, &e) || e.Kind != mcp.KindNotOffered || e.StatusCode != 405 {
		t.Fatalf("ListenTools = %v, want NotOffered with HTTP 405", err)
	}
	if n := srv.Stats().Methods["initialize"]; n != 1 {
		t.Errorf("%d handshakes for one attempt: the listener retried", n)
	}
}

func peerNamed(t *testing.T, name string) peer {
	t.Helper()
	for _, p := range peers {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no peer %q", name)
	return peer{}
}

// listenProfiles are the conformance profiles with a stream to listen on:
// the session-keeping legacy server (GET) and the modern one
// (subscriptions/listen).
func listenProfiles() []confProfile {
	var out []confProfile
	for _, p := range confProfiles() {
		if p.session != "" || p.modern {
			p.listChanged = true
			out = append(out, p)
		}
	}
	return out
}

const listChangedJSON = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`

// streamKey is the override key of the stream request of a profile.
func streamKey(p confProfile) string {
	if p.modern {
		return "subscriptions/listen"
	}
	return "GET"
}

// ackFor is the acknowledgment a modern server sends first.
func ackFor(r *seenRequest, agreed bool) string {
	return confJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{
			"_meta":         map[string]any{"io.modelcontextprotocol/subscriptionId": r.ID},
			"notifications": map[string]any{"toolsListChanged": agreed},
		}})
}

// changedFor is a tool list notification on r's subscription (modern) or
// the GET stream (legacy).
func changedFor(p confProfile, r *seenRequest) string {
	if !p.modern {
		return listChangedJSON
	}
	return confJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
		"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": r.ID}}})
}

// sseText frames payloads as message events.
func sseText(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("event: message\ndata: ")
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	return b.String()
}

// streamOf is an event stream response: text, then either the end (closed)
// or a stream held open until the request ends.
func streamOf(r *seenRequest, text string, closed bool) *http.Response {
	resp := fakeRawSSE(text)
	if !closed {
		resp.Body = fakeBlockingBody(r.ctx, text)
	}
	return resp
}

// readUntilDrained is a stream that yields text and then, when the client
// asks for more, calls drained once and blocks until ctx ends, like a
// server that keeps the stream open. The client's decoder reads only once
// it has handled every complete event it holds, so drained runs after the
// client handled all of text.
type readUntilDrained struct {
	text    io.Reader
	ctx     context.Context
	drained func()
}

func (b *readUntilDrained) Read(p []byte) (int, error) {
	n, err := b.text.Read(p)
	if n > 0 || !errors.Is(err, io.EOF) {
		return n, err
	}
	if b.drained != nil {
		b.drained()
		b.drained = nil
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (b *readUntilDrained) Close() error { return nil }

// listen runs ListenTools to its end and counts the changes reported.
func listen(ctx context.Context, s *fakeServer, ep mcp.Endpoint) (int, error) {
	n := 0
	err := s.client(mcp.Options{}).ListenTools(ctx, ep, mcp.ToolListener{Changed: func() { n++ }})
	return n, err
}

func TestListenReportsEachChangeOnTheStream(t *testing.T) {
	for _, p := range listenProfiles() {
		t.Run(p.name, func(t *testing.T) {
			s := newFakeServer(t, p)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s.on(streamKey(p), func(r *seenRequest) *http.Response {
				text := ""
				if p.modern {
					text = sseText(ackFor(r, true))
				}
				// A keep-alive comment, a foreign notification, then two changes.
				text += ": keep-alive\n\n" + sseText(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
					changedFor(p, r), changedFor(p, r))
				// The server is done; the client is cancelled once it has
				// handled everything and waits for more.
				resp := fakeRawSSE(text)
				resp.Body = &readUntilDrained{text: strings.NewReader(text), ctx: r.ctx, drained: cancel}
				return resp
			})
			// A client that stops reading early fails rather than hangs.
			stop := time.AfterFunc(10*time.Second, cancel)
			defer stop.Stop()
			n, err := listen(ctx, s, p.endpoint())
			if mcp.KindOf(err) != mcp.KindCancelled {
				t.Fatalf("ListenTools = %v, want Cancelled", err)
			}
			if n != 2 {
				t.Errorf("%d changes reported, want 2", n)
			}
			var stream *seenRequest
			for _, r := range s.requests() {
				if r.HTTPMethod == http.MethodGet || r.RPCMethod == "subscriptions/listen" {
					stream = r
				}
			}
			if stream == nil {
				t.Fatal("no stream request was sent")
			}
			name, value := p.credentialHeader()
			if stream.Header.Get(name) != value {
				t.Error("the stream request did not carry the credential")
			}
			if !strings.Contains(stream.Header.Get("Accept"), "text/event-stream") {
				t.Errorf("Accept = %q", stream.Header.Get("Accept"))
			}
			if p.modern {
				n, _ := stream.Params["notifications"].(map[string]any)
				if n["toolsListChanged"] != true {
					t.Errorf("subscriptions/listen params = %v, want notifications.toolsListChanged", stream.Params)
				}
			} else if stream.Header.Get("Mcp-Session-Id") != p.session {
				t.Error("the GET did not carry the session id")
			}
		})
	}
}

func TestListenRefusesWhatIsNotOffered(t *testing.T) {
	for _, p := range listenProfiles() {
		t.Run(p.name+"/no-capability", func(t *testing.T) {
			q := p
			q.listChanged = false
			s := newFakeServer(t, q)
			_, err := listen(context.Background(), s, q.endpoint())
			if mcp.KindOf(err) != mcp.KindNotOffered {
				t.Fatalf("ListenTools = %v, want NotOffered", err)
			}
			if s.count(streamKey(p)) != 0 {
				t.Error("a stream was requested from a server that promises no notifications")
			}
		})
		t.Run(p.name+"/405", func(t *testing.T) {
			s := newFakeServer(t, p)
			s.on(streamKey(p), func(*seenRequest) *http.Response { return fakeStatus(http.StatusMethodNotAllowed) })
			_, err := listen(context.Background(), s, p.endpoint())
			if mcp.KindOf(err) != mcp.KindNotOffered {
				t.Fatalf("ListenTools = %v, want NotOffered", err)
			}
			if n := s.count(streamKey(p)); n != 1 {
				t.Errorf("%d stream requests, want 1: a 405 is not retried", n)
			}
		})
	}
}

// Every shape of a bad stream ends ListenTools with a typed error, without
// a panic and within the stream's bounds.
func TestListenEndsOnBadStreams(t *testing.T) {
	for _, p := range listenProfiles() {
		prefix := func(r *seenRequest) string {
			if p.modern {
				return sseText(ackFor(r, true))
			}
			return ""
		}
		cases := []struct {
			name   string
			answer func(r *seenRequest) *http.Response
			kind   mcp.Kind
			maxN   int
		}{
			{"cut", func(r *seenRequest) *http.Response {
				return streamOf(r, prefix(r)+sseText(changedFor(p, r)), true)
			}, mcp.KindStreamEnded, 1},
			{"garbage", func(r *seenRequest) *http.Response {
				return streamOf(r, prefix(r)+"data: {not json\n\n", false)
			}, mcp.KindInvalidResponse, 0},
			{"not-an-event-stream", func(r *seenRequest) *http.Response {
				return fakeText(http.StatusOK, "text/html", "<html>maintenance</html>")
			}, "", 0},
			{"huge-event", func(r *seenRequest) *http.Response {
				return streamOf(r, prefix(r)+"data: "+strings.Repeat("x", mcp.MaxListenEventBytes+1), false)
			}, mcp.KindOversized, 0},
			{"unauthorized", func(r *seenRequest) *http.Response {
				return fakeStatus(http.StatusUnauthorized)
			}, mcp.KindUnauthorized, 0},
			{"flood", func(r *seenRequest) *http.Response {
				resp := fakeRawSSE("")
				resp.Body = io.NopCloser(io.MultiReader(strings.NewReader(prefix(r)), &repeatReader{s: sseText(changedFor(p, r))}))
				return resp
			}, mcp.KindOversized, mcp.MaxListenStreamBytes / len(sseText(changedFor(p, &seenRequest{ID: "x"})))},
		}
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				s := newFakeServer(t, p)
				s.on(streamKey(p), tc.answer)
				n, err := listen(context.Background(), s, p.endpoint())
				if err == nil {
					t.Fatal("ListenTools returned nil")
				}
				if tc.kind != "" && mcp.KindOf(err) != tc.kind {
					t.Fatalf("ListenTools = %v, want %s", err, tc.kind)
				}
				if mcp.KindOf(err) == "" {
					t.Fatalf("ListenTools = %v, want a typed error", err)
				}
				if n > tc.maxN {
					t.Errorf("%d changes reported, at most %d expected", n, tc.maxN)
				}
				if strings.Contains(err.Error(), p.secret) {
					t.Error("the error text carries the credential")
				}
			})
		}
	}
}

// repeatReader repeats s forever: a server that floods the stream.
type repeatReader struct {
	s string
	i int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.i:])
		n += c
		r.i = (r.i + c) % len(r.s)
	}
	return n, nil
}

// The 2026-07-28 rules: the acknowledgment comes first and names the
// subscription; a notification of another subscription is not ours; the
// server ends the subscription with a response.
func TestListenModernSubscriptionRules(t *testing.T) {
	var p confProfile
	for _, q := range listenProfiles() {
		if q.modern {
			p = q
		}
	}
	other := func(r *seenRequest) string {
		return confJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
			"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": "someone-else"}}})
	}
	cases := []struct {
		name   string
		stream func(r *seenRequest) string
		kind   mcp.Kind
		n      int
	}{
		{"notification-before-ack", func(r *seenRequest) string {
			return sseText(changedFor(p, r), ackFor(r, true))
		}, mcp.KindInvalidResponse, 0},
		{"ack-without-tools", func(r *seenRequest) string {
			return sseText(ackFor(r, false), changedFor(p, r))
		}, mcp.KindNotOffered, 0},
		{"foreign-subscription-ignored", func(r *seenRequest) string {
			return sseText(ackFor(r, true), other(r), changedFor(p, r))
		}, mcp.KindStreamEnded, 1},
		{"graceful-end", func(r *seenRequest) string {
			return sseText(ackFor(r, true), changedFor(p, r), fakeResponseFor(r, map[string]any{"resultType": "complete"}))
		}, mcp.KindStreamEnded, 1},
		{"foreign-response", func(r *seenRequest) string {
			return sseText(ackFor(r, true), `{"jsonrpc":"2.0","id":"not-ours","result":{}}`)
		}, mcp.KindInvalidResponse, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeServer(t, p)
			s.on("subscriptions/listen", func(r *seenRequest) *http.Response { return streamOf(r, tc.stream(r), true) })
			n, err := listen(context.Background(), s, p.endpoint())
			if mcp.KindOf(err) != tc.kind {
				t.Fatalf("ListenTools = %v, want %s", err, tc.kind)
			}
			if n != tc.n {
				t.Errorf("%d changes reported, want %d", n, tc.n)
			}
		})
	}
}

// A server that accepts the subscription but never acknowledges it cannot
// hold the opening past the operation budget.
func TestListenAckWithinBudget(t *testing.T) {
	var p confProfile
	for _, q := range listenProfiles() {
		if q.modern {
			p = q
		}
	}
	s := newFakeServer(t, p)
	s.on("subscriptions/listen", func(r *seenRequest) *http.Response { return streamOf(r, ": hello\n\n", false) })
	ep := p.endpoint()
	ep.Timeout = time.Second
	_, err := listen(context.Background(), s, ep)
	if mcp.KindOf(err) != mcp.KindBudgetExhausted {
		t.Fatalf("ListenTools = %v, want BudgetExhausted", err)
	}
}

// Whatever a server puts on the stream, ListenTools ends with a typed error
// and no panic.
func FuzzListenStream(f *testing.F) {
	for _, s := range []string{
		"data: " + listChangedJSON + "\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":1},\"notifications\":{\"toolsListChanged\":true}}}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":[1],\"result\":null}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"params\":{\"_meta\":null}}\n\n",
		"data: []\n\ndata: null\n\n",
		"event: other\ndata: x\n\n: c\n",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, modern bool) {
		var p confProfile
		for _, q := range listenProfiles() {
			if q.modern == modern {
				p = q
			}
		}
		s := newFakeServer(t, p)
		s.on(streamKey(p), func(r *seenRequest) *http.Response { return streamOf(r, text, true) })
		_, err := listen(context.Background(), s, p.endpoint())
		if mcp.KindOf(err) == "" {
			t.Fatalf("ListenTools = %v, want a typed error", err)
		}
	})
}

// A 2026-07-28 list result's ttlMs reaches the caller as Catalog.TTL: the
// shortest of the pages, capped, and a malformed one ignored.
func TestCatalogTTL(t *testing.T) {
	var p confProfile
	for _, q := range confProfiles() {
		if q.modern {
			p = q
		}
	}
	for _, tc := range []struct {
		name  string
		pages []any // ttlMs of each page
		want  time.Duration
	}{
		{"shortest page", []any{5000, 3000}, 3 * time.Second},
		{"capped", []any{1e12}, mcp.MaxTTL},
		{"malformed ignored", []any{"soon", -4, 2500}, 2500 * time.Millisecond},
		{"none", []any{nil}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeServer(t, p)
			s.on("tools/list", func(r *seenRequest) *http.Response {
				i := 0
				if c, ok := r.Params["cursor"].(string); ok {
					i, _ = strconv.Atoi(c)
				}
				res := map[string]any{"resultType": "complete", "tools": []any{confTool(fmt.Sprintf("t%d", i))}, "cacheScope": "public"}
				if tc.pages[i] != nil {
					res["ttlMs"] = tc.pages[i]
				}
				if i+1 < len(tc.pages) {
					res["nextCursor"] = fmt.Sprint(i + 1)
				}
				return s.reply(r, res)
			})
			cat, err := s.client(mcp.Options{}).ListTools(context.Background(), p.endpoint())
			if err != nil {
				t.Fatal(err)
			}
			if cat.TTL != tc.want {
				t.Errorf("TTL %s, want %s", cat.TTL, tc.want)
			}
		})
	}
}
