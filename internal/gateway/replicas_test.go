package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// roundRobin sends each request to the next of its handlers, as a Service
// without session affinity spreads one client's requests over replicas.
type roundRobin struct {
	mu       sync.Mutex
	next     int
	handlers []http.Handler
	served   []int
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	i := rr.next
	rr.next = (rr.next + 1) % len(rr.handlers)
	rr.served[i]++
	rr.mu.Unlock()
	rr.handlers[i].ServeHTTP(w, r)
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// replicaSession runs one initialize-era session against two gateways
// built from the same options, whose requests alternate between them, and
// returns what the session saw.
func replicaSession(t *testing.T, stateless bool) (tools []string, err error) {
	t.Helper()
	const ns = "team"
	tool := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs.echo", Generation: 1},
		Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"},
			ApprovedDefinitionHash: "sha256:" + strings.Repeat("a", 64)},
	}
	tool.Status.LocalName, tool.Status.EffectiveDataClass = "docs_echo", mcpv1alpha1.DataClassPublic
	tool.Status.DefinitionHash = tool.Spec.ApprovedDefinitionHash
	tool.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	policy := &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(server(ns, "docs", mcpv1alpha1.DataClassPublic, false), tool, policy).Build()
	o.Authn = tokenTable{"agent-token": {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: ns, ServiceAccount: "agent"}}
	o.Authz = allowList{"docs.echo": true}
	o.Stateless = stateless
	rr := &roundRobin{served: make([]int, 2)}
	for range 2 {
		g, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		rr.handlers = append(rr.handlers, g.Handler())
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL + Path, HTTPClient: &http.Client{Transport: bearerTransport{"agent-token"}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %s, want the initialize era", got)
	}
	// Several requests of the one session, so both replicas serve some.
	for range 3 {
		tools = nil
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			tools = append(tools, tl.Name)
		}
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.served[0] == 0 || rr.served[1] == 0 {
		t.Fatalf("requests served per replica %v: the test did not alternate", rr.served)
	}
	return tools, nil
}

func TestStatelessReplicasServeOneSessionAlternately(t *testing.T) {
	tools, err := replicaSession(t, true)
	if err != nil {
		t.Fatalf("a session spread over two stateless replicas failed: %v", err)
	}
	if !slices.Equal(tools, []string{"docs_echo"}) {
		t.Errorf("tools %v, want [docs_echo]", tools)
	}
}

// The control: with sessions kept in memory, the replica that did not see
// initialize does not know the session. This is what the stateless mode
// is for.
func TestSessionfulReplicasLoseTheSession(t *testing.T) {
	if _, err := replicaSession(t, false); err == nil {
		t.Fatal("a session spread over two sessionful replicas worked; the stateless test proves nothing")
	}
}
