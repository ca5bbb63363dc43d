package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// What an agent is told when what it may see changes
// (docs/adr/033-agents-told-of-changes.md). A session of the initialize
// era, and a 2026-07-28 subscriptions/listen stream that asked for
// toolsListChanged, is watched: its caller's identity and the server that
// serves it. When the informers see an McpTool, McpServer or
// McpAccessPolicy change, the namespace is marked; a round, at most one per
// debounce interval, decides each watched caller's list again, once per
// identity, and only a watcher whose list, as the agent reads it, hashes
// differently has its server's tools replaced, which makes the SDK send it
// notifications/tools/list_changed. A caller is never told of a change to a
// tool it cannot see: its list did not change.

const (
	// DefaultListTTL is the ttlMs of list results: how long an agent may
	// use a tools/list result without asking again.
	DefaultListTTL = 30 * time.Second
	// DefaultListChangeDebounce is the shortest time between two rounds:
	// the changes of one burst are told in one notification.
	DefaultListChangeDebounce = time.Second
	// DefaultListResync decides every watched list again even when no
	// watched kind changed: RBAC (Roles and their bindings) is not
	// watched, and a grant or revocation shows at the next resync.
	DefaultListResync = 5 * time.Minute
	// MaxListWatchers bounds the sessions and listen streams one replica
	// tells of changes; MaxListWatchersPerServiceAccount bounds one
	// ServiceAccount's. A session over a bound is served, but not told; a
	// listen stream over one is acknowledged without toolsListChanged.
	MaxListWatchers                  = 10000
	MaxListWatchersPerServiceAccount = 32
	// MaxListWatchersPerNamespace bounds one namespace's, all its
	// ServiceAccounts together: no namespace takes the replica's bound.
	MaxListWatchersPerNamespace = 512
)

const (
	methodInitialized     = "notifications/initialized"
	methodListen          = "subscriptions/listen"
	notificationToolsList = "notifications/tools/list_changed"
)

// The results of notifications, the label of
// mcp_catalog_gateway_tool_list_notifications_total.
const (
	NotificationSent = "sent"
	// NotificationFailed: the SDK could not write it (an initialize-era
	// session without its GET stream open, a closed stream).
	NotificationFailed = "failed"
	// NotificationCoalesced: one was still being written to the same
	// session, which will list the newest tools when it reads that one.
	NotificationCoalesced = "coalesced"
)

// The kinds of watchers, the label of mcp_catalog_gateway_tool_list_watchers.
const (
	watchSession = "session"
	watchListen  = "listen"
)

// changes is the registry of watchers and of what changed since the last
// round.
type changes struct {
	// running is set while a ToolListNotifier runs: only then is
	// listChanged declared.
	running atomic.Bool
	// gen counts the marks; every request that lists reads it, so it
	// takes no lock.
	gen atomic.Uint64

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	perSA    map[string]int
	perNS    map[string]int
	dirty    map[string]struct{}
	// owners are the namespaces whose McpTools or McpServers changed
	// since the last round, their consumers already marked.
	owners map[string]struct{}
	all    bool
	// wake has room for one signal: marks made while one waits are one.
	wake chan struct{}
}

func newChanges() *changes {
	return &changes{
		watchers: map[*watcher]struct{}{},
		perSA:    map[string]int{},
		perNS:    map[string]int{},
		dirty:    map[string]struct{}{},
		owners:   map[string]struct{}{},
		wake:     make(chan struct{}, 1),
	}
}

// watcher is one session or listen stream told of changes.
type watcher struct {
	id    authn.Identity
	key   string
	kind  string
	offer *offer
	// hash is of the list the agent was last offered; only the round reads
	// and writes it once the watcher is registered.
	hash [sha256.Size]byte
	// sending is set while a notification is being written to it.
	sending atomic.Bool
}

// generation counts the changes seen; an offer built at one generation and
// watched at another may have missed one, and its namespace is decided
// again.
func (c *changes) generation() uint64 { return c.gen.Load() }

// mark records that what the callers of namespace may see may have changed.
func (c *changes) mark(namespace string) {
	// The count first: a watcher registered before the namespace is
	// marked is in the next round; one registered after it saw the count
	// move.
	c.gen.Add(1)
	c.mu.Lock()
	c.dirty[namespace] = struct{}{}
	c.mu.Unlock()
	c.signal()
}

