package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/toolname"
)

const listToken = "list-agent-token"

// listTool is an McpTool of the server docs that the agent may list
// unless the test changes it.
func listTool(remote, schema string) *mcpv1alpha1.McpTool {
	name, _ := toolname.ObjectName("docs", remote)
	t := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: name, Generation: 1},
		Spec:       mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: remote, ApprovedDefinitionHash: hashA},
	}
	t.Status.LocalName, t.Status.DefinitionHash = toolname.LocalName("docs", remote), hashA
	t.Status.Title, t.Status.Description = "Tool "+remote, "Does "+remote+"."
	t.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(schema)}
	t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	return t
}

// listGateway serves tools (and the server docs, and a policy letting the
// agent use Internal tools) with the listable index registered as the
// manager registers it. authz decides RBAC.
func listGateway(t *testing.T, authz authz.Authorizer, tools ...*mcpv1alpha1.McpTool) (*Gateway, *httptest.Server) {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objects := []client.Object{
		server(obsNS, "docs", mcpv1alpha1.DataClassPublic, false),
		&mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: "agents"},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
		},
	}
	for _, tl := range tools {
		objects = append(objects, tl)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).
		WithIndex(&mcpv1alpha1.McpTool{}, IndexListable, listableValue).Build()
	o.ServableIndex = true
	agent := &authn.Identity{Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"}
	o.Authn = tokenTable{listToken: agent, obsToken: agent}
	o.Authz = authz
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(g.Handler())
	t.Cleanup(hs.Close)
	return g, hs
}

func plainListBody(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

type listAnswer struct {
	status               int
	contentType, caching string
	body                 string
}

func postList(t *testing.T, url, body string) listAnswer {
	t.Helper()
	return postMCP(t, url, "tools/list", "", listToken, body)
}

// postMCP posts a 2026-07-28 request of method (naming name in Mcp-Name
// when it is not empty) with token, and returns the answer.
func postMCP(t *testing.T, url, method, name, token, body string) listAnswer {
	t.Helper()
	headers := map[string]string{"MCP-Protocol-Version": modernProtocol, "Mcp-Method": method}
	if name != "" {
		headers["Mcp-Name"] = name
	}
	return postHeaders(t, url, token, body, headers)
}

// postHeaders posts body to the MCP endpoint at url as a client of the
// transport does, with token and the given headers, and returns the
// answer.
func postHeaders(t *testing.T, url, token, body string, headers map[string]string) listAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return listAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), string(b)}
}

const plainSchema = `{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]}`

