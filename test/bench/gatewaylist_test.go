package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// listVisible is how many tools the listing agent may see; each has an
// input schema of about listSchemaBytes.
const (
	listVisible     = 200
	listSchemaBytes = 16 << 10
)

// BenchmarkGatewayList measures what one tools/list costs the gateway: an
// agent that may see 200 large tools (an input schema of about 16 KiB
// each) lists them over the real HTTP endpoint of a gateway running in
// this process, stateless as the chart runs it, in a namespace that holds
// more tools than the agent may see: the others are imported but not
// enabled, as most of a large catalog is. "tools=1000" holds 800 such
// tools, "tools=10000" 9,800, so that the CPU per list of the two shows
// whether the list's work grows with tools the caller cannot see. Each is
// listed in the two eras agents speak: era=2026-07-28 (one POST with the
// revision in _meta and headers) and era=2025-11-25 (the initialize era's
// tools/list, which the front door answers itself: no session is kept).
//
// alloc-bytes/served-byte is every byte this process allocated during the
// lists (the gateway's, and the few KiB per request of the benchmark's own
// client, which reads the body into one reused buffer) divided by the
// bytes of the responses; the target is ≤ 2. cpu-us/list is the CPU time
// of the process per list. No controller runs: the tools' status is
// written by the benchmark, as the importer and the tool controller would.
func BenchmarkGatewayList(b *testing.B) {
	r := startEnvtest(b)
	addr := startStatelessGateway(b, r)
	url := "http://" + addr + gateway.Path
	for _, total := range listTotals() {
		ns := fmt.Sprintf("list-%d", total)
		token := listNamespace(b, r, ns, total)
		for _, era := range gatewayEras {
			b.Run(fmt.Sprintf("tools=%d/era=%s", total, era), func(b *testing.B) {
				l := &toolLister{url: url, token: token, era: era, hc: &http.Client{}}
				// The first lists fill the gateway's caches (reviews,
				// definitions), as in steady state.
				var served, listed int
				var last error
				await(b, time.Minute, "a list of every visible tool", func() bool {
					served, listed, last = l.list()
					return last == nil && listed == listVisible
				}, func() string { return fmt.Sprintf("(last: %d tools, %v)", listed, last) })
				for range 5 {
					if _, _, err := l.list(); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu0 := cpuOfSelf(b)
				lists := 0
				for b.Loop() {
					if _, _, err := l.list(); err != nil {
						b.Fatal(err)
					}
					lists++
				}
				cpu := cpuOfSelf(b) - cpu0
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(lists)/float64(served), "alloc-bytes/served-byte")
				b.ReportMetric(float64(served), "served-bytes")
				b.ReportMetric(float64(cpu.Microseconds())/float64(lists), "cpu-us/list")
			})
		}
	}
}

// The eras agents speak: the 2026-07-28 revision, and the newest of the
// initialize era, which most agents' clients speak today.
const (
	eraModern     = "2026-07-28"
	eraInitialize = "2025-11-25"
)

var gatewayEras = []string{eraModern, eraInitialize}

// unboundBudgets raise every budget of an in-process gateway out of the
// way of a scenario that measures cost: they are checked on every request
// but never met.
var unboundBudgets = budget.Budgets{
	ServiceAccountRate: 1e9, ServiceAccountBurst: 1 << 30, ServiceAccountConcurrency: 1 << 20,
	NamespaceRate: 1e9, NamespaceBurst: 1 << 30, NamespaceConcurrency: 1 << 20,
	ServiceAccountBytesRate: 1 << 40, ServiceAccountBytesBurst: 1 << 50,
	NamespaceBytesRate: 1 << 40, NamespaceBytesBurst: 1 << 50,
}

// listTotals are the namespace sizes of the list scenario, 1,000 and
// 10,000 tools; BENCH_LIST_TOOLS (a comma-separated list) overrides them.
func listTotals() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("BENCH_LIST_TOOLS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= listVisible {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{1000, 10000}
	}
	return out
}

// toolLister makes tools/list requests of one era with plain net/http,
// reading each answer into one reused buffer: the client's own allocations
// are a few KiB per list. A request of the initialize era is sent as a
// client does once its (stateless) session is initialized: the revision in
// MCP-Protocol-Version, no session id.
type toolLister struct {
	url, token, era string
	hc              *http.Client
	buf             bytes.Buffer
}

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + modernMeta + `}}}`

