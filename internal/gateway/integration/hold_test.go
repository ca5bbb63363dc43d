package integration_test

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/mcp-catalog/operator/internal/controller"
)

// toolControllerWrites holds the tool controller's McpTool status writes
// while a spec asks it to, so that a spec can observe the moment between an
// import writing a new definition and the tool controller turning Ready
// False — a moment that on a busy cluster lasts minutes.
var toolControllerWrites = &writeHold{}

// writeHold blocks matching requests until released (or until the request
// is cancelled, as at manager shutdown).
type writeHold struct {
	mu      sync.Mutex
	release chan struct{} // nil while nothing is held
	held    int
}

// hold makes matching requests wait from now on; the returned function
// lets them (and later ones) through again.
func (h *writeHold) hold() func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan struct{})
	h.release = ch
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.release == ch {
			close(ch)
			h.release = nil
		}
	}
}

// heldCount is how many requests waited since the suite began.
func (h *writeHold) heldCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

func (h *writeHold) gate() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.release != nil {
		h.held++
	}
	return h.release
}

type holdTransport struct {
	next http.RoundTripper
	h    *writeHold
}

func (t holdTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/mcptools/") && strings.HasSuffix(r.URL.Path, "/status") &&
		r.URL.Query().Get("fieldManager") == controller.FieldManagerToolController {
		if ch := t.h.gate(); ch != nil {
			select {
			case <-ch:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
	}
	return t.next.RoundTrip(r)
}

// managerConfig is the manager's API client configuration: the suite's,
// with the tool controller's status writes holdable.
func managerConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return holdTransport{next: rt, h: toolControllerWrites} })
	return c
}