// ownerChanged records that an McpTool or McpServer of namespace changed
// and reports whether it is the first such change since the last round.
func (c *changes) ownerChanged(namespace string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, seen := c.owners[namespace]
	c.owners[namespace] = struct{}{}
	return !seen
}

// markAll decides every watched list again at the next round.
func (c *changes) markAll() {
	c.mu.Lock()
	c.all = true
	c.mu.Unlock()
	c.signal()
}

func (c *changes) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take returns the watchers a round decides again, grouped by identity,
// and forgets the marks.
func (c *changes) take() map[string][]*watcher {
	c.mu.Lock()
	defer c.mu.Unlock()
	groups := map[string][]*watcher{}
	for w := range c.watchers {
		if _, ok := c.dirty[w.id.Namespace]; ok || c.all {
			groups[w.key] = append(groups[w.key], w)
		}
	}
	clear(c.dirty)
	clear(c.owners)
	c.all = false
	return groups
}

// watch registers o, offered to id as of generation gen, within the
// bounds; it reports false when a bound is reached.
func (c *changes) watch(o *offer, id authn.Identity, gen uint64, kind string) (*watcher, bool) {
	key, err := json.Marshal(id)
	if err != nil {
		return nil, false
	}
	w := &watcher{id: id, key: string(key), kind: kind, offer: o, hash: o.hash()}
	sa := id.Key()
	c.mu.Lock()
	if len(c.watchers) >= MaxListWatchers || c.perSA[sa] >= MaxListWatchersPerServiceAccount || c.perNS[id.Namespace] >= MaxListWatchersPerNamespace {
		c.mu.Unlock()
		metrics.GatewayToolListWatchersRefused.Inc()
		return nil, false
	}
	c.watchers[w] = struct{}{}
	c.perSA[sa]++
	c.perNS[id.Namespace]++
	missed := c.gen.Load() != gen
	c.mu.Unlock()
	o.mu.Lock()
	o.watcher = w
	o.mu.Unlock()
	metrics.GatewayToolListWatchers.WithLabelValues(kind).Inc()
	if missed {
		c.mark(id.Namespace)
	}
	return w, true
}

func (c *changes) unwatch(w *watcher) {
	sa := w.id.Key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.watchers[w]; !ok {
		return
	}
	delete(c.watchers, w)
	if c.perSA[sa]--; c.perSA[sa] <= 0 {
		delete(c.perSA, sa)
	}
	if c.perNS[w.id.Namespace]--; c.perNS[w.id.Namespace] <= 0 {
		delete(c.perNS, w.id.Namespace)
	}
	metrics.GatewayToolListWatchers.WithLabelValues(w.kind).Dec()
}

// watchedOffer is the server of a request that lists, or starts a session
// or a listen stream: the tools the caller may see now. Where the gateway
// can tell the caller of changes, it declares tools.listChanged and
// watches the session once it is initialized, or the listen stream while
// it is open: an initialize-era session kept in this process (not
// Options.Stateless, where no session outlives its request), and every
// 2026-07-28 listen stream.
func (g *Gateway) watchedOffer(r *http.Request, log logr.Logger, id *authn.Identity, gen uint64, tools []toolOffer) *sdk.Server {
	modern := modernRequest(r)
	told := g.changes.running.Load() && (modern || !g.Stateless)
	presented := g.present(log, tools)
	var o *offer
	if modern && r.Header.Get("Mcp-Method") == methodListen {
		// A listen stream lists nothing and calls nothing: it keeps the
		// hash of what its caller may see, and its server no tools.
		o = g.newOffer(g.newServer(told), log, nil)
		o.listHash, o.hashOnly = hashTools(presented), true
	} else {
		o = g.newOffer(g.newServer(told), log, presented)
	}
	if !told {
		return o.s
	}
	ident := *id
	o.s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch {
			case method == methodInitialized && !modern:
				res, err := next(ctx, method, req)
				ss, ok := req.GetSession().(*sdk.ServerSession)
				if err == nil && ok && o.unwatched() {
					if w, ok := g.changes.watch(o, ident, gen, watchSession); ok {
						go func() {
							_ = ss.Wait()
							g.changes.unwatch(w)
						}()
					}
				}
				return res, err
			case method == methodListen && modern:
				lreq, ok := req.(*sdk.SubscriptionsListenRequest)
				if !ok || lreq.Params == nil || lreq.Params.Notifications == nil || !lreq.Params.Notifications.ToolsListChanged || !o.unwatched() {
					return next(ctx, method, req)
				}
				w, ok := g.changes.watch(o, ident, gen, watchListen)
				if !ok {
					// Over a bound: acknowledged without toolsListChanged,
					// which ends the stream at once; the list's ttlMs still
					// bounds how stale the agent's list gets.
					n := *lreq.Params.Notifications
					n.ToolsListChanged = false
					p := *lreq.Params
					p.Notifications = &n
					narrowed := *lreq
					narrowed.Params = &p
					return next(ctx, method, &narrowed)
				}
				defer g.changes.unwatch(w)
				return next(ctx, method, req)
			}
			return next(ctx, method, req)
		}
	})
	o.s.AddSendingMiddleware(o.oneNotificationAtATime)
	return o.s
}

