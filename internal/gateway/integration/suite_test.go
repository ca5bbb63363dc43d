package integration_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/oauthserver"
	"github.com/mcp-catalog/operator/test/oidcprovider"
	"github.com/mcp-catalog/operator/test/testenv"
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
	plane     *testenv.ControlPlane

	// cached reads through the manager's cache, which is what the gateway
	// decides from: a spec waits on it, not on the API server, before it
	// relies on a change.
	cached client.Reader
	// gatewayURL is the gateway's MCP endpoint.
	gatewayURL string
	// logs holds everything the manager logged, for the leak check.
	logs *capture.Buffer
	// audit receives the gateway's audit records; a spec can make it fail.
	auditLog = &auditWriter{}

	mgr *testenv.Manager

	// spans records every span the gateway ends: tracing is on for the
	// suite, as an OTLP endpoint would turn it on.
	spans = tracetest.NewSpanRecorder()

	// clock is the gateway's clock; a spec moves it forward to expire an
	// approval without waiting.
	clock = &testClock{}
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gateway (envtest)")
}

var _ = BeforeSuite(func() {
	logs = testenv.CaptureLogs()

	// envtest's API server already signs ServiceAccount tokens (it passes
	// --service-account-issuer and the signing key files), serves the
	// TokenRequest subresource and answers TokenReview and
	// SubjectAccessReview with RBAC, which is all the gateway needs; the
	// first spec of "Authentication" checks that a TokenRequest token for
	// the gateway's audience authenticates.
	plane = testenv.StartControlPlane()
	cfg, k8sClient = plane.Config, plane.Client
	var err error
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	// The token endpoint delegated servers exchange tokens at; its
	// certificate is trusted the way --token-endpoint-ca-file trusts one.
	tokenEndpoint = oauthserver.Start(GinkgoT(), delegationClientID, delegationClientSecret)
	people = oidcprovider.Start(GinkgoT())
	// The guardrail webhook every call of the suite is checked by: it
	// allows all but what a spec asks of it for its namespace.
	guard = startGuard()
	unreachable = oidcprovider.Start(GinkgoT())
	upstreamAS = oidcprovider.Start(GinkgoT())

	// The admission policy and approver role the operator ships: the API
	// server, not the gateway, decides who may decide an approval.
	installPolicy(filepath.Join("..", "..", "..", "config", "policy", "call_approvals.yaml"))
	// The approval signing keys come from a Secret, as every replica of a
	// scaled-out gateway reads them.
	Expect(k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keyNamespace}})).To(Succeed())
	Expect(k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: keyNamespace, Name: "approval-key"},
		Data:       map[string][]byte{"current": []byte(strings.Repeat("k", 32))},
	})).To(Succeed())

	ready := make(chan string, 1)
	mgr = testenv.StartManager(managerConfig(cfg), gatewayOptions(ready))
	cached = mgr.GetClient()
	var addr string
	Eventually(ready, 30*time.Second).Should(Receive(&addr))
	gatewayURL = "http://" + addr + "/mcp"
})

var _ = AfterSuite(func() {
	mgr.Stop()
	guard.srv.Close()
	plane.Stop()
})

// gatewayOptions are the manager's options with the gateway served on a
// free loopback port over plain HTTP, auditing to audit and trusting the
// suite's token endpoint. The gateway is built only here.
func gatewayOptions(ready chan<- string) manager.Options {
	opts := testenv.ManagerOptions()
	opts.TokenEndpointRootCAs = tokenEndpoint.Roots
	opts.GatewayAddr = "127.0.0.1:0"
	opts.GatewayInsecure = true
	opts.GatewayAudit = auditLog
	opts.GatewayReady = ready
	opts.GatewayApprovalKeySecret = keyNamespace + "/approval-key"
	opts.GatewayClock = clock
	opts.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	opts.GatewayOAuth = oauthOptions()
	opts.GatewayGuardrail = guardrail.Config{URL: guard.srv.URL, Key: guardKey}
	opts.GatewayConsentSignIn = consentSignIn()
	opts.GatewayCallbackURL, opts.GatewayPersonAuthRootCAs = callbackURL, upstreamAS.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	return opts
}

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
	a.lines = append(a.lines, strings.Split(strings.TrimRight(string(p), "\n"), "\n")...)
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

// keyNamespace holds the gateway's approval key Secret.
const keyNamespace = "gateway-keys"

// testClock is time.Now moved forward by a spec's offset.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Now and Since make it a clock.PassiveClock.
func (c *testClock) Now() time.Time                  { return c.now() }
func (c *testClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }

// advance moves the clock forward until the spec ends.
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
	DeferCleanup(func() {
		c.mu.Lock()
		c.offset -= d
		c.mu.Unlock()
	})
}
