package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// requests records the imports ToolListeners asks for.
type requests struct {
	mu    sync.Mutex
	times map[types.NamespacedName][]time.Time
	ch    chan types.NamespacedName
}

func (r *requests) add(_ context.Context, key types.NamespacedName) {
	r.mu.Lock()
	r.times[key] = append(r.times[key], time.Now())
	r.mu.Unlock()
	r.ch <- key
}

func (r *requests) of(key types.NamespacedName) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times[key]...)
}

// startListeners runs a ToolListeners as the manager would, with the given
// bounds and timings. Start the servers first: cleanups run last first, and
// a server closes only once the streams to it have ended, so a failing test
// would otherwise wait forever for a listener it has not stopped yet.
func startListeners(t *testing.T, l *ToolListeners) *requests {
	t.Helper()
	l.MCP = mcp.New(mcp.Options{AllowPrivateNetworks: true})
	l.init()
	r := &requests{times: map[types.NamespacedName][]time.Time{}, ch: make(chan types.NamespacedName, 1024)}
	l.request = r.add
	l.refresh = func(context.Context, types.NamespacedName) {}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Start(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the listeners did not stop")
		}
	})
	return r
}

func peerEndpoint(srv *mcpserver.Server, ns string) mcp.Endpoint {
	return mcp.Endpoint{Name: ns + "/s", URL: srv.URL, Namespace: ns, AllowPrivateNetwork: true, Timeout: 10 * time.Second}
}

// awaitListening waits until the server has acknowledged a stream, which
// it does once it registered the subscription. A change made before is
// not heard.
func awaitListening(t *testing.T, srv *mcpserver.Server) {
	t.Helper()
	if st, ok := srv.Await(10*time.Second, func(s mcpserver.Stats) bool { return s.Listening > 0 }); !ok {
		t.Fatalf("no stream was opened: %d listen requests", st.Methods["subscriptions/listen"])
	}
}

// awaitClosed waits until the server saw every stream to it end: a change
// made after is announced to no one.
func awaitClosed(t *testing.T, srv *mcpserver.Server, why string) {
	t.Helper()
	if st, ok := srv.Await(10*time.Second, func(s mcpserver.Stats) bool { return s.Listening == 0 }); !ok {
		t.Fatalf("%s: %d streams still open", why, st.Listening)
	}
}

// change makes a change of srv's tools and waits until it is announced.
// The library folds changes less than 10ms apart into one notification;
// waiting makes each change its own.
func change(t *testing.T, srv *mcpserver.Server, tool string) {
	t.Helper()
	sent := srv.Stats().ListChangedSent
	srv.AddTools(tool)
	if _, ok := srv.Await(10*time.Second, func(s mcpserver.Stats) bool { return s.ListChangedSent > sent }); !ok {
		t.Fatalf("adding %s was not announced", tool)
	}
}

// nextImport waits for the next import ToolListeners asks for.
func nextImport(t *testing.T, reqs *requests, why string) {
	t.Helper()
	select {
	case <-reqs.ch:
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

func TestToolListenersImportOnceForABurst(t *testing.T) {
	l := &ToolListeners{Debounce: 100 * time.Millisecond, MinInterval: time.Second}
	srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	reqs := startListeners(t, l)
	key := types.NamespacedName{Namespace: "team-a", Name: "chatty"}
	l.Observe(key, peerEndpoint(srv, key.Namespace), true)
	awaitListening(t, srv)

	// A chatty server: forty changes, each announced on its own (at
	// least 10ms apart, see change), so over longer than Debounce:
	// debouncing alone would import every 100ms.
	start := time.Now()
	for i := range 40 {
		change(t, srv, fmt.Sprintf("burst_%03d", i))
	}
	burst := time.Since(start)
	// A busy machine stretches the burst: one import per MinInterval of
	// it, plus the one after it.
	most := int(burst/l.MinInterval) + 2
	nextImport(t, reqs, "a burst of changes triggered no import")
	// The burst outlasted Debounce, so changes came after the first
	// import: they make one more, MinInterval after it.
	nextImport(t, reqs, "the changes after the first import triggered none")
	got := reqs.of(key)
	if len(got) > most {
		t.Fatalf("a burst of 40 changes over %s triggered %d imports, want at most %d", burst, len(got), most)
	}
	for i := 1; i < len(got); i++ {
		if gap := got[i].Sub(got[i-1]); gap < l.MinInterval {
			t.Errorf("two imports %s apart, want at least %s", gap, l.MinInterval)
		}
	}

	// A later change, once MinInterval has passed, is heard again.
	before := len(reqs.of(key))
	for len(reqs.ch) > 0 {
		<-reqs.ch
	}
	srv.AddTools("later")
	nextImport(t, reqs, "a later change triggered no import")
	if n := len(reqs.of(key)); n != before+1 {
		t.Errorf("%d imports after the later change, want %d", n, before+1)
	}
}

// One namespace cannot take every listener slot, and no more than Max
// streams are open.
func TestToolListenersBounds(t *testing.T) {
	l := &ToolListeners{Max: 3, MaxPerNamespace: 2}
	srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	startListeners(t, l)
	noisy := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "noisy", Name: fmt.Sprintf("s%d", i)}
	}
	for i := range 5 {
		l.Observe(noisy(i), peerEndpoint(srv, "noisy"), true)
	}
	if !l.Listening(noisy(0)) || !l.Listening(noisy(1)) || l.Listening(noisy(2)) {
		t.Fatal("the noisy namespace holds more than its 2 listeners, or not the first ones")
	}
	quiet := types.NamespacedName{Namespace: "quiet", Name: "s"}
	l.Observe(quiet, peerEndpoint(srv, "quiet"), true)
	if !l.Listening(quiet) {
		t.Fatal("another namespace found no slot beside the noisy one")
	}
	// Every slot is taken (noisy 2, quiet 1): a third namespace takes one
	// back from the namespace holding the most, and no more than Max are
	// open.
	other := types.NamespacedName{Namespace: "third", Name: "s"}
	l.Observe(other, peerEndpoint(srv, "third"), true)
	if !l.Listening(other) || l.Listening(noisy(1)) || !l.Listening(noisy(0)) || !l.Listening(quiet) {
		t.Fatal("the third namespace did not take the noisy namespace's newest slot")
	}
	// Now every namespace holds one: nobody takes a slot from another.
	l.Observe(noisy(1), peerEndpoint(srv, "noisy"), true)
	if l.Listening(noisy(1)) {
		t.Fatal("more than Max listeners are open, or a slot went back to the namespace it was taken from")
	}
	// A slot given back is taken by the next Observe.
	l.Stop(quiet)
	l.Observe(noisy(1), peerEndpoint(srv, "noisy"), true)
	if !l.Listening(noisy(1)) {
		t.Fatal("a freed slot was not used")
	}
}