// oneNotificationAtATime lets one list_changed at a time be written to the
// offer's session, and only one that a replacement asked for. A session that does not read its stream blocks the
// write in the SDK; without this, every change would leave one more
// goroutine blocked on it. One in flight is enough: when the agent reads
// it, it lists the tools as they are then.
func (o *offer) oneNotificationAtATime(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != notificationToolsList {
			return next(ctx, method, req)
		}
		o.mu.RLock()
		w := o.watcher
		o.mu.RUnlock()
		if w == nil {
			return next(ctx, method, req)
		}
		// Only one notification per replacement: those of its single steps
		// are not sent, nor is one while another is still being written.
		if !o.pending.Swap(false) || !w.sending.CompareAndSwap(false, true) {
			metrics.GatewayToolListNotifications.WithLabelValues(NotificationCoalesced).Inc()
			return nil, nil
		}
		defer w.sending.Store(false)
		res, err := next(ctx, method, req)
		result := NotificationSent
		if err != nil {
			result = NotificationFailed
		}
		metrics.GatewayToolListNotifications.WithLabelValues(result).Inc()
		return res, err
	}
}

func (o *offer) unwatched() bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.watcher == nil
}

// hash is of the tools the offer has, as the agent reads them (for a
// listen stream's offer, which has none, of those its caller may see).
func (o *offer) hash() [sha256.Size]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.hashOnly {
		return o.listHash
	}
	tools := make([]presented, 0, len(o.offered))
	for _, p := range o.offered {
		tools = append(tools, p)
	}
	h := hashTools(tools)
	for _, p := range tools {
		o.offered[p.tool.Name] = p
	}
	return h
}

// hashTools hashes a list as the agent reads it, in name order, whatever
// order it is given in, and keeps each tool's encoding in def.
func hashTools(tools []presented) [sha256.Size]byte {
	sortPresented(tools)
	h := sha256.New()
	for i := range tools {
		if tools[i].def == nil {
			def, err := json.Marshal(tools[i].tool)
			if err != nil {
				// Not a definition the SDK could serve either; it still
				// counts, by name.
				def = []byte(fmt.Sprintf("%q", tools[i].tool.Name))
			} else if taskSupportShown(tools[i].taskSupport) {
				// What an agent of the revision with tasks reads too.
				def = withExecution(def, tools[i].taskSupport)
			}
			tools[i].def = def
		}
		fmt.Fprintf(h, "%d:", len(tools[i].def))
		h.Write(tools[i].def)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func sortPresented(tools []presented) {
	sort.Slice(tools, func(i, j int) bool { return tools[i].tool.Name < tools[j].tool.Name })
}

// replace makes the offer's tools next: those gone leave the set before
// the server, those new or changed join it after. The SDK notifies the
// offer's session of each change, debounced by a few milliseconds; of
// those, only one sent after the whole replacement goes out (pending, and
// oneNotificationAtATime), so that one replacement is one notification,
// and the agent that reads it lists the new offer complete.
func (o *offer) replace(g *Gateway, log logr.Logger, next []presented) {
	want := make(map[string]presented, len(next))
	for _, p := range next {
		want[p.tool.Name] = p
	}
	var gone []string
	var changed []presented
	o.mu.Lock()
	for name := range o.offered {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(o.offered, name)
		}
	}
	for _, p := range next {
		if cur, ok := o.offered[p.tool.Name]; !ok || cur.key != p.key || string(cur.def) != string(p.def) {
			changed = append(changed, p)
		}
	}
	o.mu.Unlock()
	if len(next) == 0 {
		// Everything goes: that removal is the change told.
		o.pending.Store(true)
		if len(gone) > 0 {
			o.s.RemoveTools(gone...)
		}
		return
	}
	if len(gone) > 0 {
		o.s.RemoveTools(gone...)
	}
	for _, p := range changed {
		o.add(g, log, p)
	}
	o.pending.Store(true)
	// One more change after the others, the same tool again: the SDK's
	// notification of it comes after the offer is complete.
	for _, p := range next {
		if o.has(p.tool.Name) {
			o.add(g, log, p)
			return
		}
	}
}

// poke tells a listen stream's offer, which has no tools, that its
// caller's list changed: one tool added and removed at once is one change
// to the SDK, whose notification of it the stream is sent.
func (o *offer) poke(g *Gateway, log logr.Logger) {
	o.pending.Store(true)
	if err := addTool(o.s, pokeTool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return refusal(unknownTool), nil
	}); err != nil {
		log.Error(err, "telling a listen stream of a change failed")
		return
	}
	o.s.RemoveTools(pokeTool.Name)
}

