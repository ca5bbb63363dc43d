package controller_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testenv"
)

// newNamespace creates a namespace for the current spec. When the spec
// ends, its McpServers are suspended rather than deleted: envtest runs no
// garbage collector, and deleting thousands of McpTools (or letting the tool
// controller rewrite them all for a vanished server) would cost the suite
// more than the spec itself. Suspended, they make no requests and no writes.
func newNamespace() string {
	return testenv.Namespace(k8sClient, "t", func(ctx context.Context, ns string) {
		var servers mcpv1alpha1.McpServerList
		Expect(k8sClient.List(ctx, &servers, client.InNamespace(ns))).To(Succeed())
		for i := range servers.Items {
			srv := &servers.Items[i]
			patch := client.MergeFrom(srv.DeepCopy())
			srv.Spec.Suspend = true
			Expect(client.IgnoreNotFound(k8sClient.Patch(ctx, srv, patch))).To(Succeed())
		}
	})
}

// startMCP serves a real MCP server for the current spec.
func startMCP(opts mcpserver.Options) *mcpserver.Server {
	return mcpserver.Start(GinkgoT(), opts)
}

// serverSpec is the McpServer spec the suite starts from: an Internal
// server with short timings.
func serverSpec(url string) mcpv1alpha1.McpServerSpec {
	return mcpv1alpha1.McpServerSpec{
		URL:              url,
		DataClass:        mcpv1alpha1.DataClassInternal,
		OperationTimeout: &metav1.Duration{Duration: operationTimeout},
		HealthCheck:      mcpv1alpha1.HealthCheckSettings{Interval: &metav1.Duration{Duration: time.Hour}},
	}
}

// createServer creates an McpServer; mutate adjusts the spec first.
func createServer(ns, name, url string, mutate ...func(*mcpv1alpha1.McpServerSpec)) *mcpv1alpha1.McpServer {
	srv := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       serverSpec(url),
	}
	for _, m := range mutate {
		m(&srv.Spec)
	}
	Expect(k8sClient.Create(context.Background(), srv)).To(Succeed())
	return srv
}

func withBearer(secret string) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) {
		s.AllowCredentialOverHTTP = true
		s.Auth = &mcpv1alpha1.McpServerAuth{Bearer: &mcpv1alpha1.BearerAuth{
			SecretRef: mcpv1alpha1.SecretKeySelector{Name: secret, Key: "token"},
		}}
	}
}

func withProbeInterval(d time.Duration) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) { s.HealthCheck.Interval = &metav1.Duration{Duration: d} }
}

func withMaxTools(n int32) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) { s.Import.MaxTools = n }
}

func withTimeout(d time.Duration) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) { s.OperationTimeout = &metav1.Duration{Duration: d} }
}

// putSecret creates or updates a Secret with one key, "token".
func putSecret(ns, name, value string) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ctx := context.Background()
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(s), s)
	s.Data = map[string][]byte{"token": []byte(value)}
	s.Labels = map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}
	if err == nil {
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		return
	}
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	Expect(k8sClient.Create(ctx, s)).To(Succeed())
}

func getServer(ns, name string) *mcpv1alpha1.McpServer {
	srv := &mcpv1alpha1.McpServer{}
	ExpectWithOffset(1, k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, srv)).To(Succeed())
	return srv
}

func getTool(ns, name string) *mcpv1alpha1.McpTool {
	t := &mcpv1alpha1.McpTool{}
	ExpectWithOffset(1, k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
	return t
}

// toolObjectName is the McpTool name of a remote tool.
func toolObjectName(server, remote string) string {
	n, err := toolname.ObjectName(server, remote)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return n
}

// listTools returns the McpTools of a namespace by name.
func listTools(ns string) map[string]mcpv1alpha1.McpTool {
	var l mcpv1alpha1.McpToolList
	ExpectWithOffset(1, k8sClient.List(context.Background(), &l, client.InNamespace(ns))).To(Succeed())
	out := make(map[string]mcpv1alpha1.McpTool, len(l.Items))
	for _, t := range l.Items {
		out[t.Name] = t
	}
	return out
}

// resourceVersions maps each McpTool of a namespace to its resourceVersion:
// any write to a tool changes it.
func resourceVersions(ns string) map[string]string {
	out := map[string]string{}
	for n, t := range listTools(ns) {
		out[n] = t.ResourceVersion
	}
	return out
}

// cond is the part of a condition a spec asserts on.
type cond struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
}

func haveCondition(typ string, status metav1.ConditionStatus, reason string) OmegaMatcher {
	return WithTransform(func(cs []metav1.Condition) *cond {
		c := meta.FindStatusCondition(cs, typ)
		if c == nil {
			return nil
		}
		return &cond{c.Type, c.Status, c.Reason}
	}, Equal(&cond{typ, status, reason}))
}

// serverConditions polls an McpServer's conditions.
func serverConditions(ns, name string) func(g Gomega) []metav1.Condition {
	return func(g Gomega) []metav1.Condition {
		srv := &mcpv1alpha1.McpServer{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, srv)).To(Succeed())
		return srv.Status.Conditions
	}
}

