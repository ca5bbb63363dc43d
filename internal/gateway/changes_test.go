package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/poll"
)

// rbacTable lets each ServiceAccount call the McpTools it names.
type rbacTable map[string][]string

func (r rbacTable) CanCall(_ context.Context, id *authn.Identity, _, tool string) (bool, error) {
	return slices.Contains(r[id.ServiceAccount], tool), nil
}

// vault is the tool only the wide agent may call (not observe_test's
// secret, which no test may call: the metrics must never name it).
var (
	vaultObject, _ = toolname.ObjectName("docs", "vault")
	vaultLocal     = toolname.LocalName("docs", "vault")
)

const (
	chNS        = "team"
	chWideToken = "wide-token"
	chNarrow    = "narrow-token"
)

// changesGateway serves the tools echo and vault of team/docs to two
// agents: wide may call both, narrow only echo. It is told of changes as
// a running ToolListNotifier would have it told; the test runs the
// rounds itself.
func changesGateway(t *testing.T) (*Gateway, client.Client, string) {
	t.Helper()
	no := false
	tool := func(remote string) *mcpv1alpha1.McpTool {
		name, err := toolname.ObjectName("docs", remote)
		if err != nil {
			t.Fatal(err)
		}
		tl := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: chNS, Name: name, Generation: 1},
			Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: remote,
				ApprovedDefinitionHash: hashA},
		}
		tl.Status.LocalName, tl.Status.EffectiveDataClass, tl.Status.DefinitionHash = toolname.LocalName("docs", remote), mcpv1alpha1.DataClassPublic, hashA
		tl.Status.Description = "the " + remote + " tool"
		tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		tl.Status.EffectiveApprovalRequired = &no
		return tl
	}
	objects := []client.Object{
		tool("echo"), tool("vault"),
		server(chNS, "docs", mcpv1alpha1.DataClassPublic, false),
		&mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: chNS, Name: "agents"},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"wide", "narrow"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
		},
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	o := completeOptions()
	o.Reader = c
	o.Authn = tokenTable{
		chWideToken: {Username: "system:serviceaccount:team:wide", Namespace: chNS, ServiceAccount: "wide"},
		chNarrow:    {Username: "system:serviceaccount:team:narrow", Namespace: chNS, ServiceAccount: "narrow"},
	}
	o.Authz = rbacTable{"wide": {echoObject, vaultObject}, "narrow": {echoObject}}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	g.changes.running.Store(true)
	hs := httptest.NewServer(g.Handler())
	t.Cleanup(hs.Close)
	return g, c, hs.URL
}

// listener is an agent's go-sdk client session that counts the
// notifications/tools/list_changed it receives.
type listener struct {
	cs   *sdk.ClientSession
	told chan struct{}
	n    atomic.Int32
}

func listen(t *testing.T, url, token, version string) *listener {
	t.Helper()
	l := &listener{told: make(chan struct{}, 100)}
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			l.n.Add(1)
			l.told <- struct{}{}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + Path, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the session speaks %s, want %s", got, version)
	}
	t.Cleanup(func() { _ = cs.Close() })
	l.cs = cs
	return l
}

// waitTold waits for the next notification.
func (l *listener) waitTold(t *testing.T, who string) {
	t.Helper()
	select {
	case <-l.told:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s was not told that its tools changed", who)
	}
}

func (l *listener) names(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := l.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// change edits an McpTool and runs the round the informer's event leads
// to.
func change(t *testing.T, g *Gateway, c client.Client, object string, edit func(*mcpv1alpha1.McpTool)) {
	t.Helper()
	ctx := context.Background()
	tl := &mcpv1alpha1.McpTool{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: chNS, Name: object}, tl); err != nil {
		t.Fatal(err)
	}
	edit(tl)
	if err := c.Update(ctx, tl); err != nil {
		t.Fatal(err)
	}
	g.changes.mark(chNS)
	g.decideWatched(ctx, g.changes.take())
}

func watching(g *Gateway) int {
	g.changes.mu.Lock()
	defer g.changes.mu.Unlock()
	return len(g.changes.watchers)
}

func hashOf(g *Gateway, sa string) [32]byte {
	g.changes.mu.Lock()
	defer g.changes.mu.Unlock()
	for w := range g.changes.watchers {
		if w.id.ServiceAccount == sa {
			return w.hash
		}
	}
	return [32]byte{}
}

