package controller_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/apifault"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/testenv"
)

// The suite runs the operator's real manager (internal/manager) against a
// real kube-apiserver (envtest) and real MCP servers written with other
// people's libraries (test/mcpserver), in-process. Every spec works in its
// own namespace, so specs cannot see each other's objects.

var (
	cfg       *rest.Config
	k8sClient client.Client
	plane     *testenv.ControlPlane

	// requests records every request the manager sends to the API server.
	requests = &requestLog{}
	// api puts faults between the manager and the API server (the
	// API-server fault specs); it passes every request unless a spec asks.
	api = &apifault.Injector{}
	// logs holds everything the manager logged, for the leak specs.
	logs *capture.Buffer

	mgr *testenv.Manager
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers (envtest)")
}

var _ = BeforeSuite(func() {
	logs = testenv.CaptureLogs()

	// A reconcile on a busy two-core machine can take a few seconds.
	SetDefaultEventuallyTimeout(bound(10 * time.Second))
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	plane = testenv.StartControlPlane()
	cfg, k8sClient = plane.Config, plane.Client

	mgr = startManager()
})

var _ = AfterSuite(func() {
	// After every spec has run, nothing the manager logged in the whole
	// suite holds any credential a spec used.
	if logs != nil {
		expectNoTokenIn("the manager's log", logs.String())
	}
	mgr.Stop()
	plane.Stop()
})

// Test timings. probeInterval is the health interval a spec declares, the
// API's minimum; the suite's manager probes a server that declares it every
// probeEvery instead (manager.Options.HealthInterval), so that a spec sees
// probes happen, or not happen, within a few seconds.
const (
	probeInterval    = 5 * time.Second
	probeEvery       = time.Second
	credentialRetry  = time.Second
	operationTimeout = 2 * time.Second
	// settle is how long Consistently watches for something that must not
	// happen; it is longer than any reconcile of this suite takes.
	settle = 2 * time.Second
)

// startManager starts the operator's manager with the suite's options: a
// short Secret retry, few workers, and a counting transport under its API
// client; mutate changes them further.
func startManager(mutate ...func(*manager.Options)) *testenv.Manager {
	mcfg := rest.CopyConfig(cfg)
	mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, log: requests} })
	mcfg.Wrap(api.Wrap)
	opts := testenv.ManagerOptions()
	// Few workers, so a hung server would visibly starve the others if it
	// held a worker for longer than its own budget.
	opts.MaxConcurrentServers = 4
	opts.CredentialRetryInterval = credentialRetry
	opts.HealthInterval = func(srv *mcpv1alpha1.McpServer) time.Duration {
		if iv := srv.Spec.HealthCheck.Interval; iv != nil && iv.Duration == probeInterval {
			return probeEvery
		}
		return 0
	}
	// Sharing selectors may use only the reserved keys (docs/adr/046).
	opts.SharingTrust.KeyPrefix = reservedSharingPrefix
	// The restart spec runs a second manager in this process.
	opts.SkipControllerNameValidation = true
	for _, m := range mutate {
		m(&opts)
	}
	return testenv.StartManager(mcfg, opts)
}

// apiRequest is one request the manager sent to the API server.
type apiRequest struct {
	method string
	path   string
	status int
	// manager is the field manager a write names, if any.
	manager string
}

func (r apiRequest) isWrite() bool {
	switch r.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// requestLog records the manager's requests in order.
type requestLog struct {
	mu  sync.Mutex
	all []apiRequest
}

func (l *requestLog) add(r apiRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, r)
}

// mark returns a position to count from.
func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// writes returns the successful writes after mark whose path contains every
// one of parts. A refused write (a conflict, say) changed nothing.
func (l *requestLog) writes(mark int, parts ...string) []apiRequest {
	return l.match(mark, func(r apiRequest) bool { return r.isWrite() && r.status >= 200 && r.status <= 299 }, parts)
}

func (l *requestLog) match(mark int, keep func(apiRequest) bool, parts []string) []apiRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []apiRequest
	for _, r := range l.all[mark:] {
		if !keep(r) {
			continue
		}
		ok := true
		for _, p := range parts {
			if !strings.Contains(r.path, p) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// countingTransport records the manager's requests.
type countingTransport struct {
	next http.RoundTripper
	log  *requestLog
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	rec := apiRequest{method: r.Method, path: r.URL.Path, manager: r.URL.Query().Get("fieldManager")}
	if resp != nil {
		rec.status = resp.StatusCode
	}
	t.log.add(rec)
	return resp, err
}
