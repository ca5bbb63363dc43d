package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Defaults of the tool listeners (docs/adr/028).
const (
	// DefaultMaxListeners bounds the streams the process keeps open.
	DefaultMaxListeners = 512
	// DefaultListenDebounce is how long a change waits for more changes
	// before the one import they all trigger.
	DefaultListenDebounce = 2 * time.Second
	// DefaultListenMinInterval is the shortest gap between two imports one
	// server's notifications trigger.
	DefaultListenMinInterval = 30 * time.Second
	// listenBackoffMin and listenBackoffMax bound the wait before a stream
	// that ended is opened again; it doubles with each failure in a row.
	listenBackoffMin = time.Second
	listenBackoffMax = 5 * time.Minute
	// listenNotOfferedWait is how long a server that offers no
	// notifications is left alone before it is asked again (a redeployed
	// server may offer them); a change of its spec or credential asks at
	// once.
	listenNotOfferedWait = time.Hour
	// listenHealthy is how long a stream must have stayed open for its end
	// to reset the backoff.
	listenHealthy = time.Minute
)

// DefaultMaxListenersPerNamespace is what one namespace may hold of max
// listeners: a quarter, so that one tenant's servers cannot take every
// slot.
func DefaultMaxListenersPerNamespace(total int) int { return max(1, total/4) }

// ToolListeners keeps a stream open to each Ready McpServer that announces
// changes of its tool list (mcp.Client.ListenTools), and turns what the
// streams report into imports through the normal reconcile: it marks the
// server's import requested in the schedule and enqueues the server. Several
// notifications within Debounce make one import, and one server's
// notifications trigger at most one import per MinInterval, so a chatty
// server cannot cause an import storm.
//
// The McpServer controller tells it, at the end of every reconcile, whether
// a server should be listened to and with which endpoint (Observe), and when
// a server is gone (Stop). It is bounded: at most Max streams in all and
// MaxPerNamespace per namespace. With every slot taken, a namespace holding
// fewer takes one from the namespace holding the most, when that holds at
// least two more, so that a few namespaces at their ceiling cannot keep
// every other namespace out. A server not listened to keeps its import
// interval.
type ToolListeners struct {
	// MCP opens the streams.
	MCP *mcp.Client
	// Max and MaxPerNamespace bound the streams open at once; 0 means
	// DefaultMaxListeners and DefaultMaxListenersPerNamespace(Max).
	Max, MaxPerNamespace int
	// Debounce and MinInterval shape the imports notifications trigger; 0
	// means DefaultListenDebounce and DefaultListenMinInterval.
	Debounce, MinInterval time.Duration
	// Selector, when set, is this instance's shard: a server it does not
	// select is not listened to (its listener stops when it leaves).
	Selector labels.Selector

	// request marks a server's import requested and enqueues it.
	request func(context.Context, types.NamespacedName)
	// refresh enqueues a server whose stream needs a fresh endpoint (an
	// expired credential).
	refresh func(context.Context, types.NamespacedName)

	mu sync.Mutex
	// ctx is the listeners' context, ended by stop when Start returns.
	ctx   context.Context
	stop  context.CancelFunc
	byKey map[types.NamespacedName]*listener
	perNS map[string]int
	// seq numbers the listeners in the order they started.
	seq uint64
	wg  sync.WaitGroup
}

// listener is one server's stream and its trigger.
type listener struct {
	key         types.NamespacedName
	fingerprint string
	ep          mcp.Endpoint
	cancel      context.CancelFunc
	// changed has room for one signal: notifications coalesce in it.
	changed chan struct{}
	// seq is when it started, among the listeners (ToolListeners.seq).
	seq uint64
	// freshUntil (Unix nanoseconds) is until when the last import's list
	// is fresh by the server's own ttlMs: no import is triggered before.
	freshUntil atomic.Int64
}

// Start runs until ctx ends, then stops every listener and waits for them;
// it implements manager.Runnable. Reconciles (and so Observe) may come
// before it runs: the listeners they start run from then on.
func (l *ToolListeners) Start(ctx context.Context) error {
	<-ctx.Done()
	l.mu.Lock()
	l.stop()
	for key := range l.byKey {
		l.stopLocked(key)
	}
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}