// An agent is told when a tool it may see is disabled, changes or comes
// back, in an initialize-era session and on a 2026-07-28 listen stream,
// and lists the new offer on the same session. An agent that cannot see
// the tool is told nothing: its list did not change.
func TestAgentsAreToldWhenWhatTheyMaySeeChanges(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			g, c, url := changesGateway(t)
			wide := listen(t, url, chWideToken, version)
			narrow := listen(t, url, chNarrow, version)
			poll.Until(t, 10*time.Second, "both sessions watched", func() error {
				if n := watching(g); n != 2 {
					return fmt.Errorf("%d watched", n)
				}
				return nil
			})
			if got, want := wide.names(t), []string{echoLocal, vaultLocal}; !slices.Equal(got, want) {
				t.Fatalf("wide lists %v, want %v", got, want)
			}
			if got, want := narrow.names(t), []string{echoLocal}; !slices.Equal(got, want) {
				t.Fatalf("narrow lists %v, want %v", got, want)
			}

			// A change nobody reads (a label) tells nobody.
			change(t, g, c, vaultObject, func(tl *mcpv1alpha1.McpTool) { tl.Labels = map[string]string{"team": "docs"} })

			// vault is disabled: wide is told and no longer offered it;
			// narrow, which cannot see it, is not even decided anew.
			narrowBefore := hashOf(g, "narrow")
			change(t, g, c, vaultObject, func(tl *mcpv1alpha1.McpTool) { tl.Spec.Enabled = false })
			wide.waitTold(t, "wide")
			if got, want := wide.names(t), []string{echoLocal}; !slices.Equal(got, want) {
				t.Fatalf("after vault was disabled, wide lists %v on its session, want %v", got, want)
			}
			if hashOf(g, "narrow") != narrowBefore {
				t.Fatal("narrow's offer was replaced for a tool it cannot see")
			}

			// echo's description changes: both are told, and read it.
			change(t, g, c, echoObject, func(tl *mcpv1alpha1.McpTool) { tl.Status.Description = "echoes, reviewed again" })
			wide.waitTold(t, "wide")
			narrow.waitTold(t, "narrow")

			// vault is enabled again: wide is offered it on the session
			// it has, and can call it there.
			change(t, g, c, vaultObject, func(tl *mcpv1alpha1.McpTool) { tl.Spec.Enabled = true })
			wide.waitTold(t, "wide")
			if got, want := wide.names(t), []string{echoLocal, vaultLocal}; !slices.Equal(got, want) {
				t.Fatalf("after vault came back, wide lists %v, want %v", got, want)
			}

			// Each session's notifications arrive in order, and the last
			// of them is in: wide was told of three changes, narrow of the
			// one it could see.
			if w, n := wide.n.Load(), narrow.n.Load(); w != 3 || n != 1 {
				t.Fatalf("wide was told %d times and narrow %d, want 3 and 1", w, n)
			}

			// The list is the caller's own: cached only within its
			// authorization context, for the list TTL.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := narrow.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.CacheScope != "private" || res.TTLMs != int(DefaultListTTL.Milliseconds()) {
				t.Fatalf("a tools/list result says cacheScope %q and ttlMs %d, want private and %d", res.CacheScope, res.TTLMs, DefaultListTTL.Milliseconds())
			}
		})
	}
}

// A burst of changes between two rounds is one notification per session,
// however many tools it touched, and the rounds coalesce the burst's
// marks: a hundred updates are one round.
func TestABurstOfChangesIsOneNotification(t *testing.T) {
	g, c, url := changesGateway(t)
	wide := listen(t, url, chWideToken, "2026-07-28")
	poll.Until(t, 10*time.Second, "the listen stream watched", func() error {
		if n := watching(g); n != 1 {
			return fmt.Errorf("%d watched", n)
		}
		return nil
	})

	// The loop: a hundred marks before a round settles are one round.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx2 := context.Background()
	for i := range 100 {
		object := echoObject
		if i%2 == 1 {
			object = vaultObject
		}
		tl := &mcpv1alpha1.McpTool{}
		if err := c.Get(ctx2, types.NamespacedName{Namespace: chNS, Name: object}, tl); err != nil {
			t.Fatal(err)
		}
		tl.Status.Description = fmt.Sprintf("version %d", i)
		if err := c.Update(ctx2, tl); err != nil {
			t.Fatal(err)
		}
		g.changes.mark(chNS)
	}
	settle := make(chan time.Time)
	rounds := make(chan int, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.changes.rounds(ctx, func() <-chan time.Time { return settle }, nil, func(groups map[string][]*watcher) {
			g.decideWatched(ctx, groups)
			rounds <- len(groups)
		})
	}()
	settle <- time.Now()
	if n := <-rounds; n != 1 {
		t.Fatalf("the round decided %d identities, want the one watching", n)
	}
	wide.waitTold(t, "wide")

	// One more change, told on its own: it arrives after any other the
	// burst could have caused.
	change(t, g, c, echoObject, func(tl *mcpv1alpha1.McpTool) { tl.Status.Description = "after the burst" })
	wide.waitTold(t, "wide")
	if n := wide.n.Load(); n != 2 {
		t.Fatalf("told %d times for a burst and one change, want 2", n)
	}
	cancel()
	<-done
	if len(rounds) != 0 {
		t.Fatalf("%d more rounds ran for the burst", len(rounds))
	}
}

