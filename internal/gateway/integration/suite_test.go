package integration_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/api/scheme"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/oauthserver"
)

// The suite runs the operator's real manager, gateway included, against a
// real kube-apiserver (envtest) and real MCP servers written with the
// official go-sdk (test/mcpserver). Agents are ServiceAccounts with tokens
// from the TokenRequest API, and talk to the gateway with the go-sdk
// client, as an agent in a cluster would. Every spec works in its own
// namespace: RBAC, ceilings and tools of one spec cannot leak into another.

var (
	tokenEndpoint *oauthserver.Server

	cfg       *rest.Config
	k8sClient client.Client
	clientset *kubernetes.Clientset
	testEnv   *envtest.Environment

	// cached reads through the manager's cache, which is what the gateway
	// decides from: a spec waits on it, not on the API server, before it
	// relies on a change.
	cached client.Reader
	// gatewayURL is the gateway's MCP endpoint.
	gatewayURL string
	// logs holds everything the manager logged, for the leak check.
	logs = &capture.Buffer{}
	// audit receives the gateway's audit records; a spec can make it fail.
	audit = &auditWriter{}

	stopManager context.CancelFunc
	managerDone = make(chan error, 1)
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gateway (envtest)")
}

var _ = BeforeSuite(func() {
	// Everything the manager logs, down to V(2), goes to the buffer the leak
	// check searches, and to the spec's output.
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(logs, GinkgoWriter)), zap.Level(zapcore.Level(-2))))

	// envtest's API server already signs ServiceAccount tokens (it passes
	// --service-account-issuer and the signing key files), serves the
	// TokenRequest subresource and answers TokenReview and
	// SubjectAccessReview with RBAC, which is all the gateway needs; the
	// first spec of "Authentication" checks that a TokenRequest token for
	// the gateway's audience authenticates.
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "starting envtest (set KUBEBUILDER_ASSETS, e.g. through `make test`)")
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	// The token endpoint delegated servers exchange tokens at; its
	// certificate is trusted the way --token-endpoint-ca-file trusts one.
	tokenEndpoint = oauthserver.Start(GinkgoT(), delegationClientID, delegationClientSecret)

	ready := make(chan string, 1)
	opts := manager.DefaultOptions()
	opts.TokenEndpointRootCAs = tokenEndpoint.Roots
	opts.MetricsAddr = "0"
	opts.SecureMetrics = false
	opts.ProbeAddr = "0"
	opts.AllowPrivateNetworks = true
	opts.GracefulShutdownTimeout = 10 * time.Second
	opts.GatewayAddr = "127.0.0.1:0"
	opts.GatewayInsecure = true
	opts.GatewayAudit = audit
	opts.GatewayReady = ready
	m, err := manager.New(cfg, opts)
	Expect(err).NotTo(HaveOccurred())
	cached = m.GetClient()
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logf.Log))
	stopManager = cancel
	go func() {
		defer GinkgoRecover()
		managerDone <- m.Start(ctx)
	}()
	var addr string
	Eventually(ready, 30*time.Second).Should(Receive(&addr))
	gatewayURL = "http://" + addr + "/mcp"
})

var _ = AfterSuite(func() {
	if stopManager != nil {
		stopManager()
		Eventually(managerDone, 30*time.Second).Should(Receive(Not(HaveOccurred())))
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// auditWriter is the gateway's audit sink: it keeps every line, and fails
// every write while failing is set, as a full disk or a closed pipe would.
type auditWriter struct {
	mu      sync.Mutex
	lines   []string
	failing bool
}

var errAuditDown = errors.New("audit sink unavailable (test)")

func (a *auditWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failing {
		return 0, errAuditDown
	}
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		a.lines = append(a.lines, l)
	}
	return len(p), nil
}

func (a *auditWriter) setFailing(f bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failing = f
}

func (a *auditWriter) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lines...)
}
