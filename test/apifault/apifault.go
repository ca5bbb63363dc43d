// Package apifault puts faults between a component and the API server, as
// a test needs them: the API server down (restarting) or answering 503 to
// some requests only (TokenReview, SubjectAccessReview, writes of a kind).
// It sits in the component's client transport (rest.Config.Wrap), so a
// fault hits exactly the requests of the component under test, and the
// test's own client keeps working to observe and to set things up.
//
// While the API server is down every request fails as a refused
// connection does, and every watch that was open ends, as a restart ends
// them; the component must notice, retry and resume on its own once the
// server is back.
package apifault

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
)

// Match selects requests.
type Match func(r *http.Request) bool

// Writes matches the creates, updates, patches and deletes of a resource
// (its plural, as in the path: "mcptools"), its subresources included.
func Writes(resource string) Match {
	return func(r *http.Request) bool {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			return false
		}
		return hasResource(r.URL.Path, resource)
	}
}

// Creates matches the creates of a resource: a TokenReview or a
// SubjectAccessReview is a create.
func Creates(resource string) Match {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPost && hasResource(r.URL.Path, resource)
	}
}

func hasResource(path, resource string) bool {
	return strings.HasSuffix(path, "/"+resource) || strings.Contains(path, "/"+resource+"/")
}

// Injector is the fault switch of one component's API client. The zero
// value passes every request.
type Injector struct {
	mu      sync.Mutex
	down    bool
	rules   []*rule
	watches map[*watch]struct{}
	failed  int
}

type rule struct {
	match Match
	// pass is how many matching requests still go through before the rule
	// answers 503.
	pass int
}

type watch struct{ cancel context.CancelFunc }

// Config returns a copy of cfg whose requests pass through the injector.
func (in *Injector) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(in.Wrap)
	return c
}

// Wrap is a transport wrapper for rest.Config.Wrap.
func (in *Injector) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{in: in, next: rt}
}

// Down takes the API server away: every request fails with a refused
// connection and every open watch ends, until Up.
func (in *Injector) Down() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.down = true
	for w := range in.watches {
		w.cancel()
		delete(in.watches, w)
	}
}

// Up brings the API server back and drops every rule.
func (in *Injector) Up() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.down = false
	in.rules = nil
}

// Refuse answers 503 Service Unavailable to the requests m matches, after
// letting the first pass of them through, until Up.
func (in *Injector) Refuse(m Match, pass int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = append(in.rules, &rule{match: m, pass: pass})
}

// Failed is how many requests the injector has failed so far.
func (in *Injector) Failed() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.failed
}

// verdict decides one request: refused (connection), unavailable (503), or
// passed.
func (in *Injector) verdict(r *http.Request) (refused, unavailable bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.down {
		in.failed++
		return true, false
	}
	for _, ru := range in.rules {
		if !ru.match(r) {
			continue
		}
		if ru.pass > 0 {
			ru.pass--
			continue
		}
		in.failed++
		return false, true
	}
	return false, false
}

// track registers an open watch; it reports false when the server went
// down meanwhile.
func (in *Injector) track(w *watch) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.down {
		return false
	}
	if in.watches == nil {
		in.watches = map[*watch]struct{}{}
	}
	in.watches[w] = struct{}{}
	return true
}

func (in *Injector) untrack(w *watch) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.watches, w)
}

type transport struct {
	in   *Injector
	next http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	refused, unavailable := t.in.verdict(r)
	switch {
	case refused:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case unavailable:
		return serviceUnavailable(r), nil
	}
	if r.URL.Query().Get("watch") != "true" {
		return t.next.RoundTrip(r)
	}
	// A watch can be ended from outside: cancelling its request ends the
	// stream as a server that goes away does.
	ctx, cancel := context.WithCancel(r.Context())
	w := &watch{cancel: cancel}
	if !t.in.track(w) {
		cancel()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		t.in.untrack(w)
		cancel()
		return nil, err
	}
	resp.Body = &watchBody{ReadCloser: resp.Body, done: func() { t.in.untrack(w); cancel() }}
	return resp, nil
}

type watchBody struct {
	io.ReadCloser
	done func()
	once sync.Once
}

func (b *watchBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// serviceUnavailable is the answer of an API server that cannot serve the
// request now: a Status object with code 503.
func serviceUnavailable(r *http.Request) *http.Response {
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server is currently unable to handle the request (%s %s)","reason":"ServiceUnavailable","code":503}`, r.Method, r.URL.Path)
	return &http.Response{
		Status:        "503 Service Unavailable",
		StatusCode:    http.StatusServiceUnavailable,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

// InNamespace narrows m to the requests for objects of one namespace.
func InNamespace(ns string, m Match) Match {
	return func(r *http.Request) bool {
		return strings.Contains(r.URL.Path, "/namespaces/"+ns+"/") && m(r)
	}
}