// stuckTransport is a session whose agent never reads what the gateway
// sends on its stream: the write of a list_changed blocks until the test
// ends, as a full TCP window would hold it.
type stuckTransport struct {
	sdk.Transport
	release  chan struct{}
	inWrite  atomic.Int32
	maxWrite atomic.Int32
	started  atomic.Int32
}

func (s *stuckTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := s.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stuckConn{Connection: c, t: s}, nil
}

type stuckConn struct {
	sdk.Connection
	t *stuckTransport
}

func (c *stuckConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == notificationToolsList {
		n := c.t.inWrite.Add(1)
		defer c.t.inWrite.Add(-1)
		for {
			m := c.t.maxWrite.Load()
			if n <= m || c.t.maxWrite.CompareAndSwap(m, n) {
				break
			}
		}
		c.t.started.Add(1)
		<-c.t.release
		return errors.New("stream closed")
	}
	return c.Connection.Write(ctx, msg)
}

// notifications reads a counter of GatewayToolListNotifications.
func notifications(t *testing.T, result string) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.GatewayToolListNotifications.WithLabelValues(result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A session that never reads its stream holds at most one notification
// write, never a round, and never another session's notifications: the
// later changes are coalesced into the one it has not read.
func TestASessionThatNeverReadsBlocksNothing(t *testing.T) {
	g, c, _ := changesGateway(t)
	id := authn.Identity{Username: "system:serviceaccount:team:wide", Namespace: chNS, ServiceAccount: "wide"}
	stuck := &stuckTransport{release: make(chan struct{})}
	defer close(stuck.release) // before the sessions close: closing waits for the write

	connect := func(tr func(sdk.Transport) sdk.Transport, l *listener) {
		t.Helper()
		tools, err := g.visibleTools(context.Background(), &id)
		if err != nil {
			t.Fatal(err)
		}
		s := g.watchedOffer(httptest.NewRequest(http.MethodPost, Path, nil), logr.Discard(), &id, g.changes.generation(), tools)
		ct, st := sdk.NewInMemoryTransports()
		ctx := context.Background()
		ss, err := s.Connect(ctx, tr(st), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		opts := &sdk.ClientOptions{}
		if l != nil {
			opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) {
				l.n.Add(1)
				l.told <- struct{}{}
			}
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, opts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
	}
	connect(func(st sdk.Transport) sdk.Transport { stuck.Transport = st; return stuck }, nil)
	healthy := &listener{told: make(chan struct{}, 100)}
	connect(func(st sdk.Transport) sdk.Transport { return st }, healthy)
	poll.Until(t, 10*time.Second, "both sessions watched", func() error {
		if n := watching(g); n != 2 {
			return fmt.Errorf("%d watched", n)
		}
		return nil
	})

	coalesced := notifications(t, NotificationCoalesced)
	const edits = 20
	for i := range edits {
		done := make(chan struct{})
		go func() {
			defer close(done)
			change(t, g, c, echoObject, func(tl *mcpv1alpha1.McpTool) { tl.Status.Description = fmt.Sprintf("version %d", i) })
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d did not return: a session that does not read held it", i)
		}
		healthy.waitTold(t, "the session that reads")
	}
	if n := healthy.n.Load(); n != edits {
		t.Fatalf("the session that reads was told %d times of %d changes", n, edits)
	}
	poll.Until(t, 10*time.Second, "the stuck session's first notification written", func() error {
		if stuck.started.Load() == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	if m := stuck.maxWrite.Load(); m != 1 {
		t.Fatalf("%d notification writes were blocked on the stuck session at once, want 1", m)
	}
	if s := stuck.started.Load(); s != 1 {
		t.Fatalf("%d notification writes were started on the stuck session, want 1: the rest coalesce into it", s)
	}
	// The SDK may fold the changes of rounds close together into one
	// notification before it reaches the gateway's check, so the count is
	// not the number of rounds; some were coalesced.
	if got := notifications(t, NotificationCoalesced) - coalesced; got < 1 {
		t.Fatalf("%v notifications coalesced, want some", got)
	}
}

// The watchers are bounded per ServiceAccount: a session over the bound is
// served but not watched, and a listen stream over it is acknowledged
// without toolsListChanged, so it does not stay open.
func TestWatchersAreBoundedPerServiceAccount(t *testing.T) {
	g, _, url := changesGateway(t)
	id := authn.Identity{Username: "system:serviceaccount:team:wide", Namespace: chNS, ServiceAccount: "wide"}
	for range MaxListWatchersPerServiceAccount {
		o := g.newOffer(g.newServer(true), logr.Discard(), nil)
		if _, ok := g.changes.watch(o, id, g.changes.generation(), watchListen); !ok {
			t.Fatal("a watcher within the bound was refused")
		}
	}
	o := g.newOffer(g.newServer(true), logr.Discard(), nil)
	if _, ok := g.changes.watch(o, id, g.changes.generation(), watchListen); ok {
		t.Fatal("a watcher over the bound was registered")
	}
	// A real listen over the bound ends at once: the client still
	// connects, and another ServiceAccount is unaffected.
	listen(t, url, chWideToken, "2026-07-28")
	listen(t, url, chNarrow, "2026-07-28")
	poll.Until(t, 10*time.Second, "narrow's listen watched", func() error {
		if hashOf(g, "narrow") == ([32]byte{}) {
			return errors.New("not watched")
		}
		return nil
	})
	if n := watching(g); n != MaxListWatchersPerServiceAccount+1 {
		t.Fatalf("%d watched, want the bound for wide and one for narrow", n)
	}
}

// Closing a session or a listen stream forgets it.
func TestClosedSessionsAreForgotten(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			g, _, url := changesGateway(t)
			l := listen(t, url, chWideToken, version)
			poll.Until(t, 10*time.Second, "the session watched", func() error {
				if n := watching(g); n != 1 {
					return fmt.Errorf("%d watched", n)
				}
				return nil
			})
			_ = l.cs.Close()
			poll.Until(t, 10*time.Second, "the session forgotten", func() error {
				if n := watching(g); n != 0 {
					return fmt.Errorf("%d watched", n)
				}
				return nil
			})
		})
	}
}

// A stateless gateway keeps no initialize-era session, so it cannot tell
// one: it does not declare listChanged there, and does in 2026-07-28,
// where a listen stream is its own request.
func TestListChangedIsDeclaredWhereItIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		stateless, running bool
		version            string
		want               bool
	}{
		{false, true, "2025-11-25", true},
		{true, true, "2025-11-25", false},
		{true, true, "2026-07-28", true},
		{false, false, "2025-11-25", false},
		{false, false, "2026-07-28", false},
	} {
		t.Run(fmt.Sprintf("stateless=%t,notifier=%t,%s", tc.stateless, tc.running, tc.version), func(t *testing.T) {
			g, _, url := changesGateway(t)
			g.Stateless = tc.stateless
			g.changes.running.Store(tc.running)
			l := listen(t, url, chWideToken, tc.version)
			caps := l.cs.InitializeResult().Capabilities
			if caps == nil || caps.Tools == nil {
				t.Fatal("no tools capability")
			}
			if caps.Tools.ListChanged != tc.want {
				t.Fatalf("tools.listChanged = %t, want %t", caps.Tools.ListChanged, tc.want)
			}
		})
	}
}

