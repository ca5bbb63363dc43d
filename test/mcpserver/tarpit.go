package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Tarpit is an MCP endpoint that never finishes an answer: it accepts every
// request, sends the headers of a JSON answer at once, and then one byte a
// second, each a space a JSON reader skips, so that the client keeps
// reading until its own budget runs out. Each operation against it holds
// whoever runs it for the operation's whole budget.
type Tarpit struct {
	// URL is the MCP endpoint.
	URL string

	srv     *httptest.Server
	release chan struct{}
	once    sync.Once

	open, requests atomic.Int64
	mu             sync.Mutex
	mostOpen       int64
}

// StartTarpit starts a tarpit, closed when the test ends: its requests are
// let go first, so that nothing waiting on it outlives the test.
func StartTarpit(t TB) *Tarpit {
	t.Helper()
	tp := &Tarpit{release: make(chan struct{})}
	tp.srv = httptest.NewServer(http.HandlerFunc(tp.serve))
	tp.URL = tp.srv.URL + Path
	t.Cleanup(tp.Close)
	return tp
}

func (tp *Tarpit) serve(w http.ResponseWriter, r *http.Request) {
	tp.requests.Add(1)
	n := tp.open.Add(1)
	defer tp.open.Add(-1)
	tp.mu.Lock()
	tp.mostOpen = max(tp.mostOpen, n)
	tp.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if _, err := w.Write([]byte(" ")); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tp.release:
			return
		case <-tick.C:
		}
	}
}

// Open is how many requests the tarpit holds now; MostOpen the most it
// ever held at once; Requests how many it was sent.
func (tp *Tarpit) Open() int { return int(tp.open.Load()) }

func (tp *Tarpit) MostOpen() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return int(tp.mostOpen)
}

func (tp *Tarpit) Requests() int { return int(tp.requests.Load()) }

// Close lets every held request go and stops the server.
func (tp *Tarpit) Close() {
	tp.once.Do(func() {
		close(tp.release)
		tp.srv.Close()
	})
}