// The list the gateway writes itself is, byte for byte, the one the SDK
// writes for the same request and the same tools, for tools whose text
// needs escaping, whose reviewed text and fixed arguments change what is
// served, which cannot be served, or which share a name; requests of
// another shape are left to the SDK and answered as before.
func TestFastListMatchesTheSDK(t *testing.T) {
	escaped := listTool("escaped", `{"type":"object","properties":{"q":{"type":"string","description":"a <b>bold</b> & \u2028 line, ünïcode"}}}`)
	escaped.Status.Description = "Tags <script>&amp; \u2029 and \"quotes\""
	reviewed := listTool("reviewed", `{"type":"object","properties":{"account":{"type":"string"},"text":{"type":"string"}},"required":["account","text"]}`)
	reviewed.Spec.ReviewedText = &mcpv1alpha1.ReviewedText{Title: "Reviewed", Description: "What a person wrote.", Parameters: []mcpv1alpha1.ParameterText{{Name: "text", Description: "reviewed words"}}}
	reviewed.Spec.ArgumentRules = &mcpv1alpha1.ArgumentRules{Fixed: []mcpv1alpha1.FixedArgument{{Name: "account", Value: `"acme"`}}}
	notObject := listTool("array", `{"type":"array"}`)
	disabled := listTool("disabled", plainSchema)
	disabled.Spec.Enabled = false
	twin := listTool("twin_a", plainSchema)
	twin2 := listTool("twin_b", `{"type":"object"}`)
	twin2.Status.LocalName = twin.Status.LocalName
	confidential := listTool("confidential", plainSchema)
	confidential.Spec.DataClass = mcpv1alpha1.DataClassConfidential
	forbidden := listTool("forbidden", plainSchema)
	tools := []*mcpv1alpha1.McpTool{listTool("echo", plainSchema), listTool("zeta", plainSchema), escaped, reviewed, notObject, disabled, twin, twin2, confidential, forbidden}
	allow := allowList{}
	for _, tl := range tools {
		allow[tl.Name] = tl != forbidden
	}
	g, hs := listGateway(t, allow, tools...)

	for _, id := range []string{`1`, `0`, `-7`, `123456789012345`, `"abc"`, `"with space/and-symbols_<>&"`} {
		g.noFastList.Store(false)
		before := g.fastLists.Load()
		fast := postList(t, hs.URL, plainListBody(id))
		if g.fastLists.Load() != before+1 {
			t.Fatalf("id %s: the plain request was not answered by the gateway's own list", id)
		}
		g.noFastList.Store(true)
		slow := postList(t, hs.URL, plainListBody(id))
		if fast != slow {
			t.Errorf("id %s: the gateway's list differs from the SDK's:\n own: %+v\n sdk: %+v", id, fast, slow)
		}
		for _, want := range []string{"mcp_docs_echo", "Reviewed", "reviewed words", "ünïcode"} {
			if !strings.Contains(fast.body, want) {
				t.Errorf("id %s: the list lacks %q: %s", id, want, fast.body)
			}
		}
		// Not enabled, not servable, above the caller's ceiling, not
		// allowed by RBAC, or a fixed argument: never shown.
		for _, hidden := range []string{"mcp_docs_disabled", "mcp_docs_array", "mcp_docs_confidential", "mcp_docs_forbidden", `"account"`} {
			if strings.Contains(fast.body, hidden) {
				t.Errorf("id %s: the list shows %q: %s", id, hidden, fast.body)
			}
		}
	}

	// The go-sdk client's list of this revision is of the plain shape.
	g.noFastList.Store(false)
	before := g.fastLists.Load()
	cs := agentSession(t, hs.URL, modernProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if g.fastLists.Load() == before {
		t.Error("the go-sdk client's list was not answered by the gateway's own list")
	}
	if want := []string{"mcp_docs_echo", "mcp_docs_escaped", "mcp_docs_reviewed", "mcp_docs_twin_a", "mcp_docs_zeta"}; !slices.Equal(names, want) {
		t.Errorf("the go-sdk client listed %v, want %v", names, want)
	}

	// Other shapes go to the SDK, which answers them as it always has.
	g.noFastList.Store(false)
	for name, body := range map[string]string{
		"fractional id": strings.Replace(plainListBody("1"), `"id":1`, `"id":1.5`, 1),
		"escaped id":    plainListBody(`"a\"b"`),
		"a cursor":      strings.Replace(plainListBody("1"), `"params":{`, `"params":{"cursor":"x",`, 1),
		"other _meta":   strings.Replace(plainListBody("1"), `"_meta":{`, `"_meta":{"progressToken":3,`, 1),
		"an old era":    strings.Replace(plainListBody("1"), "2026-07-28", "2025-11-25", 1),
		"trailing data": plainListBody("1") + `{}`,
	} {
		before := g.fastLists.Load()
		_ = postList(t, hs.URL, body)
		if g.fastLists.Load() != before {
			t.Errorf("%s: answered by the gateway's own list, want the SDK", name)
		}
	}
}

// A list decides only the tools that can be listed at all: the tools of
// the namespace that are not enabled, approved and Ready are not read,
// reviewed or encoded, however many there are.
func TestListWorkIgnoresToolsThatCannotBeListed(t *testing.T) {
	tools := []*mcpv1alpha1.McpTool{listTool("one", plainSchema), listTool("two", plainSchema)}
	for i := range 50 {
		off := listTool(fmt.Sprintf("off_%d", i), plainSchema)
		off.Spec.Enabled = false
		tools = append(tools, off)
	}
	authz := &countingAuthz{}
	_, hs := listGateway(t, authz, tools...)
	before := authz.count()
	got := postList(t, hs.URL, plainListBody("1"))
	if n := strings.Count(got.body, `"name":"mcp_docs_`); n != 2 {
		t.Fatalf("listed %d tools, want 2: %s", n, got.body)
	}
	if asked := authz.count() - before; asked != 2 {
		t.Errorf("a list asked RBAC %d times, want once per listable tool (2)", asked)
	}
}

// A list of unchanged tools allocates far less than it serves: the tools'
// bytes are encoded once per version and written as they are kept. The
// reader stands in for the informer cache, which hands over its objects
// without copying them (client.UnsafeDisableDeepCopy).
func TestListAllocatesLessThanItServes(t *testing.T) {
	big := `{"type":"object","properties":{` + strings.Repeat(`"f":{"type":"string","description":"`+strings.Repeat("x", 1000)+`"},`, 16) + `"g":{"type":"string"}}}`
	var tools []*mcpv1alpha1.McpTool
	for i := range 50 {
		tools = append(tools, listTool(fmt.Sprintf("big_%02d", i), big))
	}
	g, hs := listGateway(t, &countingAuthz{}, tools...)
	g.Reader = sharingReader{Reader: g.Reader, tools: tools}
	served := len(postList(t, hs.URL, plainListBody("1")).body)
	if served < 50*16000 {
		t.Fatalf("served %d bytes, want the 50 large tools", served)
	}
	lister := &rawLister{url: hs.URL + Path}
	const lists = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range lists {
		lister.list(t)
	}
	runtime.ReadMemStats(&after)
	ratio := float64(after.TotalAlloc-before.TotalAlloc) / lists / float64(served)
	if ratio > 1 {
		t.Errorf("a list allocated %.2f bytes per byte served, want at most 1 (the target through a real cache is 2)", ratio)
	}
}

// sharingReader lists its McpTools without copying them, as the informer
// cache does when asked to; everything else is read from the Reader.
type sharingReader struct {
	client.Reader
	tools []*mcpv1alpha1.McpTool
}

func (r sharingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l, ok := list.(*mcpv1alpha1.McpToolList)
	if !ok {
		return r.Reader.List(ctx, list, opts...)
	}
	for _, t := range r.tools {
		l.Items = append(l.Items, *t)
	}
	return nil
}

// rawLister posts plain lists and reads each answer into one buffer.
type rawLister struct {
	url string
	buf bytes.Buffer
}

func (l *rawLister) list(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, l.url, strings.NewReader(plainListBody("1")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modernProtocol)
	req.Header.Set("Mcp-Method", "tools/list")
	req.Header.Set("Authorization", "Bearer "+listToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	l.buf.Reset()
	_, err = l.buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("list: %v, status %d", err, resp.StatusCode)
	}
}

// The encoded tools are kept once per version, replaced by a newer one,
// and never more than the cache's bytes.
func TestListCacheKeepsOneVersionWithinItsBytes(t *testing.T) {
	c := listCache{maxBytes: 1000}
	encodes := 0
	encode := func(*mcpv1alpha1.McpTool, string) ([]byte, error) {
		encodes++
		return bytes.Repeat([]byte("x"), 100), nil
	}
	tool := func(name, rv string) *mcpv1alpha1.McpTool {
		return &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: rv, UID: types.UID("u-" + name)}}
	}
	_, _ = c.get(tool("a", "1"), "mcp_s_a", encode)
	_, _ = c.get(tool("a", "1"), "mcp_s_a", encode)
	if encodes != 1 {
		t.Fatalf("one version encoded %d times, want once", encodes)
	}
	_, _ = c.get(tool("a", "2"), "mcp_s_a", encode)
	if encodes != 2 || len(c.m) != 1 || c.bytes != 100 {
		t.Fatalf("after a new version: %d encodes, %d entries, %d bytes; want 2, 1, 100", encodes, len(c.m), c.bytes)
	}
	for i := range 50 {
		_, _ = c.get(tool(fmt.Sprintf("t%d", i), "1"), fmt.Sprintf("mcp_s_t%d", i), encode)
		if c.bytes > c.maxBytes {
			t.Fatalf("the cache holds %d bytes, more than its %d", c.bytes, c.maxBytes)
		}
	}
	total := 0
	for _, e := range c.m {
		total += len(e.enc)
	}
	if total != c.bytes {
		t.Fatalf("the cache counts %d bytes but holds %d", c.bytes, total)
	}
}