// A tool enabled after a session began is refused as NotInSession until
// the round offers it to the session, and then it is called.
func TestASessionIsOfferedAToolOnceTold(t *testing.T) {
	g, c, url := changesGateway(t)
	ctx := context.Background()
	tl := &mcpv1alpha1.McpTool{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: chNS, Name: vaultObject}, tl); err != nil {
		t.Fatal(err)
	}
	tl.Spec.Enabled = false
	if err := c.Update(ctx, tl); err != nil {
		t.Fatal(err)
	}
	wide := listen(t, url, chWideToken, "2025-11-25")
	poll.Until(t, 10*time.Second, "the session watched", func() error {
		if n := watching(g); n != 1 {
			return fmt.Errorf("%d watched", n)
		}
		return nil
	})
	if err := c.Get(ctx, types.NamespacedName{Namespace: chNS, Name: vaultObject}, tl); err != nil {
		t.Fatal(err)
	}
	tl.Spec.Enabled = true
	if err := c.Update(ctx, tl); err != nil {
		t.Fatal(err)
	}
	if res := callAs(t, wide.cs, vaultLocal, nil); !res.IsError || !strings.Contains(resultText(res), "not offered to this session yet") {
		t.Fatalf("before the round, a call of the tool answered %q, want the NotInSession refusal", resultText(res))
	}
	g.changes.mark(chNS)
	g.decideWatched(ctx, g.changes.take())
	wide.waitTold(t, "wide")
	if res := callAs(t, wide.cs, vaultLocal, nil); strings.Contains(resultText(res), "Refused by the MCP catalog gateway") {
		t.Fatalf("after the round, the call was refused: %q", resultText(res))
	}
}

