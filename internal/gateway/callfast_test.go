package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/capture"
)

// callUpstream is a real go-sdk server (2026-07-28, stateless) with the
// tools the tests call: echo answers its text argument, fails fails as a
// tool, and the others answer that they said no.
func callUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	schema := map[string]any{"type": "object"}
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: args.Text}}}, nil
	})
	for _, name := range []string{"fails", "gated", "headed"} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: schema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: name == "fails", Content: []sdk.Content{&sdk.TextContent{Text: name + " says no"}}}, nil
		})
	}
	// A result that is more than text, whose structured content is not an
	// object (the 2026-07-28 revision allows any JSON value).
	srv.AddTool(&sdk.Tool{Name: "typed", InputSchema: schema, OutputSchema: json.RawMessage(typedOutputSchema)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ImageContent{Data: []byte("\x89PNG<&>"), MIMEType: "image/png"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "<a> & \u2028"}},
			&sdk.ResourceLink{URI: "https://x.example/r", Name: "r"},
		}, StructuredContent: []any{1, "two"}}, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(hs.Close)
	return hs
}

const typedOutputSchema = `{"type":"array"}`

// auditLines takes the audit records written so far, one per line.
func auditLines(b *capture.Buffer) []string {
	out := strings.TrimSpace(b.Take())
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func plainCallBody(id, name, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `",` + args +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

func postCall(t *testing.T, url, name, body string) listAnswer {
	t.Helper()
	return postMCP(t, url, "tools/call", name, obsToken, body)
}

// withoutCallID drops what differs between two audit records of equal
// calls: the call id and the times.
func withoutCallID(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("audit record %q: %v", line, err)
	}
	for _, k := range []string{"callID", "time", "latencyMillis"} {
		delete(m, k)
	}
	return m
}

// The calls the gateway answers itself are answered, byte for byte and
// audit record for audit record, as the SDK answers them: a result that
// needs escaping, a tool error, a refusal after the decision, a tool that
// does not exist or that RBAC does not allow, and every kind of id. Calls
// of any other shape, or that need what only the SDK's path does (an
// approval, argument headers), are left to it, and a real go-sdk client's
// call takes the gateway's own path.
func TestFastCallMatchesTheSDK(t *testing.T) {
	up := callUpstream(t)
	yes := true
	gated := docsTool(t, "gated")
	gated.Spec.ApprovalRequired = &yes
	fails := docsTool(t, "fails")
	failsLocal := fails.Status.LocalName
	headed := docsTool(t, "headed")
	headed.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}
	typed := docsTool(t, "typed")
	typed.Status.OutputSchema = &apiextensionsv1.JSON{Raw: []byte(typedOutputSchema)}
	auditLog := &capture.Buffer{}
	g, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true, fails.Name: true, gated.Name: true, headed.Name: true, typed.Name: true}, 0,
		func(o *Options) {
			o.Audit = audit.NewJSONLines(auditLog)
			// Every denial written, none aggregated with the one before.
			o.DenialWindow = time.Nanosecond
		}, fails, gated, headed, typed)

	cases := []struct{ name, tool, args string }{
		{"escaped text", echoLocal, `"arguments":{"text":"<b>bold</b> & \u2028 ünïcode \"quoted\""},`},
		{"no arguments", echoLocal, ``},
		{"null arguments", echoLocal, `"arguments":null,`},
		{"a tool error", failsLocal, `"arguments":{},`},
		{"a typed result", typed.Status.LocalName, `"arguments":{},`},
		{"arguments not an object", echoLocal, `"arguments":[1],`},
		{"an unknown tool", toolname.LocalName("docs", "nothing"), `"arguments":{"text":"x"},`},
		{"a tool RBAC does not allow", toolname.LocalName("docs", "secret"), `"arguments":{"text":"x"},`},
	}
	for _, id := range []string{`1`, `0`, `-7`, `123456789012345`, `"abc"`, `"with space/and-symbols_<>&"`} {
		for _, tc := range cases {
			body := plainCallBody(id, tc.tool, tc.args)
			g.noFastCall.Store(false)
			before := g.fastCalls.Load()
			fast := postCall(t, hs.URL, tc.tool, body)
			if g.fastCalls.Load() != before+1 {
				t.Fatalf("%s, id %s: the plain call was not answered by the gateway's own path", tc.name, id)
			}
			if tc.name == "a typed result" {
				for _, want := range []string{`"structuredContent":[1,"two"]`, `"type":"image"`, `"type":"resource"`, `"type":"resource_link"`} {
					if !strings.Contains(fast.body, want) {
						t.Errorf("id %s: the typed result lacks %s: %s", id, want, fast.body)
					}
				}
			}
			fastAudit := auditLines(auditLog)
			g.noFastCall.Store(true)
			slow := postCall(t, hs.URL, tc.tool, body)
			slowAudit := auditLines(auditLog)
			if tc.name == "an unknown tool" || tc.name == "a tool RBAC does not allow" {
				// The SDK leaves resultType out of a result its server's
				// middleware answers (a call refused before any tool
				// handler); the revision requires it on every result.
				slow.body = withResultType(slow.body)
			}
			if fast != slow {
				t.Errorf("%s, id %s: the gateway's answer differs from the SDK's:\n own: %+v\n sdk: %+v", tc.name, id, fast, slow)
			}
			if len(fastAudit) != len(slowAudit) {
				t.Fatalf("%s, id %s: %d audit records, the SDK's path wrote %d", tc.name, id, len(fastAudit), len(slowAudit))
			}
			if tc.name == "arguments not an object" && (len(fastAudit) != 1 || !strings.Contains(fastAudit[0], `"reason":"InvalidArguments"`)) {
				t.Errorf("id %s: arguments that are not an object were audited as %q, want one denial for InvalidArguments", id, fastAudit)
			}
			for i := range fastAudit {
				if a, b := withoutCallID(t, fastAudit[i]), withoutCallID(t, slowAudit[i]); !jsonEqual(a, b) {
					t.Errorf("%s, id %s: audit record %d differs:\n own: %v\n sdk: %v", tc.name, id, i, a, b)
				}
			}
		}
	}

	// Other shapes, and calls only the SDK's path can answer, go to it.
	g.noFastCall.Store(false)
	for name, c := range map[string]struct{ header, body string }{
		"a progress token":           {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"_meta":{`, `"_meta":{"progressToken":3,`, 1)},
		"an input response":          {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"params":{`, `"params":{"requestState":"x",`, 1)},
		"a name unlike the header":   {failsLocal, plainCallBody("1", echoLocal, "")},
		"a member in other case":     {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"method"`, `"Method"`, 1)},
		"a repeated member":          {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"params":{`, `"params":{"name":"`+failsLocal+`",`, 1)},
		"no client capabilities":     {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `,"io.modelcontextprotocol/clientCapabilities":{}`, ``, 1)},
		"capabilities not an object": {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":[]`, 1)},
		"a client without a name":    {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `{"name":"agent","version":"1"}`, `{"version":"1"}`, 1)},
		"a client named nothing":     {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"name":"agent"`, `"name":""`, 1)},
		"a client named by a number": {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"name":"agent"`, `"name":12`, 1)},
		"a trace parent not a text":  {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"_meta":{`, `"_meta":{"traceparent":{},`, 1)},
		"an old era":                 {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), "2026-07-28", "2025-11-25", 1)},
		"a fractional id":            {echoLocal, strings.Replace(plainCallBody("1", echoLocal, ""), `"id":1`, `"id":1.5`, 1)},
		"trailing data":              {echoLocal, plainCallBody("1", echoLocal, "") + `{}`},
		"an approval":                {toolname.LocalName("docs", "gated"), plainCallBody("1", toolname.LocalName("docs", "gated"), "")},
		"argument headers":           {toolname.LocalName("docs", "headed"), plainCallBody("1", toolname.LocalName("docs", "headed"), `"arguments":{"region":"eu"},`)},
	} {
		before := g.fastCalls.Load()
		ans := postCall(t, hs.URL, c.header, c.body)
		if g.fastCalls.Load() != before {
			t.Errorf("%s: answered by the gateway's own path, want the SDK: %+v", name, ans)
		}
	}
	_ = auditLines(auditLog)

	// The go-sdk client's call of this revision is of the plain shape.
	before := g.fastCalls.Load()
	cs := agentSession(t, hs.URL, modernProtocol)
	res := callAs(t, cs, echoLocal, nil)
	if got := resultText(res); res.IsError || got != obsArgument {
		t.Errorf("the go-sdk client's call answered %q (error %v), want the argument echoed", got, res.IsError)
	}
	if g.fastCalls.Load() != before+1 {
		t.Error("the go-sdk client's call was not answered by the gateway's own path")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: failsLocal, Arguments: map[string]any{}})
	if err != nil || !res.IsError || resultText(res) != "fails says no" {
		t.Fatalf("calling a tool that fails: %v, %+v; want its tool error", err, res)
	}
}

// withResultType adds the resultType of a complete result to a 2026-07-28
// response that has none.
func withResultType(body string) string {
	if strings.Contains(body, `"resultType"`) || !strings.HasSuffix(body, "}}") {
		return body
	}
	return strings.TrimSuffix(body, "}}") + `,"resultType":"complete"}}`
}

// docsTool is a tool of the McpServer team/docs that catalogGateway
// serves: enabled, its definition approved, Ready, Public and without
// approval.
func docsTool(t testing.TB, remote string) *mcpv1alpha1.McpTool {
	t.Helper()
	name, err := toolname.ObjectName("docs", remote)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	tl := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: name, Generation: 1},
		Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: remote,
			ApprovedDefinitionHash: "sha256:" + strings.Repeat("a", 64)},
	}
	tl.Status.LocalName, tl.Status.EffectiveDataClass = toolname.LocalName("docs", remote), mcpv1alpha1.DataClassPublic
	tl.Status.DefinitionHash = tl.Spec.ApprovedDefinitionHash
	tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	tl.Status.EffectiveApprovalRequired = &no
	return tl
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The text result written without reflection is byte for byte what the
// SDK's encoding gives, for texts JSON must escape and for tool errors;
// any other result goes the SDK's way.
func TestTextResultMatchesTheSDK(t *testing.T) {
	g := &Gateway{Options: Options{Version: `v1.2.3<&>`}}
	g.textResultPrefix = g.buildTextResultPrefix()
	if g.textResultPrefix == nil {
		t.Fatal("no prefix was cut from the SDK's encoding of a text result")
	}
	texts := []string{"", "hello", `quote " backslash \ slash /`, "<b>&amp;</b>", "line\nbreak\ttab\x00\x1f", "\u2028\u2029", "bad \xff\xfe utf-8", "日本語 🚀"}
	for _, text := range texts {
		for _, isError := range []bool{false, true} {
			res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
			fast, ok := g.textResult(res)
			if !ok {
				t.Fatalf("a text result of %q was not written without reflection", text)
			}
			// The SDK's way, as callResult takes it for any other result.
			res.Meta = sdk.Meta{sdk.MetaKeyServerInfo: g.implementation()}
			want, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want[:len(want)-1], `,"resultType":"complete"}`...)
			if !bytes.Equal(fast, want) {
				t.Errorf("text %q, isError %v:\n got %s\nwant %s", text, isError, fast, want)
			}
		}
	}
	others := map[string]*sdk.CallToolResult{
		"two blocks":         {Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}},
		"no block":           {Content: []sdk.Content{}},
		"an image":           {Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		"annotated":          {Content: []sdk.Content{&sdk.TextContent{Text: "a", Annotations: &sdk.Annotations{Priority: 1}}}},
		"a block's _meta":    {Content: []sdk.Content{&sdk.TextContent{Text: "a", Meta: sdk.Meta{"k": "v"}}}},
		"structured content": {Content: []sdk.Content{&sdk.TextContent{Text: "a"}}, StructuredContent: map[string]any{"a": 1}},
		"its own _meta":      {Content: []sdk.Content{&sdk.TextContent{Text: "a"}}, Meta: sdk.Meta{"k": "v"}},
		"input requests":     {InputRequests: sdk.InputRequestMap{}},
		"request state":      {Content: []sdk.Content{&sdk.TextContent{Text: "a"}}, RequestState: "s"},
	}
	for name, res := range others {
		if _, ok := g.textResult(res); ok {
			t.Errorf("%s: written as a plain text result", name)
		}
	}
}

// textResult names every member of the SDK's CallToolResult and
// TextContent it leaves out; a member the SDK adds must be weighed there
// before a plain text result may go without it.
func TestTextResultKnowsTheSDKsMembers(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	if got, want := fields(sdk.CallToolResult{}), []string{"Meta", "Content", "StructuredContent", "IsError", "InputRequests", "RequestState", "resultType", "err"}; !slices.Equal(got, want) {
		t.Errorf("CallToolResult's members are %v, textResult knows %v", got, want)
	}
	if got, want := fields(sdk.TextContent{}), []string{"Text", "Meta", "Annotations"}; !slices.Equal(got, want) {
		t.Errorf("TextContent's members are %v, textResult knows %v", got, want)
	}
}