// pokeTool is the tool poke adds and removes; no agent is offered it.
var pokeTool = &sdk.Tool{Name: "gateway-list-changed", InputSchema: json.RawMessage(`{"type":"object"}`)}

// decideWatched is one round: each identity's list is decided once, and
// each of its watchers whose list changed is offered the new one (and so
// told). An identity whose list cannot be decided now is tried again at
// the next round.
func (g *Gateway) decideWatched(ctx context.Context, groups map[string][]*watcher) {
	log := logging.FromContext(ctx, logging.Gateway)
	for _, ws := range groups {
		id := ws[0].id
		tools, err := g.visibleTools(ctx, &id)
		if err != nil {
			log.Error(err, "deciding a watched tool list failed", "namespace", id.Namespace)
			g.changes.mark(id.Namespace)
			continue
		}
		next := g.present(log, tools)
		h := hashTools(next)
		for _, w := range ws {
			if w.hash == h {
				continue
			}
			w.hash = h
			if w.offer.hashOnly {
				w.offer.poke(g, log)
				continue
			}
			w.offer.replace(g, log, next)
		}
	}
}

// setCacheable sets the cache fields of every list result and of
// server/discover. A tool list is the caller's own (its RBAC, its
// ceiling), so it is private: no cache may serve it to another
// authorization context. What server/discover answers is the same for
// every caller.
func (g *Gateway) setCacheable(_ context.Context, req sdk.Request, c *sdk.Cacheable) {
	c.TTLMs = int(g.listTTL().Milliseconds())
	c.CacheScope = "private"
	if _, ok := req.(*sdk.ServerRequest[*sdk.DiscoverParams]); ok {
		c.CacheScope = "public"
	}
}

func (g *Gateway) listTTL() time.Duration {
	if g.ListTTL > 0 {
		return g.ListTTL
	}
	return DefaultListTTL
}

// listenRequest reports whether r opens a 2026-07-28 subscriptions/listen
// stream. The SDK refuses a request whose Mcp-Method header and body
// disagree, so the header can be trusted once the request is served.
func listenRequest(r *http.Request) bool {
	return modernRequest(r) && r.Header.Get("Mcp-Method") == methodListen
}

// ToolListNotifier tells agents when what they may see changes: it marks
// a namespace when the informers see one of its McpTools, McpServers,
// McpAccessPolicies or McpSharedServers change, or its own labels (a
// grant's selector reads them); a change of an McpTool or McpServer also
// marks every other namespace that accepted a server of its namespace
// (docs/adr/032-shared-catalog.md). It runs the rounds on every replica:
// each tells its own sessions and streams.
type ToolListNotifier struct {
	Gateway *Gateway
	Cache   cache.Informers
	// Debounce is the shortest time between rounds; 0 means
	// DefaultListChangeDebounce. Resync decides every watched list again;
	// 0 means DefaultListResync.
	Debounce time.Duration
	Resync   time.Duration
}

// NeedLeaderElection is false: every replica tells its own sessions.
func (n *ToolListNotifier) NeedLeaderElection() bool { return false }

