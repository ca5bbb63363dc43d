package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testproc"
)

// The replica test's cluster: one namespace with the upstream, its two
// tools and the agents.
const (
	replicaNS = "replicas"
	// ledgerName is the McpServer (and upstream) whose tools the agents
	// call: append needs no approval, transfer needs a person's.
	ledgerName   = "ledger"
	toolAppend   = "append"
	toolTransfer = "transfer"
	// approverName is the person who decides approvals, a user the API
	// server knows through impersonation, not the agents' ServiceAccount.
	approverName = "alice@example.com"
	// holdPrefix marks the ids of calls the upstream holds until the test
	// releases them: the calls in flight when a replica is killed.
	holdPrefix = "hold-"
	// replicaCount gateway processes serve behind the proxy; one dies.
	replicaCount = 3
	// agentsPerEra go-sdk clients call concurrently in each protocol era.
	agentsPerEra = 3
	// holdCalls are sent at once and held upstream before the kill.
	holdCalls = 6
	// racers is how many concurrent retries an initialize-era agent sends
	// once its call is approved: the approval must serve one of them.
	racers = 3
)

// TestGatewayReplicas proves that any gateway replica serves any request,
// and what a replica killed in the middle of the traffic may and may not
// leave behind.
//
// Three processes of the built manager run with --components=gateway and
// --gateway-stateless, as the chart deploys them, each as the chart's
// gateway ServiceAccount, with its own informer cache, the shared approval
// key Secret and its own --gateway-audit-file. A fourth process runs the
// controllers, which import the upstream's tools. A round-robin reverse
// proxy written here stands for the Service: every HTTP request goes to the
// next replica, so one call's rounds (an approval wait and its retry, an
// initialize and the calls after it) land on different processes. Only a
// connection the kernel refused (the dead replica) is tried on the next
// one; nothing that reached a replica is sent twice.
//
// The upstream is a go-sdk server in this process that counts executions
// per call id: every call carries a unique id argument. Agents are go-sdk
// clients in both eras, calling concurrently: 2025-11-25 agents open their
// session with initialize, which a stateless replica answers without an
// Mcp-Session-Id (docs/adr/015-gateway-deployment.md; the test checks that
// no answer carries one), and 2026-07-28 agents have no session at all.
// Every third call needs approval, which the test gives as a person other
// than the agent by updating the McpCallApproval through the API. A
// 2026-07-28 agent waits in its URL elicitation handler and its SDK retries
// by itself, then replays the finished call once; an initialize-era agent
// retries until approved and then sends several retries of the same call
// at once, which round robin spreads over replicas. The person approves
// the first approval of a call and denies any later one, so a replay or a
// losing retry must not be made.
//
// In the middle, calls are held in the upstream while in flight (appends,
// and transfers whose approval was already used), and a replica serving a
// held transfer, the one serving the most held calls, is killed with
// SIGKILL. Traffic goes on over the survivors. The test then asserts, from
// the upstream's counts, the proxy's routing, every replica's audit file
// and the approvals left in the API server:
//
//   - every call id was executed upstream at most once, and an agent that
//     was answered with the tool's result was answered for that execution;
//   - every execution has exactly one audit record "before" it, across all
//     replicas, and exactly one "after" it with the same callID, except a
//     call that was in flight on the killed replica, which cannot have its
//     "after" (the held calls routed there are checked to have none);
//   - a "before" record on a surviving replica always led to an execution
//     (only the killed replica may have died between record and send);
//   - every execution of transfer used an approval decided by the person,
//     each approval was used by at most one call (no two "before" records
//     name it, and its status.callID is the call that used it), and replays
//     and losing racers were refused;
//   - a consumed approval without a "before" record exists only for a call
//     whose request was cut by the kill: the gateway marks the approval
//     used before it writes the record (using it is one of the checks the
//     record follows), so a replica dying between the two leaves an
//     approval spent on a call that was never made, and not used again.
//     A kill cannot be timed into that window from outside; when it
//     happens, the test requires the kill to explain it;
//   - an agent's call fails only when one of its requests was cut on the
//     killed replica; every other call is made once and answered with its
//     result once, approvals included.
//
// The test needs KUBEBUILDER_ASSETS and HELM; `make test` sets both.
func TestGatewayReplicas(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "$(hack/envtest.sh)")
	helm := requireEnv(t, "HELM", "$(hack/helm.sh)")
	work := t.TempDir()
	build := startBuild(t, filepath.Join(work, "bin"))
	cfg := startControlPlane(t)
	admin, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	rendered := renderChart(t, helm)
	chart := installChart(t, cfg, admin, rendered)
	// The admission policy (who may decide an approval) and the shared
	// approval key are part of what makes approvals work across replicas.
	extra := applyRendered(t, admin, rendered, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Secret")
	gatewaySA := renderedName(t, rendered, "ServiceAccount", "-gateway")
	keySecret := renderedName(t, extra, "Secret", "-approval-key")
	approverRole := renderedName(t, rendered, "ClusterRole", "-call-approver")
	createNamespace(t, admin, replicaNS)

	ledger := startLedger(t)
	bins := build()

	controllers := startProc(t, bins.manager, work, "controllers", tokenFor(t, clientset, releaseNS, chart.serviceAccount), cfg,
		"--components=controllers", "--leader-elect", "--leader-election-namespace="+releaseNS)
	mustCreate(t, admin, &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: replicaNS, Name: ledgerName}, Spec: mcpv1alpha1.McpServerSpec{
		URL: ledger.url, DataClass: mcpv1alpha1.DataClassInternal, ApprovalRequired: ptr.To(false),
	}})
	enableLedgerTools(t, admin, controllers)

	gwToken := tokenFor(t, clientset, releaseNS, gatewaySA)
	gateways := make([]*managerProc, replicaCount)
	audits := make([]string, replicaCount)
	for i := range gateways {
		audits[i] = filepath.Join(work, fmt.Sprintf("audit-%d.jsonl", i))
		addr := testproc.FreeAddr(t)
		gateways[i] = startProc(t, bins.manager, work, fmt.Sprintf("gateway-%d", i), gwToken, cfg,
			"--components=gateway", "--gateway-bind-address="+addr, "--gateway-insecure", "--gateway-stateless",
			"--gateway-approval-key-secret="+releaseNS+"/"+keySecret,
			"--gateway-audit-file="+audits[i])
		gateways[i].gateway = addr
	}
	for _, g := range gateways {
		g.waitHealthy(t)
	}
	proxy := newRoundRobin(gateways)
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	endpoint := front.URL + "/mcp"

	// Every agent client is the ServiceAccount "agent"; approvals are
	// decided by another identity, the person.
	mustCreate(t, admin, agentObjects(replicaNS)...)
	allowApprover(t, admin, approverRole)
	human := newHuman(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	humanDone := make(chan struct{})
	humanCtx, cancelHuman := context.WithCancel(ctx)
	go func() { defer close(humanDone); human.run(humanCtx) }()
	stopHuman := sync.OnceFunc(func() { cancelHuman(); <-humanDone })
	defer stopHuman()

	token := tokenFor(t, clientset, replicaNS, "agent", gatewayAudience)
	rec := &outcomes{byID: map[string][]answer{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopAgents := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopAgents()
	var agents []*agent
	for _, era := range []string{eraLegacy, eraModern} {
		for n := range agentsPerEra {
			agents = append(agents, &agent{name: fmt.Sprintf("%s%d", eraName(era), n), era: era, token: token, endpoint: endpoint, human: human, rec: rec})
		}
	}
	for _, a := range agents {
		if err := a.connect(ctx); err != nil {
			t.Fatalf("agent %s connecting through the proxy: %v", a.name, err)
		}
		wg.Go(func() { a.run(ctx, stop) })
	}

	waitAll := func(what string, cond func(a *agent) bool) {
		t.Helper()
		eventually(t, 2*time.Minute, what, anyDied(gateways, controllers), func() error {
			for _, a := range agents {
				if !cond(a) {
					return fmt.Errorf("agent %s has finished %d calls", a.name, a.finished.Load())
				}
			}
			return nil
		})
	}
	waitAll("every agent finishing 4 calls over the three replicas", func(a *agent) bool { return a.finished.Load() >= 4 })

	// Calls in flight on every replica: the upstream holds them.
	holders := map[string]*agent{}
	for _, era := range []string{eraLegacy, eraModern} {
		h := &agent{name: "holder-" + era, era: era, token: token, endpoint: endpoint, human: human, rec: rec}
		if err := h.connect(ctx); err != nil {
			t.Fatalf("holder %s connecting: %v", era, err)
		}
		holders[era] = h
	}
	// The initialize-era holder holds appends; the 2026-07-28 one holds
	// transfers, which its SDK first waits for and retries once approved,
	// so those are held with their approval already used.
	var holdWG sync.WaitGroup
	for i := range holdCalls {
		h, tool := holders[eraLegacy], toolAppend
		if i%2 == 1 {
			h, tool = holders[eraModern], toolTransfer
		}
		holdWG.Go(func() { h.callOnce(ctx, tool, fmt.Sprintf("%s%s-%s-%d", holdPrefix, eraName(h.era), tool, i)) })
	}
	eventually(t, time.Minute, "the upstream holding every held call", anyDied(gateways, controllers), func() error {
		if n := ledger.heldCount(); n < holdCalls {
			return fmt.Errorf("%d of %d held", n, holdCalls)
		}
		return nil
	})
	// The victim: of the replicas with a held transfer in flight, the one
	// with the most held calls in flight.
	flying := proxy.inFlight(holdPrefix)
	victim := -1
	for i := range replicaCount {
		if !slices.ContainsFunc(flying[i], func(id string) bool { return strings.Contains(id, toolTransfer) }) {
			continue
		}
		if victim < 0 || len(flying[i]) > len(flying[victim]) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no held transfer is in flight on any replica: %v", flying)
	}
	t.Logf("killing gateway %d with SIGKILL while it has the held calls %v in flight", victim, flying[victim])
	gateways[victim].kill()
	proxy.markKilled(victim)
	killedAt := make(map[*agent]int64, len(agents))
	for _, a := range agents {
		killedAt[a] = a.finished.Load()
	}
	ledger.releaseHeld()
	holdWG.Wait()
	for _, h := range holders {
		_ = h.cs.Close()
	}

	waitAll("every agent finishing 5 more calls over the survivors", func(a *agent) bool { return a.finished.Load() >= killedAt[a]+5 })
	stopAgents()
	stopHuman()
	for _, g := range gateways {
		if err := g.alive(); err != nil {
			t.Fatalf("a surviving replica died: %v", err)
		}
	}

	var list mcpv1alpha1.McpCallApprovalList
	if err := admin.List(context.Background(), &list, client.InNamespace(replicaNS)); err != nil {
		t.Fatal(err)
	}
	v := verdict{
		t: t, victim: victim, runs: ledger.snapshot(), answers: rec.snapshot(), routes: proxy.snapshot(),
		audit: readAudits(t, audits), approvals: list.Items, sessionIDs: proxy.sessionCount(),
	}
	v.check()
}

// Protocol eras the agents speak.
const (
	eraLegacy = "2025-11-25"
	eraModern = "2026-07-28"
)

// eraName names an era in the agents' names.
func eraName(era string) string {
	if era == eraModern {
		return "modern"
	}
	return "legacy"
}

// applyRendered creates the rendered objects of the given kinds and returns
// them.
func applyRendered(t *testing.T, admin client.Client, objs []*unstructured.Unstructured, kinds ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if !slices.Contains(kinds, o.GetKind()) {
			continue
		}
		if err := admin.Create(context.Background(), o); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		out = append(out, o)
	}
	return out
}

// renderedName returns the name of the one rendered object of kind whose
// name ends with suffix.
func renderedName(t *testing.T, objs []*unstructured.Unstructured, kind, suffix string) string {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			names = append(names, o.GetName())
		}
	}
	if len(names) != 1 {
		t.Fatalf("the chart rendered %v as %s named *%s, want exactly one", names, kind, suffix)
	}
	return names[0]
}

