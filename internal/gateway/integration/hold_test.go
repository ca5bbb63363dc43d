package integration_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/mcp-catalog/operator/internal/governance"
)

// toolControllerWrites holds, while a spec asks it to, the McpTool status
// writes that record no definition: the McpTool controller's (an import's
// write of a new definition always carries its hash), and an import's mark
// that the server no longer offers a tool, which the specs that hold never
// cause. A spec can so observe the moment between an import writing a new
// definition and the McpTool controller correcting Ready, a moment that on
// a busy cluster lasts minutes.
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
		r.URL.Query().Get("fieldManager") == governance.FieldManagerToolStatus && !recordsDefinition(r) {
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
// with the tool controller's status writes holdable and faults injectable.
func managerConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return holdTransport{next: rt, h: toolControllerWrites} })
	// And the API server can fail under it (faults_test.go).
	c.Wrap(api.Wrap)
	return c
}

// recordsDefinition reports whether a status patch writes a definition,
// leaving the request's body readable.
func recordsDefinition(r *http.Request) bool {
	if r.Body == nil {
		return false
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return err == nil && bytes.Contains(b, []byte(`"definitionHash"`))
}