// Start watches and runs rounds until ctx ends.
func (n *ToolListNotifier) Start(ctx context.Context) error {
	c := n.Gateway.changes
	for _, w := range []struct {
		obj client.Object
		// mark marks the namespaces whose callers a change of one
		// object of the kind may concern.
		mark func(obj any)
		// forget drops what the gateway compiled for an object that is
		// gone, so that it no longer counts against its namespace's
		// bound (internal/toolview); nil for a kind it compiles nothing
		// for.
		forget func(types.NamespacedName)
	}{
		{&mcpv1alpha1.McpTool{}, func(obj any) { n.markOwner(ctx, obj) }, n.Gateway.views.Forget},
		{&mcpv1alpha1.McpServer{}, func(obj any) { n.markOwner(ctx, obj) }, nil},
		{&mcpv1alpha1.McpAccessPolicy{}, func(obj any) { markObject(c, obj) }, nil},
		{&mcpv1alpha1.McpSharedServer{}, func(obj any) { markObject(c, obj) }, n.Gateway.sharedRules.Forget},
		// A Namespace is its own: its name is the namespace marked.
		{&corev1.Namespace{}, func(obj any) { c.mark(objectKey(obj).Name) }, nil},
	} {
		inf, err := n.Cache.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("gateway: the informer of %T: %w", w.obj, err)
		}
		mark, forget := w.mark, w.forget
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					mark(obj)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, ok1 := oldObj.(client.Object)
				cur, ok2 := newObj.(client.Object)
				if ok1 && ok2 && o.GetResourceVersion() == cur.GetResourceVersion() {
					return // a resync: nothing changed
				}
				mark(newObj)
			},
			DeleteFunc: func(obj any) {
				if forget != nil {
					forget(objectKey(obj))
				}
				mark(obj)
			},
		})
		if err != nil {
			return fmt.Errorf("gateway: watching %T: %w", w.obj, err)
		}
		defer func() { _ = inf.RemoveEventHandler(reg) }()
	}
	debounce, resync := n.Debounce, n.Resync
	if debounce <= 0 {
		debounce = DefaultListChangeDebounce
	}
	if resync <= 0 {
		resync = DefaultListResync
	}
	c.running.Store(true)
	defer c.running.Store(false)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	c.rounds(ctx, func() <-chan time.Time { return time.After(debounce) }, tick.C, func(groups map[string][]*watcher) {
		n.Gateway.decideWatched(ctx, groups)
	})
	return nil
}

// rounds runs round for what was marked, once per wake and only when
// settled fires after it, so that the rest of a burst is in the same
// round; marks made during a round wake the next. resync marks everything.
// It returns when ctx ends.
func (c *changes) rounds(ctx context.Context, settled func() <-chan time.Time, resync <-chan time.Time, round func(map[string][]*watcher)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-resync:
			c.markAll()
			continue
		case <-c.wake:
		}
		select {
		case <-ctx.Done():
			return
		case <-settled():
		}
		round(c.take())
	}
}

// markObject marks the namespace of an informer's object, a deleted one
// included.
func markObject(c *changes, obj any) {
	if key := objectKey(obj); key.Name != "" {
		c.mark(key.Namespace)
	}
}

// objectKey is the namespace and name of an informer's object, a deleted
// one included; empty when obj is neither.
func objectKey(obj any) types.NamespacedName {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		ns, name, err := toolscache.SplitMetaNamespaceKey(d.Key)
		if err != nil {
			return types.NamespacedName{}
		}
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	if o, ok := obj.(client.Object); ok {
		return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	return types.NamespacedName{}
}

// markOwner marks the namespace of an McpTool or McpServer and every other
// namespace with an McpSharedServer of a server there: what those callers
// may see is the owner's tool under their own name. The accepting
// namespaces are looked up once per owner namespace and round, not for
// each of an import's many McpTool events. When the cache cannot say who
// accepted, every watched list is decided again.
func (n *ToolListNotifier) markOwner(ctx context.Context, obj any) {
	c := n.Gateway.changes
	owner := objectKey(obj).Namespace
	if owner == "" {
		return
	}
	c.mark(owner)
	if !c.ownerChanged(owner) {
		return
	}
	var accepted mcpv1alpha1.McpSharedServerList
	if err := n.Gateway.Reader.List(ctx, &accepted, client.UnsafeDisableDeepCopy); err != nil {
		c.markAll()
		return
	}
	for i := range accepted.Items {
		if ss := &accepted.Items[i]; ss.Spec.Server.Namespace == owner && ss.Namespace != owner {
			c.mark(ss.Namespace)
		}
	}
}
