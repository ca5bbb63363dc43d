package integration_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testenv"
)

// startPool starts a second manager running only the gateway, for the
// namespaces given, as the chart runs a pool of gateway.pools, and
// returns it with its MCP endpoint. It stops when the spec ends.
func startPool(namespaces ...string) (*testenv.Manager, string) {
	GinkgoHelper()
	ready := make(chan string, 1)
	opts := gatewayOptions(ready)
	opts.Components = manager.ComponentsGateway
	opts.WatchNamespaces = namespaces
	pool := testenv.StartManager(cfg, opts)
	DeferCleanup(pool.Stop)
	var addr string
	Eventually(ready, 30*time.Second).Should(Receive(&addr))
	return pool, "http://" + addr + "/mcp"
}

// connectTo opens a go-sdk session to the gateway at endpoint.
func connectTo(endpoint, token, version string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpClient(token)}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		DeferCleanup(cs.Close)
	}
	return cs, err
}

var _ = Describe("A gateway pool", func() {
	It("serves only its namespaces: another namespace's caller is refused 421 before any work, and nothing of that namespace is cached", func() {
		served, other, owner := consumerNamespace(), newNamespace(), newNamespace()
		docs := newUpstream(served, "docs", mcpserver.Options{}, []string{echo})
		theirs := newUpstream(other, "theirs", mcpserver.Options{}, []string{echo})
		platform := newUpstream(owner, "platform", mcpserver.Options{}, []string{echo})
		platform.share(&mcpv1alpha1.ServerSharing{Namespaces: []string{served}})
		ss := accept(served, "platform", platform, nil)
		sharedReady(ss, mcpv1alpha1.ReasonShared)
		shared := toolname.SharedLocalName("platform", echo)
		bot := newAgent(served, "bot").allowInternal()
		intruder := newAgent(other, "intruder").allowInternal()

		pool, endpoint := startPool(served)

		By("the pool's cache holds nothing of a namespace outside the pool")
		ctx := context.Background()
		err := pool.GetCache().Get(ctx, types.NamespacedName{Namespace: other, Name: theirs.object(echo)}, &mcpv1alpha1.McpTool{})
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsNotFound(err)).To(BeFalse(), "not an absent object: a namespace the cache does not hold")
		var tools mcpv1alpha1.McpToolList
		Expect(pool.GetCache().List(ctx, &tools)).To(Succeed())
		Expect(tools.Items).NotTo(BeEmpty())
		for _, t := range tools.Items {
			Expect(t.Namespace).To(Equal(served))
		}

		By("a caller of another namespace: 421, counted and audited, nothing sent")
		refused := metrics.GatewayRefusals.WithLabelValues(audit.RefusedNamespaceNotServed)
		before := testutil.ToFloat64(refused)
		req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+theirs.local(echo)+`","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"`+modernEra+`"}}}`))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", modernEra)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", theirs.local(echo))
		resp, err := httpClient(intruder.token).Do(req)
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusMisdirectedRequest))
		var answer struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		Expect(json.Unmarshal(body, &answer)).To(Succeed())
		Expect(answer.Error.Message).To(ContainSubstring(`does not serve namespace "` + other + `"`))
		Expect(string(body)).NotTo(ContainSubstring(served), "the answer does not say which namespaces the pool serves")
		Expect(testutil.ToFloat64(refused)).To(Equal(before + 1))
		Expect(theirs.Calls(echo)).To(BeZero())
		Eventually(func(g Gomega) {
			var found bool
			for _, l := range auditLog.all() {
				var r auditRecord
				g.Expect(json.Unmarshal([]byte(l), &r)).To(Succeed())
				if r.Namespace == other && r.Reason == audit.RefusedNamespaceNotServed {
					g.Expect([]string{r.Phase, r.Caller}).To(Equal([]string{audit.PhaseDenied, "system:serviceaccount:" + other + ":intruder"}))
					found = true
				}
			}
			g.Expect(found).To(BeTrue(), "the refusal is audited")
		}).Should(Succeed())
		// The go-sdk client is refused too: it cannot even begin.
		_, err = connectTo(endpoint, intruder.token, legacyEra)
		Expect(err).To(HaveOccurred())

		By("a caller of the pool's namespace is served; the shared server whose namespace is outside the pool is reported, not offered")
		cs, err := connectTo(endpoint, bot.token, modernEra)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolNames(cs)).To(ConsistOf(docs.local(echo)))
		isErr, txt := call(cs, docs.local(echo), map[string]any{"text": "pooled"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("pooled"))
		isErr, txt = call(cs, shared, map[string]any{"text": "shared"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring(`is in namespace "` + owner + `", which the gateway serving this namespace does not serve`))
		Expect(platform.Calls(echo)).To(BeZero())
		Expect(logs.String()).To(ContainSubstring("a shared server is not offered: add its namespace to this gateway pool's namespaces"))
		recs := sharedAudit(served)
		Expect(recs).NotTo(BeEmpty())
		last := recs[len(recs)-1]
		Expect([]string{last.Reason, last.Detail, last.ServerNamespace, last.SharedServer}).To(
			Equal([]string{audit.DenyNotServable, audit.DetailOwnerNotServed, owner, "platform"}))

		By("a pool that includes the owner's namespace serves the shared tool")
		_, both := startPool(served, owner)
		cs, err = connectTo(both, bot.token, modernEra)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolNames(cs)).To(ConsistOf(docs.local(echo), shared))
		isErr, txt = call(cs, shared, map[string]any{"text": "shared"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("shared"))
	})
})
