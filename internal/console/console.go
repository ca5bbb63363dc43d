// Package console is the web page `kubectl mcp console` serves on the
// loopback interface: an overview of a namespace's McpServers and McpTools,
// the queue of tool definitions to review, and the calls waiting for a
// person's approval, kept current by watches and pushed to the page with
// Server-Sent Events. It acts only with the user's own kubeconfig
// identity, through the API server, by the same functions as kubectl mcp's
// commands (package review), so RBAC and the approval admission policy
// decide exactly as they do for kubectl. It adds no server-side component
// and no identity of its own.
//
// The page is Go's html/template and a small script of its own, embedded in
// the binary; it loads nothing from elsewhere and puts every string it is
// given into text nodes, never into markup. What guards each request is in
// guard.go.
package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.ParseFS(assets, "assets/index.html"))

// Options are what a console is built from.
type Options struct {
	// Client acts as the user, with their kubeconfig; it must be able to
	// watch.
	Client client.WithWatch
	// Namespace is shown and acted in; empty means every namespace.
	Namespace string
	// Address is the loopback IP to bind (127.0.0.1 when empty), and Port
	// the port (0: a free one).
	Address string
	Port    int
	// Clock is the clock approvals expire by; nil means the real one.
	Clock clock.PassiveClock
}

// ErrNotLoopback is returned for an address that is not a loopback one:
// the console is for the person at this machine only.
var ErrNotLoopback = errors.New("the console listens on a loopback address only (127.0.0.1 or ::1)")

// Console is a console bound to its port, not yet serving.
type Console struct {
	opts     Options
	listener net.Listener
	guard    *guard
	store    *store
	handler  http.Handler

	mu   sync.Mutex
	view []byte
	subs map[chan []byte]struct{}
	user string
}

// Listen binds the console to a loopback port.
func Listen(o Options) (*Console, error) {
	if o.Client == nil {
		return nil, errors.New("console: no client")
	}
	addr := o.Address
	if addr == "" {
		addr = "127.0.0.1"
	}
	ip := net.ParseIP(addr)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(o.Port)))
	if err != nil {
		return nil, fmt.Errorf("console: listening: %w", err)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	port := l.Addr().(*net.TCPAddr).Port
	hosts := []string{net.JoinHostPort(ip.String(), strconv.Itoa(port))}
	if ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback) {
		hosts = append(hosts, net.JoinHostPort("localhost", strconv.Itoa(port)))
	}
	c := &Console{opts: o, listener: l, guard: newGuard(port, hosts), store: newStore(), subs: map[chan []byte]struct{}{}}
	c.handler = c.guard.wrap(c.routes())
	return c, nil
}

// URL is the one-time login link: opened once, it gives that browser the
// console's session.
func (c *Console) URL() string {
	host := c.listener.Addr().String()
	return "http://" + host + loginPath + "?token=" + url.QueryEscape(c.guard.login)
}

// Handler is the console's HTTP handler, guards included.
func (c *Console) Handler() http.Handler { return c.handler }

// Serve watches the cluster and serves the page until ctx ends.
func (c *Console) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range watchedKinds {
		wg.Go(func() { follow(ctx, c.opts.Client, c.opts.Namespace, w, c.store) })
	}
	wg.Go(func() { c.publish(ctx) })
	srv := &http.Server{Handler: c.handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(c.listener) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdown, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	// Event streams never end by themselves: close them with the server.
	_ = srv.Shutdown(shutdown)
	_ = srv.Close()
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// publish builds the view on every change (and every few seconds, as
// approvals expire) and sends it to every page when it differs from the
// last one.
func (c *Console) publish(ctx context.Context) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		c.rebuild(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.store.changed:
			// Let a burst of events (a whole list) land first.
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		case <-tick.C:
		}
	}
}

func (c *Console) rebuild(ctx context.Context) {
	objs, problems := c.store.objects()
	v := BuildView(objs, c.opts.Clock.Now())
	v.Scope = c.opts.Namespace
	v.User = c.whoAmI(ctx, problems)
	for what, msg := range problems {
		v.Problems = append(v.Problems, Problem{What: what, Message: msg})
	}
	sortProblems(v.Problems)
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Equal(b, c.view) {
		return
	}
	c.view = b
	for ch := range c.subs {
		// Only the newest view matters: replace one the page has not
		// taken yet.
		select {
		case <-ch:
		default:
		}
		ch <- b
	}
}