// The attack: four namespaces each at their ceiling (a quarter of Max)
// held every listener, and a fifth namespace's server got none. It gets
// one, taken from a namespace holding more.
func TestFourNamespacesCannotTakeEveryListener(t *testing.T) {
	l := &ToolListeners{Max: 8}
	srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	startListeners(t, l)
	for ns := range 4 {
		for i := range 3 {
			key := types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", ns), Name: fmt.Sprintf("s%d", i)}
			l.Observe(key, peerEndpoint(srv, key.Namespace), true)
		}
	}
	if l.MaxPerNamespace != 2 {
		t.Fatalf("the default share of 8 listeners is %d, want a quarter", l.MaxPerNamespace)
	}
	late := types.NamespacedName{Namespace: "late", Name: "s"}
	l.Observe(late, peerEndpoint(srv, "late"), true)
	if !l.Listening(late) {
		t.Fatal("four namespaces at their ceiling kept a fifth out of every listener slot")
	}
	open := 0
	for ns := range 4 {
		for i := range 3 {
			if l.Listening(types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", ns), Name: fmt.Sprintf("s%d", i)}) {
				open++
			}
		}
	}
	if open+1 != 8 {
		t.Errorf("%d listeners open, want Max (8)", open+1)
	}
}

// A listener stops when the server should no longer be listened to, and a
// new endpoint (a rotated credential, a new URL) replaces it.
func TestToolListenersFollowTheEndpoint(t *testing.T) {
	l := &ToolListeners{Debounce: 50 * time.Millisecond, MinInterval: 50 * time.Millisecond}
	first := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	second := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true})
	reqs := startListeners(t, l)
	key := types.NamespacedName{Namespace: "team-a", Name: "moved"}

	l.Observe(key, peerEndpoint(first, key.Namespace), true)
	awaitListening(t, first)
	l.Observe(key, peerEndpoint(second, key.Namespace), true)
	awaitListening(t, second)
	// The old URL's stream is closed: its changes are announced to no one.
	awaitClosed(t, first, "the old URL's stream outlived the URL change")
	first.AddTools("on_the_old_url")
	change(t, second, "on_the_new_url")
	nextImport(t, reqs, "the new URL's change triggered no import")
	if n := len(reqs.of(key)); n != 1 {
		t.Fatalf("%d imports, want 1: the old URL's change triggered one", n)
	}

	l.Observe(key, peerEndpoint(second, key.Namespace), false)
	if l.Listening(key) {
		t.Fatal("the listener outlived want=false")
	}
	// Its stream is closed: a later change is announced to no one.
	awaitClosed(t, second, "the stream outlived want=false")
}

// A list the server called fresh (ttlMs) is not imported again before the
// time it gave has passed, however soon it announces a change.
func TestToolListenersRespectTheListTTL(t *testing.T) {
	l := &ToolListeners{Debounce: 10 * time.Millisecond, MinInterval: 10 * time.Millisecond}
	srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	reqs := startListeners(t, l)
	key := types.NamespacedName{Namespace: "team-a", Name: "cached"}
	l.Observe(key, peerEndpoint(srv, key.Namespace), true)
	awaitListening(t, srv)
	const ttl = 1500 * time.Millisecond
	imported := time.Now()
	l.Imported(key, ttl)
	srv.AddTools("within_the_ttl")
	nextImport(t, reqs, "the change triggered no import")
	if got := reqs.of(key)[0].Sub(imported); got < ttl {
		t.Errorf("import triggered %s after the last, within its ttl of %s", got, ttl)
	}
}