// TestHostAcceptedAsTheSDKDecides checks the fast paths' copy of the SDK's
// DNS-rebinding guard on TCP addresses, read without formatting them,
// against the rule on their text: a request that came in on a loopback
// address must name a loopback Host.
func TestHostAcceptedAsTheSDKDecides(t *testing.T) {
	locals := []*net.TCPAddr{
		{IP: net.ParseIP("127.0.0.1"), Port: 8443}, {IP: net.ParseIP("127.9.9.9"), Port: 1},
		{IP: net.ParseIP("::1"), Port: 8443}, {IP: net.ParseIP("::ffff:127.0.0.1"), Port: 8443},
		{IP: net.ParseIP("10.0.0.7"), Port: 8443}, {IP: net.ParseIP("fe80::1"), Port: 8443, Zone: "eth0"},
		{IP: net.ParseIP("::ffff:10.0.0.7"), Port: 8443},
	}
	hosts := []string{"localhost", "localhost:8443", "127.0.0.1:8443", "[::1]:8443", "gateway.mcp-system.svc:8443", "evil.example", "10.0.0.7"}
	for _, local := range locals {
		for _, host := range hosts {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Host = host
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
			want := !loopback(local.String()) || loopback(host)
			if got := hostAccepted(r); got != want {
				t.Errorf("local %s, Host %q: accepted %t, want %t", local, host, got, want)
			}
		}
	}
}
