package gateway

import (
	"context"
	"io"
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