// A listen stream keeps its caller's identity and the hash of what it may
// see, not the catalog: eight streams of one agent with about 4 MiB of
// tools hold well under a catalog between them (each held its own copy,
// 4.5 MiB for this catalog, before).
func TestAListenStreamHoldsAHashNotTheCatalog(t *testing.T) {
	up := callUpstream(t)
	tools, allow := bigCatalog(t, 60, 70<<10)
	shared := make([]*mcpv1alpha1.McpTool, 0, len(tools))
	for _, o := range tools {
		shared = append(shared, o.(*mcpv1alpha1.McpTool))
	}
	g, hs := catalogGatewayWith(t, up.URL, nil, allow, 0, func(o *Options) {
		// The tools as the informer cache hands them over: shared, not
		// copied per read (a copy per stream would be the test's, not the
		// gateway's).
		o.Reader = sharingReader{Reader: o.Reader, tools: shared}
	}, tools...)
	g.changes.running.Store(true)
	// The first list builds what every list shares (the tools' views).
	_ = postMCP(t, hs.URL, "tools/list", "", obsToken, plainListBody("1"))
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	const streams = 8
	for range streams {
		listen(t, hs.URL, obsToken, "2026-07-28")
	}
	poll.Until(t, 10*time.Second, "the listen streams watched", func() error {
		if n := watching(g); n != streams {
			return fmt.Errorf("%d watched", n)
		}
		return nil
	})
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d listen streams hold %d bytes", streams, held)
	if held > 2<<20 {
		t.Errorf("%d listen streams hold %d bytes of heap with a 4 MiB catalog, want under 2 MiB between them", streams, held)
	}
}

// One namespace's listen streams and sessions, all its ServiceAccounts
// together, are bounded: past the bound another of its ServiceAccounts is
// refused, another namespace is not.
func TestWatchersAreBoundedPerNamespace(t *testing.T) {
	g, _, _ := changesGateway(t)
	for i := range MaxListWatchersPerNamespace {
		id := authn.Identity{Username: fmt.Sprintf("system:serviceaccount:team:sa%d", i), Namespace: chNS, ServiceAccount: fmt.Sprintf("sa%d", i)}
		if _, ok := g.changes.watch(g.newOffer(g.newServer(true), logr.Discard(), nil), id, g.changes.generation(), watchListen); !ok {
			t.Fatalf("watcher %d, within the namespace's bound, was refused", i)
		}
	}
	over := authn.Identity{Username: "system:serviceaccount:team:one-more", Namespace: chNS, ServiceAccount: "one-more"}
	if _, ok := g.changes.watch(g.newOffer(g.newServer(true), logr.Discard(), nil), over, g.changes.generation(), watchListen); ok {
		t.Error("a watcher over the namespace's bound was registered")
	}
	other := authn.Identity{Username: "system:serviceaccount:other:sa", Namespace: "other", ServiceAccount: "sa"}
	if _, ok := g.changes.watch(g.newOffer(g.newServer(true), logr.Discard(), nil), other, g.changes.generation(), watchListen); !ok {
		t.Error("another namespace's watcher was refused")
	}
}