// NeedLeaderElection: only the instance that imports listens.
func (l *ToolListeners) NeedLeaderElection() bool { return true }

func (l *ToolListeners) init() {
	if l.Max <= 0 {
		l.Max = DefaultMaxListeners
	}
	if l.MaxPerNamespace <= 0 {
		l.MaxPerNamespace = DefaultMaxListenersPerNamespace(l.Max)
	}
	if l.Debounce <= 0 {
		l.Debounce = DefaultListenDebounce
	}
	if l.MinInterval <= 0 {
		l.MinInterval = DefaultListenMinInterval
	}
	l.byKey = map[types.NamespacedName]*listener{}
	l.perNS = map[string]int{}
	l.ctx, l.stop = context.WithCancel(context.Background())
}

// Observe says whether key should be listened to, and with which endpoint.
// A listener already open with the same endpoint (URL, credential, trust,
// network opt-ins) is kept; a different one replaces it; want false stops
// it. A server over the bounds is not listened to until a later Observe
// finds a slot.
func (l *ToolListeners) Observe(key types.NamespacedName, ep mcp.Endpoint, want bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return
	}
	cur := l.byKey[key]
	if !want {
		if cur != nil {
			l.stopLocked(key)
		}
		return
	}
	fp := endpointFingerprint(ep)
	if cur != nil {
		if cur.fingerprint == fp {
			return
		}
		l.stopLocked(key)
	}
	if l.perNS[key.Namespace] >= l.MaxPerNamespace {
		metrics.ToolListenersRefused.Inc()
		return
	}
	if len(l.byKey) >= l.Max {
		victim, ok := l.reclaimableLocked(key.Namespace)
		if !ok {
			metrics.ToolListenersRefused.Inc()
			return
		}
		l.stopLocked(victim)
	}
	l.seq++
	ctx, cancel := context.WithCancel(l.ctx)
	ln := &listener{key: key, fingerprint: fp, ep: ep, cancel: cancel, changed: make(chan struct{}, 1), seq: l.seq}
	l.byKey[key] = ln
	l.perNS[key.Namespace]++
	metrics.ToolListeners.Set(float64(len(l.byKey)))
	l.wg.Add(2)
	go l.stream(ctx, ln)
	go l.trigger(ctx, ln)
}

// Imported records that key's catalog was just imported and that the server
// called the list fresh for ttl (mcp.Catalog.TTL, at most mcp.MaxTTL): a
// change it announces within ttl waits until ttl has passed.
func (l *ToolListeners) Imported(key types.NamespacedName, ttl time.Duration) {
	l.mu.Lock()
	ln := l.byKey[key]
	l.mu.Unlock()
	if ln == nil {
		return
	}
	var until int64
	if ttl > 0 {
		until = time.Now().Add(ttl).UnixNano()
	}
	ln.freshUntil.Store(until)
}

// Stop stops key's listener, if any: the server is gone, or no longer this
// instance's.
func (l *ToolListeners) Stop(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey[key] != nil {
		l.stopLocked(key)
	}
}

// Listening reports whether key has a listener, for tests.
func (l *ToolListeners) Listening(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byKey[key] != nil
}

// reclaimableLocked is the listener to stop so that namespace ns gets a
// slot when every slot is taken: the newest of the namespace holding the
// most, when that is at least two more than ns holds. So with the slots
// full a namespace's share is never more than one above another's that
// wants more (max-min fairness), and a slot taken back is not taken back
// again by the namespace it was taken from. ok is false when no
// namespace holds that much more.
func (l *ToolListeners) reclaimableLocked(ns string) (types.NamespacedName, bool) {
	richest, most := "", 0
	for name, n := range l.perNS {
		if n > most || n == most && name < richest {
			richest, most = name, n
		}
	}
	if most <= l.perNS[ns]+1 {
		return types.NamespacedName{}, false
	}
	var newest *listener
	for key, ln := range l.byKey {
		if key.Namespace == richest && (newest == nil || ln.seq > newest.seq) {
			newest = ln
		}
	}
	if newest == nil {
		return types.NamespacedName{}, false
	}
	return newest.key, true
}