// modernMeta are the _meta members a 2026-07-28 request carries.
const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}`

const eraListBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// list returns the size of the answer and how many tools it names.
func (l *toolLister) list() (int, int, error) {
	body := listBody
	if l.era == eraInitialize {
		body = eraListBody
	}
	req, err := http.NewRequest(http.MethodPost, l.url, strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if l.era == eraInitialize {
		req.Header.Set("MCP-Protocol-Version", eraInitialize)
	} else {
		req.Header.Set("MCP-Protocol-Version", eraModern)
		req.Header.Set("Mcp-Method", "tools/list")
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	l.buf.Reset()
	if _, err := l.buf.ReadFrom(resp.Body); err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK || bytes.Contains(l.buf.Bytes()[:min(l.buf.Len(), 200)], []byte(`"error"`)) {
		return 0, 0, fmt.Errorf("tools/list: status %d: %.300s", resp.StatusCode, l.buf.String())
	}
	return l.buf.Len(), bytes.Count(l.buf.Bytes(), []byte(`"inputSchema":`)), nil
}

// listNamespace creates namespace ns with the McpServer big and total of
// its tools, listVisible of them enabled, approved and Ready with a large
// input schema, the others imported (small) and not enabled; and an agent
// RBAC and an access policy allow every tool. It returns the agent's
// token.
func listNamespace(b *testing.B, r *envtestRun, ns string, total int) string {
	b.Helper()
	ctx := context.Background()
	r.namespace(b, ns)
	srv := mcpServer(ns, "big", "http://127.0.0.1:1/mcp", time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range total {
		g.Go(func() error {
			visible := i < listVisible
			size := smallSchemaBytes
			if visible {
				size = listSchemaBytes
			}
			return createTool(gctx, r.c, ns, "big", fmt.Sprintf("tool_%05d", i), listSchema(i, size), visible)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return agentToken(b, r, ns)
}

// agentToken is a token of the ServiceAccount agent of ns for the
// gateway's audience.
func agentToken(b *testing.B, r *envtestRun, ns string) string {
	b.Helper()
	cs, err := kubernetes.NewForConfig(r.cfg)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), "agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{manager.DefaultGatewayAudience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return tr.Status.Token
}

// createTool creates the McpTool remote of server with an input schema
// and its status as the importer and the tool controller would write it:
// visible ones enabled, approved and Ready, the others imported and not
// enabled.
func createTool(ctx context.Context, c client.Client, ns, server, remote string, schema []byte, visible bool) error {
	name, err := toolname.ObjectName(server, remote)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(schema)
	hash := "sha256:" + hex.EncodeToString(sum[:])
	t := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{mcpv1alpha1.LabelServer: server}}}
	t.Spec.ServerRef.Name = server
	t.Spec.RemoteName = remote
	if visible {
		t.Spec.Enabled, t.Spec.ApprovedDefinitionHash = true, hash
	}
	if err := c.Create(ctx, t); err != nil {
		return err
	}
	t.Status = mcpv1alpha1.McpToolStatus{
		LocalName:      toolname.LocalName(server, remote),
		DefinitionHash: hash,
		Description:    "Tool " + remote + " of the benchmark.",
		InputSchema:    &apiextensionsv1.JSON{Raw: schema},
	}
	if visible {
		meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{
			Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded,
			Message: "imported, approved and its server Ready", ObservedGeneration: t.Generation,
		})
	}
	return c.Status().Update(ctx, t)
}

// smallSchemaBytes is about the size of the schema listSchema writes with
// its fewest properties.
const smallSchemaBytes = 800

// listSchema is an input schema of about size bytes (at least
// smallSchemaBytes): properties with long descriptions.
func listSchema(i, size int) []byte {
	props := max(2, size/400)
	var sb strings.Builder
	sb.WriteString(`{"type":"object","properties":{`)
	for p := range props {
		if p > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"field_%d":{"type":"string","description":"Field %d of tool %d: %s"}`, p, p, i, strings.Repeat("a rather long description ", 13))
	}
	sb.WriteString(`},"required":["field_0"]}`)
	return []byte(sb.String())
}