// toolConditions polls an McpTool's conditions.
func toolConditions(ns, name string) func(g Gomega) []metav1.Condition {
	return func(g Gomega) []metav1.Condition {
		t := &mcpv1alpha1.McpTool{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
		return t.Status.Conditions
	}
}

// waitReady waits for a server's first import and probe to succeed.
func waitReady(ns, name string, timeout time.Duration) *mcpv1alpha1.McpServer {
	EventuallyWithOffset(1, serverConditions(ns, name), bound(timeout), 100*time.Millisecond).
		Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	return getServer(ns, name)
}

// annotate sets annotations on an McpServer with a merge patch, as kubectl
// annotate does.
func annotate(ns, name string, kv map[string]string) {
	srv := getServer(ns, name)
	patch := client.MergeFrom(srv.DeepCopy())
	if srv.Annotations == nil {
		srv.Annotations = map[string]string{}
	}
	for k, v := range kv {
		srv.Annotations[k] = v
	}
	ExpectWithOffset(1, k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
}

// requestImport asks for an import with a fresh value and returns it.
func requestImport(ns, name string) string {
	v := time.Now().Format(time.RFC3339Nano)
	annotate(ns, name, map[string]string{mcpv1alpha1.AnnotationRequestedImportAt: v})
	return v
}

// waitImportHandled waits until status echoes the request.
func waitImportHandled(ns, name, v string) *mcpv1alpha1.McpServer {
	EventuallyWithOffset(1, func(g Gomega) string {
		srv := &mcpv1alpha1.McpServer{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, srv)).To(Succeed())
		return srv.Status.LastHandledImportAt
	}, bound(30*time.Second), 100*time.Millisecond).Should(Equal(v))
	return getServer(ns, name)
}

// handshakes counts the operations a server has seen begin: each Probe,
// ListTools or CallTool starts with exactly one initialize (initialize-era)
// or server/discover (2026-07-28).
func handshakes(s *mcpserver.Server) int {
	st := s.Stats()
	return st.Methods["initialize"] + st.Methods["server/discover"]
}

// front is an HTTP server in front of a real MCP server that can be
// switched to misbehave, as a proxy, a load balancer or a broken deployment
// would.
type front struct {
	*httptest.Server
	url  string
	hits atomic.Int64

	mu   sync.Mutex
	mode faultMode
	// arrivals are the times requests arrived.
	arrivals []time.Time
	// release unblocks hung requests when the spec ends.
	release chan struct{}
}

type faultMode int

const (
	faultNone faultMode = iota
	faultForbidden
	faultRedirect
	faultOversized
	faultHTML
	faultForeignID
	faultHang
	// faultUnavailable answers 503, as a deployment with no ready pod
	// behind its load balancer does.
	faultUnavailable
	// faultReset reads the request and drops the connection without an
	// answer, as a server that crashes while handling it does.
	faultReset
)

// newFront serves next (an MCP server's handler) on a fresh loopback port.
func newFront(next http.Handler) *front {
	f := &front{release: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.mu.Lock()
		mode := f.mode
		f.arrivals = append(f.arrivals, time.Now())
		f.mu.Unlock()
		switch mode {
		case faultNone:
			next.ServeHTTP(w, r)
		case faultForbidden:
			http.Error(w, "forbidden", http.StatusForbidden)
		case faultRedirect:
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
		case faultOversized:
			// A well-formed answer that is simply too large: 3 MiB of
			// padding inside a result.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"0","result":{"pad":"`))
			pad := make([]byte, 64<<10)
			for i := range pad {
				pad[i] = 'a'
			}
			for range 48 {
				if _, err := w.Write(pad); err != nil {
					return
				}
			}
			_, _ = w.Write([]byte(`"}}`))
		case faultHTML:
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body><h1>Down for maintenance</h1></body></html>"))
		case faultForeignID:
			// Valid JSON-RPC, but the answer to a request nobody sent.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"not-yours","result":{}}`))
		case faultUnavailable:
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
		case faultReset:
			_, _ = io.Copy(io.Discard, r.Body)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		case faultHang:
			select {
			case <-r.Context().Done():
			case <-f.release:
			}
		}
	}))
	f.url = f.Server.URL + mcpserver.Path
	DeferCleanup(func() {
		close(f.release)
		f.Server.Close()
	})
	return f
}

// minGap is the shortest time between two requests' arrivals.
func (f *front) minGap() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	gap := time.Duration(1<<63 - 1)
	for i := 1; i < len(f.arrivals); i++ {
		gap = min(gap, f.arrivals[i].Sub(f.arrivals[i-1]))
	}
	return gap
}

func (f *front) set(m faultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = m
}

// boolPtr is for the optional booleans of the API.
func boolPtr(b bool) *bool { return ptr.To(b) }

// tokensUsed holds every credential value the suite hands out, so the leak
// checks can search for all of them.
var tokensUsed testenv.Secrets

// newToken returns a fresh credential value, registered in tokensUsed.
func newToken() string { return tokensUsed.New("sEcReT", "ToKeN") }

// bound scales how long a spec waits for the manager: the race detector
// slows everything it runs several times over. What a spec asserts does not
// change, only how long it is willing to wait for it.
func bound(d time.Duration) time.Duration {
	if raceDetector {
		return 4 * d
	}
	return d
}