func (l *ToolListeners) stopLocked(key types.NamespacedName) {
	ln := l.byKey[key]
	ln.cancel()
	delete(l.byKey, key)
	if l.perNS[key.Namespace]--; l.perNS[key.Namespace] <= 0 {
		delete(l.perNS, key.Namespace)
	}
	metrics.ToolListeners.Set(float64(len(l.byKey)))
}

// stream keeps ln's stream open until its context ends, opening it again
// after a backoff whenever it ends.
func (l *ToolListeners) stream(ctx context.Context, ln *listener) {
	defer l.wg.Done()
	log := logging.FromContext(ctx, logging.Importer).WithValues("mcpserver", ln.key.String())
	backoff := listenBackoffMin
	for ctx.Err() == nil {
		opened := time.Now()
		err := l.MCP.ListenTools(ctx, ln.ep, mcp.ToolListener{Changed: func() {
			select {
			case ln.changed <- struct{}{}:
			default:
			}
		}})
		if ctx.Err() != nil {
			return
		}
		wait := backoff
		switch mcp.KindOf(err) {
		case mcp.KindNotOffered:
			wait = listenNotOfferedWait
		case mcp.KindCredentialExpired:
			// The endpoint the controller gave is stale; a reconcile gives
			// a fresh one, which replaces this listener.
			l.refresh(ctx, ln.key)
		}
		if time.Since(opened) >= listenHealthy {
			backoff = listenBackoffMin
		} else {
			backoff = min(backoff*2, listenBackoffMax)
		}
		log.V(logging.Debug).Info("tool list stream ended", "kind", mcp.KindOf(err), "retryIn", wait)
		// Jitter keeps servers that failed together from reconnecting
		// together.
		wait += time.Duration(rand.Int64N(int64(wait)/10 + 1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// trigger turns ln's notifications into imports: the first change of a
// burst waits Debounce for the rest, and an import follows the previous one
// by MinInterval at least.
func (l *ToolListeners) trigger(ctx context.Context, ln *listener) {
	defer l.wg.Done()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-ln.changed:
		}
		wait := l.Debounce
		if !last.IsZero() {
			wait = max(wait, l.MinInterval-time.Since(last))
		}
		if fresh := ln.freshUntil.Load(); fresh != 0 {
			wait = max(wait, time.Until(time.Unix(0, fresh)))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		// What arrived while waiting is covered by this import.
		select {
		case <-ln.changed:
		default:
		}
		last = time.Now()
		metrics.ToolListChanges.Inc()
		l.request(ctx, ln.key)
	}
}

// listenQueue is how many triggered reconciles may wait to be queued.
const listenQueue = 1024

// wanted says whether srv should be listened to after a reconcile: it is
// Ready (so its endpoint and credential are good), neither suspended nor
// stalled, and this instance's.
func (l *ToolListeners) wanted(srv *mcpv1alpha1.McpServer, ep mcp.Endpoint, stalled bool) bool {
	if stalled || srv.Spec.Suspend || !srv.DeletionTimestamp.IsZero() || ep.URL == "" {
		return false
	}
	if l.Selector != nil && !l.Selector.Matches(labels.Set(srv.Labels)) {
		return false
	}
	return meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReady)
}

// endpointFingerprint identifies what a stream was opened with. The
// credential is hashed and kept in memory only, so that a rotated Secret
// opens a new stream.
func endpointFingerprint(ep mcp.Endpoint) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %t %t\n", ep.URL, ep.Namespace, ep.AllowPrivateNetwork, ep.AllowInsecureCredential)
	if ep.CABundle != nil {
		fmt.Fprintf(h, "%q\n", ep.CABundle.Key())
	}
	if c := ep.Credential; c != nil {
		fmt.Fprintf(h, "%q %q %d\n", c.Header, c.Value.Reveal(), c.Expires.UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))
}