// startProc runs the manager binary as a separate process authenticated
// with token, with its own log file, loopback upstreams allowed and no
// metrics endpoint.
func startProc(t *testing.T, binary, dir, name, token string, cfg *rest.Config, args ...string) *managerProc {
	t.Helper()
	m := &managerProc{
		logPath: filepath.Join(dir, name+".log"),
		probe:   testproc.FreeAddr(t),
		done:    make(chan struct{}),
	}
	kubeconfig := filepath.Join(dir, name+".kubeconfig")
	testproc.WriteKubeconfig(t, kubeconfig, cfg, token)
	f, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(binary, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + m.probe,
		"--allow-private-networks",
	}, args...)...)
	m.start(t, name, f)
	return m
}

// anyDied is a check for eventually: it fails as soon as a process the
// test did not kill has exited.
func anyDied(procs []*managerProc, more ...*managerProc) func() error {
	all := append(slices.Clone(procs), more...)
	return func() error {
		for _, p := range all {
			if err := p.alive(); err != nil {
				return err
			}
		}
		return nil
	}
}

// enableLedgerTools waits for the controllers to import the ledger's two
// tools, then enables both, approves their definitions and makes transfer
// require a person's approval, as a platform engineer would, and waits
// until both are Ready.
func enableLedgerTools(t *testing.T, admin client.Client, controllers *managerProc) {
	t.Helper()
	ctx := context.Background()
	for _, remote := range []string{toolAppend, toolTransfer} {
		name := objectName(t, ledgerName, remote)
		tl := &mcpv1alpha1.McpTool{}
		eventually(t, 90*time.Second, "McpTool "+name+" imported", controllers.alive, func() error {
			if err := admin.Get(ctx, types.NamespacedName{Namespace: replicaNS, Name: name}, tl); err != nil {
				return err
			}
			if tl.Status.DefinitionHash == "" {
				return errors.New("no definition hash yet")
			}
			return nil
		})
		// The controllers may still be writing the tool's status: a
		// conflict is tried again on the object as it is now.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := admin.Get(ctx, types.NamespacedName{Namespace: replicaNS, Name: name}, tl); err != nil {
				return err
			}
			patch := client.MergeFromWithOptions(tl.DeepCopy(), client.MergeFromWithOptimisticLock{})
			tl.Spec.Enabled = true
			tl.Spec.ApprovedDefinitionHash = tl.Status.DefinitionHash
			if remote == toolTransfer {
				tl.Spec.ApprovalRequired = ptr.To(true)
			}
			return admin.Patch(ctx, tl, patch, client.FieldOwner("kubectl-patch"))
		})
		if err != nil {
			t.Fatalf("enabling %s: %v", name, err)
		}
		eventually(t, 60*time.Second, "McpTool "+name+" Ready", controllers.alive, func() error {
			if err := admin.Get(ctx, types.NamespacedName{Namespace: replicaNS, Name: name}, tl); err != nil {
				return err
			}
			c := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != tl.Generation {
				return fmt.Errorf("Ready = %+v", c)
			}
			if got := ptr.Deref(tl.Status.EffectiveApprovalRequired, true); got != (remote == toolTransfer) {
				return fmt.Errorf("effectiveApprovalRequired = %t", got)
			}
			return nil
		})
	}
}

