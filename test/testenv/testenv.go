// Package testenv is the harness the envtest-based tests share: a real
// kube-apiserver and etcd with the operator's CRDs (test/controlplane), the
// operator's real manager started on them with the tests' options, the
// manager's log captured for leak searches, namespaces, and the registry of
// every secret value a test handed out.
//
// Its core takes a testing.TB and reports through it, so plain Go tests,
// benchmarks and Ginkgo suites (through GinkgoTB()) start things the same
// way; ginkgo.go keeps the Ginkgo-flavoured calls the suites use, as a thin
// layer on top.
package testenv

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/controlplane"
)

// Wait bounds the harness's own waits: a manager electing itself and
// syncing its caches, or stopping.
const Wait = 2 * time.Minute

// StartLogs points the global logger, which the manager logs through, at a
// buffer and at also. Everything down to V(2) is kept, so a leak search
// sees the debug lines too. When tb fails, the log's last lines are in
// tb's output, unless also already shows them.
func StartLogs(tb testing.TB, also ...io.Writer) *capture.Buffer {
	logs := &capture.Buffer{}
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(append([]io.Writer{logs}, also...)...)), zap.Level(zapcore.Level(-2))))
	if len(also) == 0 {
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("the manager's log ends with:\n%s", controlplane.Tail(logs.String(), 60))
			}
		})
	}
	return logs
}

// ManagerOptions are the manager's options for a test: loopback MCP
// servers allowed, no metrics or health endpoints, a short shutdown, and
// several managers allowed in one process (tests stop one and start
// another).
func ManagerOptions() manager.Options {
	opts := manager.DefaultOptions()
	opts.MetricsAddr = "0"
	opts.SecureMetrics = false
	opts.ProbeAddr = "0"
	opts.AllowPrivateNetworks = true
	opts.GracefulShutdownTimeout = 10 * time.Second
	opts.SkipControllerNameValidation = true
	// Off unless a spec turns them on: the demo servers announce every
	// change of their tools, and specs about imports decide when one runs.
	opts.ToolListeners.Enabled = false
	return opts
}

// Manager is the operator's manager running in the test's process.
type Manager struct {
	ctrl.Manager
	tb      testing.TB
	cancel  context.CancelFunc
	done    chan error
	mu      sync.Mutex
	stopped bool
}

// RunManager builds the manager with opts, starts it, and stops it when tb
// ends. It returns once the manager leads and its caches are synced, so a
// test's first object is seen.
func RunManager(tb testing.TB, cfg *rest.Config, opts manager.Options) *Manager {
	tb.Helper()
	m := StartManagerFor(tb, cfg, opts)
	tb.Cleanup(m.Stop)
	return m
}

// StartManagerFor is RunManager without the cleanup, and StartManager for
// a test outside Ginkgo: the caller stops it, and once stopped and let go
// of, nothing keeps it or its cache alive (a benchmark that starts several
// managers in turn measures its own memory).
func StartManagerFor(tb testing.TB, cfg *rest.Config, opts manager.Options) *Manager {
	tb.Helper()
	m, err := manager.New(cfg, opts)
	if err != nil {
		tb.Fatalf("building the manager: %v", err)
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logf.Log))
	rm := &Manager{Manager: m, tb: tb, cancel: cancel, done: make(chan error, 1)}
	go func() { rm.done <- m.Start(ctx) }()
	select {
	case <-m.Elected():
	case err := <-rm.done:
		cancel()
		tb.Fatalf("the manager exited while starting: %v", err)
	case <-time.After(Wait):
		rm.Stop()
		tb.Fatalf("the manager did not become leader within %s", Wait)
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, Wait)
	defer cancelSync()
	if !m.GetCache().WaitForCacheSync(syncCtx) {
		rm.Stop()
		tb.Fatalf("the manager's caches did not sync within %s", Wait)
	}
	return rm
}

// Stop stops the manager and waits until it has ended; an error it ended
// with fails the test it was started for. Stopping twice, or a nil
// manager, does nothing.
func (m *Manager) Stop() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.stopped = true
	m.cancel()
	select {
	case err := <-m.done:
		if err != nil {
			m.tb.Errorf("the manager stopped with %v", err)
		}
	case <-time.After(Wait):
		m.tb.Errorf("the manager did not stop within %s", Wait)
	}
}

// Stopped reports whether Stop was called.
func (m *Manager) Stopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
}

// NewNamespace creates a namespace with a random name starting with prefix
// and returns its name. cleanup, when not nil, runs on it when tb ends
// (envtest runs no namespace or garbage collector controller, so a test
// decides what to tidy up).
func NewNamespace(tb testing.TB, c client.Client, prefix string, cleanup func(ctx context.Context, ns string)) string {
	tb.Helper()
	ns := createNamespace(tb, c, prefix)
	if cleanup != nil {
		tb.Cleanup(func() { cleanup(context.Background(), ns) })
	}
	return ns
}

func createNamespace(tb testing.TB, c client.Client, prefix string) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%08x", prefix, rand.Uint32())}}
	if err := c.Create(context.Background(), ns); err != nil {
		tb.Fatalf("creating namespace %s: %v", ns.Name, err)
	}
	return ns.Name
}

// Secrets registers every secret value a suite hands out (credentials,
// tokens), so a leak check can search logs, objects and events for all of
// them.
type Secrets struct {
	mu  sync.Mutex
	all []string
}

// New returns a fresh value framed by prefix and suffix, and registers it.
// The random middle makes it share no substring with anything the operator
// writes by itself, so finding it anywhere means it leaked.
func (s *Secrets) New(prefix, suffix string) string {
	v := fmt.Sprintf("%s%016x%s", prefix, rand.Uint64(), suffix)
	s.Add(v)
	return v
}

// Add registers values handed out elsewhere (by a token endpoint, say).
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, values...)
}

// All returns every registered value.
func (s *Secrets) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.all...)
}
