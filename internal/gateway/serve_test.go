package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestListenerRefusesPlainHTTPWithoutTheDevelopmentFlag(t *testing.T) {
	l := &Listener{Addr: "127.0.0.1:0", Handler: http.NotFoundHandler()}
	errc := make(chan error, 1)
	go func() { errc <- l.Start(context.Background()) }()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Start served plain HTTP")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return")
	}
}

// streaming is a handler that, like an MCP event stream, answers and then
// keeps the response open until its client goes away.
var streaming = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ": open\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
})

func TestListenerStopsWithinItsShutdownTimeoutDespiteAnOpenStream(t *testing.T) {
	ready := make(chan string, 1)
	l := &Listener{Addr: "127.0.0.1:0", Handler: streaming, Insecure: true, Ready: ready, ShutdownTimeout: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- l.Start(ctx) }()
	addr := <-ready

	resp, err := http.Get("http://" + addr + "/") //nolint:bodyclose // closed by the defer below; a goroutine reads it after shutdown
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}

	cancel()
	stopped := time.Now()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Start returned %v after its context ended; an open stream is no failure", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return: an open stream held the listener")
	}
	if d := time.Since(stopped); d < 250*time.Millisecond {
		t.Errorf("stopped after %s, before the grace period for in-flight requests", d)
	}
	// The stream was cut: reading it ends.
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, resp.Body); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open")
	}
}

// A replica keeps at most MaxIdleConnections open idle: past the bound
// the gateway closes connections until the bound holds, and the ones it
// kept still serve.
func TestListenerClosesIdleConnectionsPastItsBound(t *testing.T) {
	ready := make(chan string, 1)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	l := &Listener{Addr: "127.0.0.1:0", Handler: ok, Insecure: true, Ready: ready, MaxIdleConnections: 2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := <-ready
	request := func(c net.Conn, r *bufio.Reader) error {
		_ = c.SetReadDeadline(time.Time{})
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: gateway\r\n\r\n")); err != nil {
			return err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return err
	}
	conns := make([]net.Conn, 4)
	readers := make([]*bufio.Reader, 4)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		conns[i], readers[i] = c, bufio.NewReader(c)
		if err := request(c, readers[i]); err != nil {
			t.Fatalf("request on connection %d: %v", i, err)
		}
	}
	// Four went idle, two may stay: wait for the gateway to close two,
	// looking at each connection for a moment in turn.
	closed := map[int]bool{}
	for give := time.Now().Add(10 * time.Second); len(closed) < 2 && time.Now().Before(give); {
		for i, c := range conns {
			if closed[i] {
				continue
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
			if _, err := readers[i].ReadByte(); errors.Is(err, io.EOF) {
				closed[i] = true
			}
		}
	}
	if len(closed) != 2 {
		t.Fatalf("the gateway closed %d of 4 idle connections, want 2 (bound 2)", len(closed))
	}
	for i := range conns {
		if !closed[i] {
			if err := request(conns[i], readers[i]); err != nil {
				t.Errorf("connection %d, kept, did not serve again: %v", i, err)
			}
		}
	}
}

// The connection idle longest is the one closed.
func TestIdleConnsCloseTheLongestIdle(t *testing.T) {
	c := newIdleConns(2)
	var ends [3]net.Conn
	var conns [3]net.Conn
	for i := range conns {
		conns[i], ends[i] = net.Pipe()
		defer func() { _ = ends[i].Close() }()
	}
	c.track(conns[0], http.StateNew)
	c.track(conns[0], http.StateIdle)
	c.track(conns[1], http.StateIdle)
	c.track(conns[0], http.StateActive) // serving again: no longer idle
	c.track(conns[0], http.StateIdle)   // idle again, now the newest
	c.track(conns[2], http.StateIdle)   // past the bound: 1 has been idle longest
	if n := c.len(); n != 2 {
		t.Fatalf("%d idle connections kept, want 2", n)
	}
	if _, err := ends[1].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the connection idle longest: %v, want it closed", err)
	}
	for _, i := range []int{0, 2} {
		_ = conns[i].SetDeadline(time.Now().Add(time.Second))
		go func() { _, _ = ends[i].Write([]byte{1}) }()
		if _, err := conns[i].Read(make([]byte, 1)); err != nil {
			t.Errorf("connection %d was closed: %v", i, err)
		}
	}
	c.track(conns[0], http.StateClosed)
	if n := c.len(); n != 1 {
		t.Errorf("%d idle connections after one closed, want 1", n)
	}
}
