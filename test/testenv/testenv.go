// Package testenv is the harness the envtest suites share: a real
// kube-apiserver and etcd with the operator's CRDs, the operator's real
// manager started on them, a namespace per spec, the manager's log captured
// for leak searches, and the registry of every secret value a suite handed
// out. It is used from Ginkgo suites and reports failures through Gomega.
package testenv

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// CaptureLogs points the global logger, which the manager logs through, at
// a buffer and the spec's output. Everything down to V(2) is kept, so a leak
// search sees the debug lines too.
func CaptureLogs() *capture.Buffer {
	logs := &capture.Buffer{}
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(logs, GinkgoWriter)), zap.Level(zapcore.Level(-2))))
	return logs
}

// ControlPlane is a running envtest API server with the operator's CRDs
// installed, and a direct (uncached) client to it.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
}

// crdDir is config/crd/bases of this module, wherever the suite runs from.
func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "bases")
}

// StartControlPlane starts envtest. Call it from BeforeSuite.
func StartControlPlane() *ControlPlane {
	GinkgoHelper()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{crdDir()},
		ErrorIfCRDPathMissing: true,
		// envtest's default (20s per attempt) is too short for a
		// kube-apiserver starting on a busy two-core machine.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred(), "starting envtest (set KUBEBUILDER_ASSETS, e.g. through `make test`)")
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return &ControlPlane{Env: env, Config: cfg, Client: c}
}

// Stop stops the control plane; nil is allowed, for an AfterSuite after a
// failed BeforeSuite.
func (cp *ControlPlane) Stop() {
	GinkgoHelper()
	if cp != nil {
		Expect(cp.Env.Stop()).To(Succeed())
	}
}

// ManagerOptions are the manager's options for a suite: loopback MCP
// servers allowed, no metrics or health endpoints, a short shutdown.
func ManagerOptions() manager.Options {
	opts := manager.DefaultOptions()
	opts.MetricsAddr = "0"
	opts.SecureMetrics = false
	opts.ProbeAddr = "0"
	opts.AllowPrivateNetworks = true
	opts.GracefulShutdownTimeout = 10 * time.Second
	return opts
}

// Manager is the operator's manager running in the suite's process.
type Manager struct {
	ctrl.Manager
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// StartManager builds the manager with opts and starts it. It returns once
// the controllers are watching, so a spec's first object is seen.
func StartManager(cfg *rest.Config, opts manager.Options) *Manager {
	GinkgoHelper()
	m, err := manager.New(cfg, opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logf.Log))
	rm := &Manager{Manager: m, cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer GinkgoRecover()
		rm.done <- m.Start(ctx)
	}()
	Eventually(m.Elected(), 30*time.Second).Should(BeClosed())
	Expect(m.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	return rm
}

// Stop stops the manager and waits until it has ended without error.
// Stopping twice, or a nil manager, does nothing.
func (m *Manager) Stop() {
	GinkgoHelper()
	if m == nil || m.stopped {
		return
	}
	m.stopped = true
	m.cancel()
	Eventually(m.done, 30*time.Second).Should(Receive(Not(HaveOccurred())))
}

// Stopped reports whether Stop was called.
func (m *Manager) Stopped() bool { return m.stopped }

// Namespace creates a namespace with a random name starting with prefix for
// the current spec. cleanup, when not nil, runs on the namespace when the
// spec ends (envtest runs no namespace or garbage collector controller, so
// a suite decides what to tidy up).
func Namespace(c client.Client, prefix string, cleanup func(ctx context.Context, ns string)) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%08x", prefix, rand.Uint32())}}
	Expect(c.Create(context.Background(), ns)).To(Succeed())
	if cleanup != nil {
		DeferCleanup(func(ctx SpecContext) { cleanup(ctx, ns.Name) })
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
