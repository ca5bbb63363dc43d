package controller_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/api/scheme"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/capture"
)

// The suite runs the operator's real manager (internal/manager) against a
// real kube-apiserver (envtest) and real MCP servers written with other
// people's libraries (test/mcpserver), in-process. Every spec works in its
// own namespace, so specs cannot see each other's objects.

var (
	cfg       *rest.Config
	k8sClient client.Client
	testEnv   *envtest.Environment

	// requests records every request the manager sends to the API server.
	requests = &requestLog{}
	// logs holds everything the manager logged, for the leak checks.
	logs = &capture.Buffer{}

	mgr *runningManager
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers (envtest)")
}

var _ = BeforeSuite(func() {
	// The manager logs through the global logger. Everything down to V(2)
	// goes to the buffer the leak specs search, and to the spec's output.
	logf.SetLogger(zap.New(
		zap.WriteTo(io.MultiWriter(logs, GinkgoWriter)),
		zap.Level(zapcore.Level(-2)),
	))

	// A reconcile on a busy two-core machine can take a few seconds.
	SetDefaultEventuallyTimeout(10 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "starting envtest (set KUBEBUILDER_ASSETS, e.g. through `make test`)")
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())

	mgr = startManager()
})

var _ = AfterSuite(func() {
	// After every spec has run, nothing the manager logged in the whole
	// suite holds any credential a spec used.
	expectNoTokenIn("the manager's log", logs.String())
	if mgr != nil {
		mgr.stop()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// Test timings. The health interval is the API's minimum.
const (
	probeInterval    = 5 * time.Second
	credentialRetry  = time.Second
	operationTimeout = 2 * time.Second
	// settle is how long Consistently watches for something that must not
	// happen; it is longer than any reconcile of this suite takes.
	settle = 2 * time.Second
)

// runningManager is one manager started by the suite.
type runningManager struct {
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startManager starts the operator's manager with test options: loopback
// servers allowed, no metrics or health endpoints, a short Secret retry,
// and a counting transport under its API client.
func startManager() *runningManager {
	mcfg := rest.CopyConfig(cfg)
	mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, log: requests} })
	opts := manager.DefaultOptions()
	opts.MetricsAddr = "0"
	opts.SecureMetrics = false
	opts.ProbeAddr = "0"
	opts.AllowPrivateNetworks = true
	opts.GracefulShutdownTimeout = 10 * time.Second
	// Few workers, so a hung server would visibly starve the others if it
	// held a worker for longer than its own budget.
	opts.MaxConcurrentServers = 4
	opts.CredentialRetryInterval = credentialRetry
	// The restart spec runs a second manager in this process.
	opts.SkipControllerNameValidation = true

	m, err := manager.New(mcfg, opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logf.Log))
	rm := &runningManager{cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer GinkgoRecover()
		rm.done <- m.Start(ctx)
	}()
	// Specs begin once the controllers are watching.
	Eventually(m.Elected(), 30*time.Second).Should(BeClosed())
	Expect(m.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	return rm
}

func (m *runningManager) stop() {
	if m.stopped {
		return
	}
	m.stopped = true
	m.cancel()
	Eventually(m.done, 30*time.Second).Should(Receive(Not(HaveOccurred())))
}

// apiRequest is one request the manager sent to the API server.
type apiRequest struct {
	method string
	path   string
	status int
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
	rec := apiRequest{method: r.Method, path: r.URL.Path}
	if resp != nil {
		rec.status = resp.StatusCode
	}
	t.log.add(rec)
	return resp, err
}