// allowApprover binds the chart's call-approver role to the person in
// the agents' namespace.
func allowApprover(t *testing.T, admin client.Client, approverRole string) {
	t.Helper()
	mustCreate(t, admin, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: replicaNS, Name: "call-approvers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: approverRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: approverName}}})
}

// ledger is the upstream MCP server: two tools that count their executions
// per call id and answer "done <id>". A call whose id starts with
// holdPrefix is held, counted, until releaseHeld.
type ledger struct {
	url     string
	mu      sync.Mutex
	runs    map[string]int
	held    int
	release chan struct{}
	once    sync.Once
}

func startLedger(t *testing.T) *ledger {
	t.Helper()
	l := &ledger{runs: map[string]int{}, release: make(chan struct{})}
	srv := sdk.NewServer(&sdk.Implementation{Name: ledgerName, Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	srv.AddTool(&sdk.Tool{Name: toolAppend, Description: "Appends an entry to the ledger.", InputSchema: schema}, l.run)
	srv.AddTool(&sdk.Tool{Name: toolTransfer, Description: "Moves money; needs a person's approval.", InputSchema: schema}, l.run)
	// Stateless serves both eras, whichever the gateway's client picks.
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	t.Cleanup(ts.Close)
	// Runs before Close, which waits for held handlers.
	t.Cleanup(l.releaseHeld)
	l.url = ts.URL + "/mcp"
	return l
}

func (l *ledger) run(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.ID == "" {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no id"}}}, nil
	}
	hold := strings.HasPrefix(args.ID, holdPrefix)
	l.mu.Lock()
	l.runs[args.ID]++
	if hold {
		l.held++
	}
	l.mu.Unlock()
	if hold {
		// A cancelled request (its gateway died) still counts: the
		// execution began.
		select {
		case <-l.release:
		case <-ctx.Done():
		}
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done " + args.ID}}}, nil
}

func (l *ledger) heldCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

func (l *ledger) releaseHeld() { l.once.Do(func() { close(l.release) }) }

func (l *ledger) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.runs))
	for k, v := range l.runs {
		out[k] = v
	}
	return out
}

// route is one HTTP request the proxy handed to a replica.
type route struct {
	replica int
	// callID is the id argument of a tools/call; empty for other requests.
	callID string
	// cut is set when the exchange broke: no complete answer reached the
	// agent from this replica.
	cut       bool
	afterKill bool
	// refused is set when the replica's port refused the connection: the
	// request never reached it and went to the next replica.
	refused bool
	// open is set while the replica is serving the request.
	open bool
}

// roundRobin is the stand-in for a Service without session affinity: each
// request goes to the next replica. A connection refused (a dead replica)
// is tried on each other replica in turn, as nothing was sent; any other
// failure is the agent's, as a load balancer cannot know whether the
// replica acted.
type roundRobin struct {
	addrs     []string
	transport *http.Transport
	mu        sync.Mutex
	next      int
	routes    []route
	killed    int
	// sessionIDs counts answers that carried an Mcp-Session-Id: a
	// stateless replica issues none.
	sessionIDs int
}

func newRoundRobin(gws []*managerProc) *roundRobin {
	addrs := make([]string, 0, len(gws))
	for _, g := range gws {
		addrs = append(addrs, g.gateway)
	}
	return roundRobinTo(addrs)
}

// roundRobinTo is a roundRobin over the replicas at addrs, none killed.
func roundRobinTo(addrs []string) *roundRobin {
	return &roundRobin{addrs: addrs, killed: -1, transport: &http.Transport{DisableKeepAlives: true}}
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := toolCallID(body)
	// The request takes one turn and, when a replica refuses, tries the
	// others in order from it: every replica once. Taking a new turn per
	// try would let concurrent requests move the cursor between tries and
	// send all of one request's tries to the same dead replica.
	rr.mu.Lock()
	first := rr.next
	rr.next = (rr.next + 1) % len(rr.addrs)
	rr.mu.Unlock()
	for k := range rr.addrs {
		i := (first + k) % len(rr.addrs)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+rr.addrs[i]+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out.Header = r.Header.Clone()
		// Recorded before it is sent: a call the upstream holds has not
		// been answered, and the test picks the replica to kill by it.
		n := rr.record(i, id)
		defer rr.finish(n)
		resp, err := rr.transport.RoundTrip(out)
		if errors.Is(err, syscall.ECONNREFUSED) {
			rr.refused(n)
			continue
		}
		if err != nil {
			rr.cut(n)
			http.Error(w, "the replica did not answer", http.StatusBadGateway)
			return
		}
		if resp.Header.Get("Mcp-Session-Id") != "" {
			rr.mu.Lock()
			rr.sessionIDs++
			rr.mu.Unlock()
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		err = stream(w, resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			rr.cut(n)
			// The agent sees the connection break, as it would from a
			// load balancer whose backend died mid-answer.
			panic(http.ErrAbortHandler)
		}
		return
	}
	http.Error(w, "no replica accepted the connection", http.StatusServiceUnavailable)
}

// stream copies an answer as it comes: an event stream is flushed event by
// event.
func stream(w http.ResponseWriter, body io.Reader) error {
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// toolCallID returns the id argument of a tools/call request body.
func toolCallID(body []byte) string {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Arguments struct {
				ID string `json:"id"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return ""
	}
	return msg.Params.Arguments.ID
}

func (rr *roundRobin) record(replica int, id string) int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.routes = append(rr.routes, route{replica: replica, callID: id, afterKill: rr.killed >= 0, open: true})
	return len(rr.routes) - 1
}

func (rr *roundRobin) cut(n int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.routes[n].cut = true
}

func (rr *roundRobin) refused(n int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.routes[n].refused = true
}

func (rr *roundRobin) markKilled(replica int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.killed = replica
}

// inFlight returns, per replica, the calls whose id starts with prefix
// and whose request it is serving now.
func (rr *roundRobin) inFlight(prefix string) map[int][]string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := map[int][]string{}
	for _, r := range rr.routes {
		if r.open && !r.refused && strings.HasPrefix(r.callID, prefix) {
			out[r.replica] = append(out[r.replica], r.callID)
		}
	}
	return out
}

func (rr *roundRobin) finish(n int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.routes[n].open = false
}

func (rr *roundRobin) sessionCount() int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.sessionIDs
}

func (rr *roundRobin) snapshot() []route {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(rr.routes), func(r route) bool { return r.refused })
}

// human decides approvals as approverName: the first approval of a call
// (by its arguments hash) is approved, every later one denied, since each
// call is to be made once.
type human struct {
	c       client.Client
	mu      sync.Mutex
	first   map[string]string // arguments hash -> the approval approved
	decided map[string]chan struct{}
	byHash  map[string]chan struct{}
}

func newHuman(t *testing.T, cfg *rest.Config) *human {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: approverName, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &human{c: cl, first: map[string]string{}, decided: map[string]chan struct{}{}, byHash: map[string]chan struct{}{}}
}

func (h *human) run(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var list mcpv1alpha1.McpCallApprovalList
		if err := h.c.List(ctx, &list, client.InNamespace(replicaNS)); err != nil {
			continue
		}
		for i := range list.Items {
			a := &list.Items[i]
			if a.Spec.Decision != mcpv1alpha1.CallPending {
				continue
			}
			h.mu.Lock()
			_, seen := h.first[a.Spec.ArgumentsHash]
			h.mu.Unlock()
			a.Spec.Decision, a.Spec.DecidedBy = mcpv1alpha1.CallApproved, approverName
			if seen {
				a.Spec.Decision, a.Spec.Reason = mcpv1alpha1.CallDenied, "this call was approved once already"
			}
			// The update carries the listed resourceVersion; a conflict is
			// decided on the next round.
			if err := h.c.Update(ctx, a); err != nil {
				continue
			}
			h.mu.Lock()
			if !seen {
				h.first[a.Spec.ArgumentsHash] = a.Name
				closeOnce(h.chanFor(h.byHash, a.Spec.ArgumentsHash))
			}
			closeOnce(h.chanFor(h.decided, a.Name))
			h.mu.Unlock()
		}
	}
}

// chanFor returns the channel of key, made on first use; h.mu is held.
func (h *human) chanFor(m map[string]chan struct{}, key string) chan struct{} {
	ch, ok := m[key]
	if !ok {
		ch = make(chan struct{})
		m[key] = ch
	}
	return ch
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// await returns once the approval name is decided.
func (h *human) await(ctx context.Context, name string) error {
	return h.wait(ctx, h.decided, name)
}

// awaitApproved returns once the first approval of a call is approved.
func (h *human) awaitApproved(ctx context.Context, hash string) error {
	return h.wait(ctx, h.byHash, hash)
}

// wait returns once the channel of key in m is closed, or ctx ends.
func (h *human) wait(ctx context.Context, m map[string]chan struct{}, key string) error {
	h.mu.Lock()
	ch := h.chanFor(m, key)
	h.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answer is what an agent got for one request of a call (a retry that
// waited for approval counts once, with its final answer).
type answer struct {
	agent, era, tool string
	// kind: "ok" (the tool's result), "refused" (an isError result),
	// "failed" (no answer: the request broke).
	kind string
	text string
	err  error
	// replay marks a 2026-07-28 agent's second call of a finished call;
	// racer one of an initialize-era agent's concurrent retries.
	replay, racer bool
	// waitedBy says how an initialize-era agent was told to wait:
	// "error" (-32042) or "result" (an isError result in words).
	waitedBy string
}

type outcomes struct {
	mu   sync.Mutex
	byID map[string][]answer
}

func (o *outcomes) add(id string, a answer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byID[id] = append(o.byID[id], a)
}

func (o *outcomes) snapshot() map[string][]answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]answer, len(o.byID))
	for k, v := range o.byID {
		out[k] = slices.Clone(v)
	}
	return out
}

// agent is one go-sdk client calling the ledger's tools through the proxy.
type agent struct {
	name, era, token, endpoint string
	human                      *human
	rec                        *outcomes
	cs                         *sdk.ClientSession
	finished                   atomic.Int64
}

func (a *agent) connect(ctx context.Context) error {
	opts := &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
	}
	if a.era == eraModern {
		// The agent's user is shown the approval and comes back once a
		// person decided it; the SDK then retries the call by itself.
		opts.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			_, name, _ := strings.Cut(req.Params.ElicitationID, "/")
			if err := a.human.await(ctx, name); err != nil {
				return &sdk.ElicitResult{Action: "cancel"}, nil
			}
			return &sdk.ElicitResult{Action: "accept"}, nil
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: a.name, Version: "1"}, opts)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := c.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: a.endpoint, HTTPClient: &http.Client{Transport: bearer{a.token}}},
		&sdk.ClientSessionOptions{ProtocolVersion: a.era})
	if err != nil {
		return err
	}
	if got := cs.InitializeResult().ProtocolVersion; got != a.era {
		_ = cs.Close()
		return fmt.Errorf("negotiated %s, want %s", got, a.era)
	}
	a.cs = cs
	return nil
}

// run calls until stop: two appends, then a transfer, and so on, each with
// a new id. A call whose request broke is not retried (the agent cannot
// know whether it was made); the agent connects again and goes on.
func (a *agent) run(ctx context.Context, stop <-chan struct{}) {
	defer func() {
		if a.cs != nil {
			_ = a.cs.Close()
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		tool := toolAppend
		if i%3 == 2 {
			tool = toolTransfer
		}
		id := fmt.Sprintf("%s-%s-%03d", a.name, tool, i)
		var broke bool
		switch {
		case tool == toolAppend:
			broke = a.callOnce(ctx, tool, id).kind == "failed"
		case a.era == eraModern:
			broke = a.callOnce(ctx, tool, id).kind == "failed"
			if !broke {
				// The same call again: its approval is used, so it waits
				// for a new one, which the person denies.
				ans := a.request(ctx, tool, id)
				ans.replay = true
				a.rec.add(id, ans)
				broke = ans.kind == "failed"
			}
		default:
			broke = a.legacyApproved(ctx, tool, id)
		}
		a.finished.Add(1)
		if broke {
			_ = a.cs.Close()
			// Until connected, or the run ends.
			_ = poll.Wait(ctx, poll.Interval, func() error { return a.connect(ctx) })
		}
	}
}

// callOnce makes one call and records its answer.
func (a *agent) callOnce(ctx context.Context, tool, id string) answer {
	ans := a.request(ctx, tool, id)
	a.rec.add(id, ans)
	return ans
}

// request sends one tools/call (with the SDK's own rounds in 2026-07-28)
// and classifies the answer.
func (a *agent) request(ctx context.Context, tool, id string) answer {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ans := answer{agent: a.name, era: a.era, tool: tool}
	res, err := a.cs.CallTool(cctx, &sdk.CallToolParams{Name: toolname.LocalName(ledgerName, tool), Arguments: map[string]any{"id": id}})
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc) && rpc.Code == sdk.CodeURLElicitationRequired:
		ans.kind, ans.waitedBy, ans.err = "refused", "error", err
	case err != nil:
		ans.kind, ans.err = "failed", err
	case res.NeedsInput():
		ans.kind, ans.text = "refused", "still asked for input after the SDK's retries"
	case res.IsError:
		ans.kind, ans.text = "refused", text(res)
		if strings.Contains(ans.text, "waits for a person's approval") {
			ans.waitedBy = "result"
		}
	default:
		ans.kind, ans.text = "ok", text(res)
	}
	return ans
}

// legacyApproved makes a call that needs approval in the initialize era:
// it asks until told to wait, waits for the person, then sends racers
// retries of the same call at once. It reports whether a request broke.
func (a *agent) legacyApproved(ctx context.Context, tool, id string) bool {
	first := a.request(ctx, tool, id)
	if first.waitedBy == "" {
		// Not told to wait: an answer of its own (the check fails it).
		a.rec.add(id, first)
		return first.kind == "failed"
	}
	a.rec.add(id, answer{agent: a.name, era: a.era, tool: tool, kind: "waited", waitedBy: first.waitedBy})
	if err := a.human.awaitApproved(ctx, argumentsHash(id)); err != nil {
		return false
	}
	var wg sync.WaitGroup
	var broke atomic.Bool
	for range racers {
		wg.Go(func() {
			var ans answer
			// A retry that finds the approval used by another waits for a
			// new one, which the person denies: asked again until it has
			// an answer of its own, or the run ends.
			_ = poll.Wait(ctx, poll.Interval, func() error {
				ans = a.request(ctx, tool, id)
				ans.racer = true
				if ans.waitedBy != "" {
					return errors.New("waiting for a decision")
				}
				return nil
			})
			a.rec.add(id, ans)
			if ans.kind == "failed" {
				broke.Store(true)
			}
		})
	}
	wg.Wait()
	return broke.Load()
}

// argumentsHash is the audit trail's hash of a call's arguments: sha256 of
// their canonical JSON (docs/gateway.md, section 7).
func argumentsHash(id string) string {
	b, _ := json.Marshal(map[string]any{"id": id})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// auditRecord is the part of a gateway audit record the test reads, by the
// documented field names.
type auditRecord struct {
	CallID        string `json:"callID"`
	Phase         string `json:"phase"`
	Caller        string `json:"caller"`
	Tool          string `json:"tool"`
	Approval      string `json:"approval"`
	ApprovalName  string `json:"approvalName"`
	ApprovedBy    string `json:"approvedBy"`
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	Outcome       string `json:"outcome"`
	ArgumentsHash string `json:"argumentsHash"`
	// replica is the file the record was read from.
	replica int
}

// readAudits parses every replica's audit file. Each record is one write
// of one line, so even the killed replica's file ends with a whole line.
func readAudits(t *testing.T, paths []string) []auditRecord {
	t.Helper()
	var out []auditRecord
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reading replica %d's audit file: %v", i, err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("replica %d's audit file ends in the middle of a record", i)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var r auditRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("replica %d's audit line is not one JSON object: %v: %s", i, err, line)
			}
			r.replica = i
			out = append(out, r)
		}
	}
	return out
}

// verdict holds what the run left and checks the promises on it.
type verdict struct {
	t          *testing.T
	victim     int
	runs       map[string]int
	answers    map[string][]answer
	routes     []route
	audit      []auditRecord
	approvals  []mcpv1alpha1.McpCallApproval
	sessionIDs int
}

// cutOnVictim reports whether a request of call id was cut on the killed
// replica.
func (v *verdict) cutOnVictim(id string) bool {
	return slices.ContainsFunc(v.routes, func(r route) bool { return r.callID == id && r.cut && r.replica == v.victim })
}

func (v *verdict) check() {
	t := v.t
	t.Helper()
	idOf := map[string]string{}
	for id := range v.answers {
		idOf[argumentsHash(id)] = id
	}
	befores := map[string][]auditRecord{} // by call id
	afters := map[string][]auditRecord{}  // by callID
	beforeByCallID := map[string][]auditRecord{}
	for _, r := range v.audit {
		id, ok := idOf[r.ArgumentsHash]
		if !ok {
			t.Errorf("an audit record of replica %d is about no call the agents made: %+v", r.replica, r)
			continue
		}
		switch r.Phase {
		case "before":
			befores[id] = append(befores[id], r)
			beforeByCallID[r.CallID] = append(beforeByCallID[r.CallID], r)
		case "after":
			afters[r.CallID] = append(afters[r.CallID], r)
		}
	}

	// At most once, and an agent's result is the execution's.
	executed, failed, onVictim := 0, 0, 0
	for id, answers := range v.answers {
		n := v.runs[id]
		if n > 1 {
			t.Errorf("call %s was executed %d times upstream", id, n)
		}
		executed += n
		ok := 0
		for _, a := range answers {
			switch a.kind {
			case "ok":
				ok++
				if a.text != "done "+id {
					t.Errorf("call %s was answered %q, not by its own execution", id, a.text)
				}
				if a.replay {
					t.Errorf("the replay of call %s by %s was made again", id, a.agent)
				}
			case "failed":
				failed++
				t.Logf("call %s by %s got no answer: %v", id, a.agent, a.err)
				if !v.cutOnVictim(id) {
					t.Errorf("call %s by %s failed without a request cut by the kill: %v", id, a.agent, a.err)
				}
			case "refused":
				// Only a second attempt at a call already approved once
				// may be refused: the approval serves one call.
				if !a.replay && !a.racer {
					t.Errorf("call %s (%s, %s) was refused: %s %v", id, a.tool, a.era, a.text, a.err)
				}
			}
		}
		switch {
		case ok > n:
			t.Errorf("call %s got the tool's result %d times for %d executions", id, ok, n)
		case (ok != 1 || n != 1) && !v.cutOnVictim(id):
			// A call the kill did not touch is made, and answered, once.
			t.Errorf("call %s was executed %d times and answered with its result %d times, and no request of it was cut", id, n, ok)
		}
	}
	for id := range v.runs {
		if _, ok := v.answers[id]; !ok {
			t.Errorf("the upstream executed %s, which no agent called", id)
		}
	}

	// One "before" and one "after" per execution, across replicas.
	heldOnVictim, heldTransfersOnVictim := 0, 0
	for id, n := range v.runs {
		bs := befores[id]
		if n == 0 {
			continue
		}
		if len(bs) != 1 {
			t.Errorf("call %s was executed with %d audit records before it, want exactly 1: %+v", id, len(bs), bs)
			continue
		}
		b := bs[0]
		as := afters[b.CallID]
		switch {
		case b.replica == v.victim && strings.HasPrefix(id, holdPrefix):
			heldOnVictim++
			if strings.Contains(id, toolTransfer) {
				// Its approval stays used by this call (checked below
				// with every other use), and is never used again.
				heldTransfersOnVictim++
			}
			if len(as) != 0 {
				t.Errorf("held call %s has an after record although its replica was killed while the upstream held it", id)
			}
		case b.replica == v.victim:
			if len(as) > 1 {
				t.Errorf("call %s has %d after records", id, len(as))
			}
			if len(as) == 0 {
				onVictim++
			}
		default:
			if len(as) != 1 || as[0].replica != b.replica || as[0].Outcome != "Succeeded" {
				t.Errorf("call %s (before on replica %d) has after records %+v, want one Succeeded on the same replica", id, b.replica, as)
			}
		}
		wantApproval := "NotRequired"
		if b.Tool == objectName(t, ledgerName, toolTransfer) {
			wantApproval = "Approved"
		}
		if b.Approval != wantApproval || b.Decision != "Allowed" {
			t.Errorf("call %s was made with approval %q, decision %q; want %q, Allowed", id, b.Approval, b.Decision, wantApproval)
		}
	}
	for id, bs := range befores {
		for _, b := range bs {
			if v.runs[id] == 0 && b.replica != v.victim {
				t.Errorf("replica %d wrote a before record for %s, which never reached the upstream", b.replica, id)
			}
		}
	}

	// Approvals: each used by at most one call, and the call is the one
	// its status names.
	byName := map[string]*mcpv1alpha1.McpCallApproval{}
	spentByKill, used := 0, 0
	for i := range v.approvals {
		a := &v.approvals[i]
		byName[a.Name] = a
		if a.Status.ConsumedAt == nil {
			continue
		}
		used++
		if a.Spec.Decision != mcpv1alpha1.CallApproved || a.Spec.DecidedBy != approverName {
			t.Errorf("approval %s was used with decision %s by %q", a.Name, a.Spec.Decision, a.Spec.DecidedBy)
		}
		recs := beforeByCallID[a.Status.CallID]
		switch {
		case len(recs) == 1:
			if r := recs[0]; r.ApprovalName != a.Name || r.ApprovedBy != approverName || r.ArgumentsHash != a.Spec.ArgumentsHash {
				t.Errorf("approval %s was used by call %s, whose before record is %+v", a.Name, a.Status.CallID, r)
			}
		case len(recs) == 0 && v.cutOnVictim(idOf[a.Spec.ArgumentsHash]):
			spentByKill++
		default:
			t.Errorf("approval %s names call %s, which has %d before records and was not cut by the kill", a.Name, a.Status.CallID, len(recs))
		}
	}
	// A retry that read an approval as approved but lost the race to use
	// it is refused, with the approval named: it must be one another call
	// used.
	conflicts := 0
	for _, r := range v.audit {
		if r.Phase != "denied" || r.Reason != "ApprovalDeclined" {
			continue
		}
		a, ok := byName[r.ApprovalName]
		if !ok || a.Spec.Decision != mcpv1alpha1.CallApproved {
			continue // denied by the person
		}
		conflicts++
		if a.Status.ConsumedAt == nil || a.Status.CallID == r.CallID {
			t.Errorf("call %s was refused approval %s as already used, but its status is %+v", r.CallID, a.Name, a.Status)
		}
	}
	usedBy := map[string]string{}
	for _, bs := range befores {
		for _, b := range bs {
			if b.Approval != "Approved" {
				continue
			}
			if prev, ok := usedBy[b.ApprovalName]; ok {
				t.Errorf("approval %s was used by two calls, %s and %s", b.ApprovalName, prev, b.CallID)
			}
			usedBy[b.ApprovalName] = b.CallID
			a, ok := byName[b.ApprovalName]
			if !ok || a.Status.CallID != b.CallID {
				t.Errorf("call %s used approval %q, whose status does not name it", b.CallID, b.ApprovalName)
			}
		}
	}

	// An initialize-era agent's requests can land on any replica only
	// because no replica keeps its session.
	if v.sessionIDs != 0 {
		t.Errorf("%d answers carried an Mcp-Session-Id: a replica kept a session", v.sessionIDs)
	}

	// The run was what it claims to be.
	perReplica := make([]int, replicaCount)
	afterKill := make([]int, replicaCount)
	for _, r := range v.routes {
		if r.callID == "" {
			continue
		}
		perReplica[r.replica]++
		if r.afterKill {
			afterKill[r.replica]++
		}
	}
	beforePerReplica := make([]int, replicaCount)
	for _, bs := range befores {
		for _, b := range bs {
			beforePerReplica[b.replica]++
		}
	}
	eras := map[string]int{}
	racersRefused, replaysRefused, legacyWaits := 0, 0, map[string]int{}
	for _, answers := range v.answers {
		for _, a := range answers {
			if a.kind == "ok" && a.tool == toolTransfer {
				eras[a.era]++
			}
			if a.kind == "refused" && a.tool == toolTransfer {
				if a.replay {
					replaysRefused++
				} else {
					racersRefused++
				}
			}
			if a.era == eraLegacy && a.waitedBy != "" {
				legacyWaits[a.waitedBy]++
			}
		}
	}
	t.Logf("tools/call requests per replica %v (after the kill %v); executed %d calls; before records per replica %v; "+
		"%d calls failed for the agent; %d held calls (%d approved transfers) and %d other calls were in flight on the killed replica; "+
		"%d approvals used, %d spent by the kill; refused: %d racing retries (%d of them on an approval another replica had just used), %d replays; "+
		"initialize-era agents told to wait by %v",
		perReplica, afterKill, executed, beforePerReplica, failed, heldOnVictim, heldTransfersOnVictim, onVictim, used, spentByKill,
		racersRefused, conflicts, replaysRefused, legacyWaits)
	for i, n := range beforePerReplica {
		if n == 0 {
			t.Errorf("replica %d made no call: the proxy did not spread the traffic", i)
		}
	}
	for i, n := range afterKill {
		if i != v.victim && n == 0 {
			t.Errorf("survivor %d was handed no call after the kill", i)
		}
	}
	if heldTransfersOnVictim == 0 {
		t.Errorf("no approved call was in flight on the killed replica")
	}
	if heldOnVictim == 0 {
		t.Errorf("no held call was in flight on the killed replica: the kill was not in the middle")
	}
	if eras[eraLegacy] == 0 || eras[eraModern] == 0 {
		t.Errorf("approved transfers made per era %v; want some in both", eras)
	}
	// A stateless replica does not keep what an initialize-era client
	// declared at initialize, so it tells it to wait in a tool result,
	// never with -32042 (docs/gateway.md, section 6).
	if legacyWaits["error"] != 0 || legacyWaits["result"] == 0 {
		t.Errorf("initialize-era agents were told to wait by %v; want by a tool result only", legacyWaits)
	}
	if replaysRefused == 0 {
		t.Errorf("no replay of a finished call was refused")
	}
}

// TestRoundRobinTriesEachReplica checks the test's load balancer: with one
// replica dead, every request reaches a live one, however many requests
// move the cursor at once. A request that tried the dead replica again
// would be answered 503, and the kill test would blame the gateway.
func TestRoundRobinTriesEachReplica(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := dead.Listener.Addr().String()
	dead.Close()
	const requests = 300
	// A live replica holds every request until all of them have reached
	// one or been answered without: all are in flight at once, so every
	// turn is taken while the others move the cursor. A request that never
	// gets there fails the test after 10s instead of holding the others
	// for ever.
	var served, settled atomic.Int64
	all := make(chan struct{})
	var allOnce sync.Once
	settle := func() {
		if settled.Add(1) >= requests {
			allOnce.Do(func() { close(all) })
		}
	}
	live := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		settle()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
	})
	a, b := httptest.NewServer(live), httptest.NewServer(live)
	defer a.Close()
	defer b.Close()
	rr := roundRobinTo([]string{deadAddr, a.Listener.Addr().String(), b.Listener.Addr().String()})
	front := httptest.NewServer(rr)
	defer front.Close()

	var wg sync.WaitGroup
	codes := make([]int, requests)
	for i := range requests {
		wg.Go(func() {
			resp, err := http.Post(front.URL, "application/json", strings.NewReader(`{}`))
			if err != nil {
				settle()
				t.Errorf("request %d: %v", i, err)
				return
			}
			_ = resp.Body.Close()
			codes[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				settle() // answered without a live replica
			}
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("request %d was answered %d with a live replica to take it", i, c)
		}
	}
	if served.Load() != requests {
		t.Errorf("the live replicas served %d of %d requests", served.Load(), requests)
	}
	// Every third request starts at the dead replica and is refused there
	// once; none is refused twice. A port taken again by another listener
	// would refuse nothing, and the test would prove nothing.
	refused := 0
	for _, r := range rr.routes {
		if r.refused {
			refused++
		}
	}
	if want := requests / len(rr.addrs); refused != want {
		t.Errorf("the dead replica refused %d connections, want %d (one per request whose turn it was)", refused, want)
	}
}
