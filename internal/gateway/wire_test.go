package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/capture"
)

// postEra posts a request of the initialize era (version in
// MCP-Protocol-Version, none when empty) and returns the answer.
func postEra(t *testing.T, url, version, body string) listAnswer {
	t.Helper()
	headers := map[string]string{}
	if version != "" {
		headers["MCP-Protocol-Version"] = version
	}
	return postHeaders(t, url, obsToken, body, headers)
}

func eraCallBody(id, name, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `"` + args + `}}`
}

// Every request of the initialize era the gateway answers itself (without
// sessions kept in the process, as the chart runs it) is answered byte for
// byte, and audit record for audit record, as the SDK answers it: the
// handshake in every revision, notifications, ping, the list and calls
// (results that need escaping, tool errors, refusals before and after the
// decision), each revision and kind of id. Requests of any other shape are
// left to the SDK.
func TestInitializeEraMatchesTheSDK(t *testing.T) {
	up := callUpstream(t)
	fails := docsTool(t, "fails")
	typed := docsTool(t, "typed")
	typed.Status.OutputSchema = &apiextensionsv1.JSON{Raw: []byte(typedOutputSchema)}
	// A tool that may run as a task is listed so in 2025-11-25 only.
	typed.Status.TaskSupport = "optional"
	auditLog := &capture.Buffer{}
	g, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true, fails.Name: true, typed.Name: true}, 0,
		func(o *Options) {
			o.Stateless = true
			o.Audit = audit.NewJSONLines(auditLog)
			o.DenialWindow = time.Nanosecond
			// Hundreds of requests in a moment, none of them over budget.
			o.Budgets = budget.Budgets{ServiceAccountRate: 1e6, ServiceAccountBurst: 1e6, NamespaceRate: 1e6, NamespaceBurst: 1e6}
		}, fails, typed)
	failsLocal := fails.Status.LocalName

	type request struct{ name, version, body string }
	var cases []request
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01", "2025-12-01"} {
		cases = append(cases, request{"initialize " + v, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v +
			`","capabilities":{"elicitation":{}},"clientInfo":{"name":"agent","version":"1"}}}`})
	}
	for _, v := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for _, id := range []string{`1`, `0`, `-7`, `123456789012345`, `"abc"`, `"with space/and-symbols_<>&"`} {
			cases = append(cases,
				request{"ping", v, `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`},
				request{"ping with empty params", v, `{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{}}`},
				request{"list", v, `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`},
				request{"list with empty params", v, `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{}}`},
				request{"escaped text", v, eraCallBody(id, echoLocal, `,"arguments":{"text":"<b>bold</b> & \u2028 ünïcode \"quoted\""}`)},
				request{"no arguments", v, eraCallBody(id, echoLocal, ``)},
				request{"null arguments", v, eraCallBody(id, echoLocal, `,"arguments":null`)},
				request{"a tool error", v, eraCallBody(id, failsLocal, `,"arguments":{}`)},
				request{"a typed result", v, eraCallBody(id, typed.Status.LocalName, `,"arguments":{}`)},
				request{"arguments not an object", v, eraCallBody(id, echoLocal, `,"arguments":[1]`)},
				request{"an unknown tool", v, eraCallBody(id, toolname.LocalName("docs", "nothing"), `,"arguments":{"text":"x"}`)},
				request{"a tool RBAC does not allow", v, eraCallBody(id, toolname.LocalName("docs", "secret"), `,"arguments":{"text":"x"}`)},
			)
		}
		cases = append(cases,
			request{"initialized", v, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
			request{"cancelled", v, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"gone"}}`},
		)
	}
	for _, tc := range cases {
		g.noInitializeEra.Store(false)
		before := g.eraAnswers.Load()
		own := postEra(t, hs.URL, tc.version, tc.body)
		if g.eraAnswers.Load() != before+1 {
			t.Fatalf("%s (%q): not answered by the gateway's own code: %+v", tc.name, tc.version, own)
		}
		if tc.name == "a typed result" {
			// No revision of this era carries structured content that is
			// not an object: its JSON is given as text, as the result has
			// no text block; resource links only from 2025-06-18.
			if strings.Contains(own.body, `"structuredContent"`) || !strings.Contains(own.body, `"text":"[1,\"two\"]"`) || !strings.Contains(own.body, `"type":"image"`) ||
				strings.Contains(own.body, `"type":"resource_link"`) != (tc.version >= "2025-06-18") {
				t.Errorf("%s (%q): %s", tc.name, tc.version, own.body)
			}
		}
		switch {
		case strings.HasPrefix(tc.name, "initialize "):
			// Every revision but 2025-11-25's is answered with its own
			// or 2025-11-25 (2026-07-28, an unknown one).
			want := !strings.Contains(tc.name, "2024-11-05") && !strings.Contains(tc.name, "2025-03-26") && !strings.Contains(tc.name, "2025-06-18")
			if strings.Contains(own.body, tasksCapability) != want {
				t.Errorf("%s: the tasks capability declared: %v, want %v: %s", tc.name, !want, want, own.body)
			}
		case strings.HasPrefix(tc.name, "list"):
			want := tc.version == tasksProtocol
			if strings.Contains(own.body, `"execution":{"taskSupport":"optional"}`) != want || strings.Count(own.body, `"execution"`) > 1 {
				t.Errorf("%s (%q): the typed tool listed as taking tasks: %v, want %v: %s", tc.name, tc.version, !want, want, own.body)
			}
		}
		ownAudit := auditLines(auditLog)
		g.noInitializeEra.Store(true)
		sdkAnswer := postEra(t, hs.URL, tc.version, tc.body)
		sdkAudit := auditLines(auditLog)
		if own != sdkAnswer {
			t.Errorf("%s (%q): the gateway's answer differs from the SDK's:\n own: %+v\n sdk: %+v", tc.name, tc.version, own, sdkAnswer)
		}
		if len(ownAudit) != len(sdkAudit) {
			t.Fatalf("%s (%q): %d audit records, the SDK's path wrote %d", tc.name, tc.version, len(ownAudit), len(sdkAudit))
		}
		for i := range ownAudit {
			if a, b := withoutCallID(t, ownAudit[i]), withoutCallID(t, sdkAudit[i]); !jsonEqual(a, b) {
				t.Errorf("%s (%q): audit record %d differs:\n own: %v\n sdk: %v", tc.name, tc.version, i, a, b)
			}
		}
	}
	g.noInitializeEra.Store(false)

	// Other shapes go to the SDK. (A call with a progress token is the
	// gateway's since its progress is relayed: relay_test.go.)
	for name, c := range map[string]struct{ version, body string }{
		"a cursor":                {"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`},
		"a batch":                 {"2025-03-26", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		"another method":          {"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`},
		"a revision not served":   {"2024-01-01", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		"a ping notification":     {"2025-11-25", `{"jsonrpc":"2.0","method":"ping"}`},
		"a fractional id":         {"2025-11-25", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
		"a repeated member":       {"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"ping"}`},
		"another member":          {"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`},
		"initialize without info": {"", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`},
		"a call with more params": {"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + echoLocal + `","other":{}}}`},
	} {
		before := g.eraAnswers.Load()
		ans := postEra(t, hs.URL, c.version, c.body)
		if g.eraAnswers.Load() != before {
			t.Errorf("%s: answered by the gateway's own code, want the SDK: %+v", name, ans)
		}
	}
	_ = auditLines(auditLog)

	// The go-sdk client of the initialize era goes the gateway's own way
	// for everything it sends.
	before := g.eraAnswers.Load()
	cs := agentSession(t, hs.URL, "2025-11-25")
	res := callAs(t, cs, echoLocal, nil)
	if got := resultText(res); res.IsError || got != obsArgument {
		t.Errorf("the go-sdk client's call answered %q (error %v), want the argument echoed", got, res.IsError)
	}
	// initialize, notifications/initialized and the call.
	if got := g.eraAnswers.Load() - before; got != 3 {
		t.Errorf("the go-sdk client's session: %d of its 3 requests answered by the gateway's own code", got)
	}
}

// The text result written without reflection for the initialize era is
// byte for byte the SDK's encoding of it.
func TestEraTextResultMatchesTheSDK(t *testing.T) {
	for _, text := range []string{"", "hello", `quote " backslash \ slash /`, "<b>&amp;</b>", "line\nbreak\ttab\x00\x1f", "\u2028\u2029", "bad \xff\xfe utf-8", "日本語 🚀"} {
		for _, isError := range []bool{false, true} {
			res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
			fast, ok := eraTextResult(res)
			if !ok {
				t.Fatalf("a text result of %q was not written without reflection", text)
			}
			want, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fast, want) {
				t.Errorf("text %q, isError %v:\n got %s\nwant %s", text, isError, fast, want)
			}
		}
	}
	if _, ok := eraTextResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}); ok {
		t.Error("an image was written as a text result")
	}
}

// bigCatalog is n tools of the server docs the agent may call, each with a
// schema of about size bytes.
func bigCatalog(t *testing.T, n, size int) ([]client.Object, allowList) {
	t.Helper()
	var props strings.Builder
	for i := 0; props.Len() < size; i++ {
		if i > 0 {
			props.WriteString(",")
		}
		fmt.Fprintf(&props, `"p%d":{"type":"string","description":"%s"}`, i, strings.Repeat("d", 200))
	}
	schema := `{"type":"object","properties":{` + props.String() + `}}`
	allow := allowList{echoObject: true}
	var out []client.Object
	for i := range n {
		tl := docsTool(t, fmt.Sprintf("big_%d", i))
		tl.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(schema)}
		allow[tl.Name] = true
		out = append(out, tl)
	}
	return out, allow
}

// allocatedPerRequest is the bytes the handler allocates, on average, to
// answer n requests made by req.
func allocatedPerRequest(t *testing.T, h http.Handler, n int, req func() *http.Request) (uint64, []*httptest.ResponseRecorder) {
	t.Helper()
	reqs := make([]*http.Request, n)
	recs := make([]*httptest.ResponseRecorder, n)
	for i := range reqs {
		reqs[i], recs[i] = req(), httptest.NewRecorder()
	}
	// One request first: what is built once (the list cache, the SDK's
	// schema of a tool) is not any one request's cost.
	h.ServeHTTP(httptest.NewRecorder(), req())
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range reqs {
		h.ServeHTTP(recs[i], reqs[i])
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n), recs
}

// eraRequest is a request of the initialize era to the handler, from a
// loopback address as a test server's would be.
func eraRequest(version, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	req.Header.Set("Authorization", "Bearer "+obsToken)
	return req.WithContext(withLocalAddr(req.Context()))
}

// A request of the clients agents use today (the initialize era, without
// sessions kept here) pays for what it names, not for the caller's
// catalog: with about 4 MiB of tools the caller may call, a ping and a
// handshake allocate at most 64 KiB, and a call, which reads and decides
// its one tool, well under the catalog's size. (Before the front door, the
// SDK's server built for each request held the whole catalog: 56 MiB for a
// ping.)
func TestInitializeEraRequestsPayOnlyWhatTheyName(t *testing.T) {
	up := callUpstream(t)
	tools, allow := bigCatalog(t, 60, 70<<10)
	g, _ := catalogGatewayWith(t, up.URL, nil, allow, 0, func(o *Options) { o.Stateless = true }, tools...)
	for _, c := range []struct {
		name, version, body string
		max                 uint64
	}{
		{"ping", "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 64 << 10},
		{"initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`, 64 << 10},
		{"initialized", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 64 << 10},
		{"call", "2025-11-25", eraCallBody("3", echoLocal, `,"arguments":{"text":"hi"}`), 1 << 20},
		{"refused call", "2025-11-25", eraCallBody("4", toolname.LocalName("docs", "nothing"), `,"arguments":{"text":"hi"}`), 1 << 20},
	} {
		per, recs := allocatedPerRequest(t, g.Handler(), 20, func() *http.Request { return eraRequest(c.version, c.body) })
		if recs[0].Code/100 != 2 {
			t.Fatalf("%s: answered %d %s", c.name, recs[0].Code, recs[0].Body)
		}
		t.Logf("%s: %d bytes allocated per request", c.name, per)
		if per > c.max {
			t.Errorf("%s allocated %d bytes per request with a catalog of 60 tools of 70 KiB, want at most %d", c.name, per, c.max)
		}
	}
}

// A body larger than the gateway accepts is refused with 413 before it is
// read past the bound, and nothing of it is decoded; a body at the bound
// is served.
func TestRequestBodyIsBoundedBeforeDecoding(t *testing.T) {
	up := callUpstream(t)
	g, _ := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		o.Stateless = true
		o.MaxRequestBytes = 64 << 10
	})
	huge := eraCallBody("1", toolname.LocalName("docs", "nothing"), `,"arguments":{"text":"`+strings.Repeat("x", 4<<20)+`"}`)
	per, recs := allocatedPerRequest(t, g.Handler(), 4, func() *http.Request { return eraRequest("2025-11-25", huge) })
	rec := recs[0]
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "larger than the gateway accepts (65536 bytes)") {
		t.Fatalf("a 4 MiB body: %d %s; want 413 naming the bound", rec.Code, rec.Body)
	}
	// The request's own 4 MiB are the test's; the gateway reads at most
	// the bound of them.
	if per > 512<<10 {
		t.Errorf("refusing a 4 MiB body allocated %d bytes, want at most 512 KiB", per)
	}
	// Without a Content-Length (chunked), the bound holds as it is read.
	req := eraRequest("2025-11-25", huge)
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 4 MiB body without a length: %d, want 413", rec.Code)
	}
	// At the bound: served.
	pad := 64<<10 - len(eraCallBody("1", echoLocal, `,"arguments":{"text":""}`))
	at := eraCallBody("1", echoLocal, `,"arguments":{"text":"`+strings.Repeat("y", pad)+`"}`)
	rec = httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, eraRequest("2025-11-25", at))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), strings.Repeat("y", pad)) {
		t.Errorf("a body of exactly the bound: %d %.200s; want the call answered", rec.Code, rec.Body)
	}
}

// The arguments of a call that is not allowed are not decoded: a call of a
// tool that does not exist with nearly a MiB of arguments allocates a
// small multiple of its body, not the decoded form of its arguments, and
// is audited with the hash of the arguments' bytes.
func TestRefusedCallsArgumentsAreNotDecoded(t *testing.T) {
	up := callUpstream(t)
	auditLog := &capture.Buffer{}
	g, _ := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		o.Stateless = true
		o.Audit = audit.NewJSONLines(auditLog)
		o.DenialWindow = time.Nanosecond
	})
	// Many small values: decoded, each would be an allocation of its own.
	args := `{"list":[` + strings.TrimSuffix(strings.Repeat(`{"a":1},`, 100000), ",") + `]}`
	body := eraCallBody("1", toolname.LocalName("docs", "nothing"), `,"arguments":`+args)
	per, recs := allocatedPerRequest(t, g.Handler(), 4, func() *http.Request { return eraRequest("2025-11-25", body) })
	if !strings.Contains(recs[0].Body.String(), "no tool of this name") {
		t.Fatalf("the call was answered %s, want a refusal", recs[0].Body)
	}
	if per > uint64(4*len(body)) {
		t.Errorf("refusing a call with %d bytes of arguments allocated %d bytes, want at most %d", len(body), per, 4*len(body))
	}
	lines := auditLines(auditLog)
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], rawArgumentsHash(json.RawMessage(args))) {
		t.Errorf("the refusal was audited as %q, want the hash of the arguments' bytes", lines)
	}
}

// Arguments past the nesting or value bound are refused, once the call is
// allowed, with a message saying which bound; arguments within them are
// decoded as before.
func TestArgumentBounds(t *testing.T) {
	deep := strings.Repeat(`{"a":`, maxArgumentDepth) + `1` + strings.Repeat(`}`, maxArgumentDepth)
	deeper := strings.Repeat(`{"a":`, maxArgumentDepth+1) + `1` + strings.Repeat(`}`, maxArgumentDepth+1)
	many := `{"l":[` + strings.TrimSuffix(strings.Repeat(`1,`, maxArgumentValues-2), ",") + `]}`
	more := `{"l":[` + strings.TrimSuffix(strings.Repeat(`1,`, maxArgumentValues), ",") + `]}`
	strs := `{"s":"` + strings.Repeat(`[{,:\"`, 50000) + `"}`
	for name, c := range map[string]struct {
		raw  string
		want error
	}{
		"at the depth bound":           {deep, nil},
		"past the depth bound":         {deeper, errArgumentsTooLarge},
		"at the value bound":           {many, nil},
		"past the value bound":         {more, errArgumentsTooLarge},
		"structure inside a string":    {strs, nil},
		"not an object":                {`[1]`, errArgumentsNotObject},
		"an unterminated string":       {`{"a":"`, errArgumentsNotObject},
		"an escaped quote at the end":  {`{"a":"\"}`, errArgumentsNotObject},
		"nothing but an empty object":  {`{}`, nil},
		"brackets past the bound only": {strings.Repeat(`[`, maxArgumentDepth+1), errArgumentsTooLarge},
	} {
		_, _, err := arguments(json.RawMessage(c.raw))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// withLocalAddr is ctx as the server gives it to a request that came in on
// a loopback address.
func withLocalAddr(ctx context.Context) context.Context {
	return context.WithValue(ctx, http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443})
}

// A request costs what it is answered: a namespace answered more list
// bytes than its budget allows is refused (429, BytesLimited) until the
// debt is repaid, however few requests it made, while another namespace
// is served. (budget.Budgets counted requests only: a list of megabytes was
// priced like a ping.)
func TestAListIsChargedByTheBytesItServes(t *testing.T) {
	up := callUpstream(t)
	tools, allow := bigCatalog(t, 10, 10<<10)
	g, _ := catalogGatewayWith(t, up.URL, nil, allow, 0, func(o *Options) {
		o.Stateless = true
		o.Budgets = budget.Budgets{NamespaceBytesRate: 1 << 10, NamespaceBytesBurst: 64 << 10}
		o.Authn = twoNamespaces()
	}, tools...)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	rec := httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, eraRequest("2025-11-25", list))
	if rec.Code != http.StatusOK || rec.Body.Len() < 64<<10 {
		t.Fatalf("the first list: %d, %d bytes; want it served, larger than the burst", rec.Code, rec.Body.Len())
	}
	for _, body := range []string{list, `{"jsonrpc":"2.0","id":2,"method":"ping"}`} {
		rec = httptest.NewRecorder()
		g.Handler().ServeHTTP(rec, eraRequest("2025-11-25", body))
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"reason":"BytesLimited"`) ||
			!strings.Contains(rec.Body.String(), "answered-bytes budget") || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s while the namespace is in debt: %d %s; want 429 BytesLimited with Retry-After", body, rec.Code, rec.Body)
		}
	}
	req := eraRequest("2025-11-25", list)
	req.Header.Set("Authorization", "Bearer other")
	rec = httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("another namespace's list: %d %s; want it served", rec.Code, rec.Body)
	}
}

// The request bytes a replica holds at once are shared per namespace: a
// namespace holding its share is told to retry (503) before its body is
// read, another namespace is served, and the share comes back when the
// requests end.
func TestRequestBytesInFlightAreSharedPerNamespace(t *testing.T) {
	up := callUpstream(t)
	g, _ := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		o.Stateless = true
		o.MaxRequestBytes = 1 << 10
		o.MaxRequestBytesInFlight = 4 << 10
		o.Authn = twoNamespaces()
	})
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	share := g.inflight.NamespaceShare()
	if share != 2<<10 {
		t.Fatalf("a namespace's share is %d bytes, want half the replica's 4 KiB", share)
	}
	if !g.inflight.Take(obsNS, share) {
		t.Fatal("the namespace's share could not be taken")
	}
	rec := httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, eraRequest("2025-11-25", ping))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a request of a namespace holding its share: %d %s; want 503 with Retry-After", rec.Code, rec.Body)
	}
	other := eraRequest("2025-11-25", ping)
	other.Header.Set("Authorization", "Bearer other")
	rec = httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, other)
	if rec.Code != http.StatusOK {
		t.Errorf("another namespace's request: %d %s; want it served", rec.Code, rec.Body)
	}
	g.inflight.Give(obsNS, share)
	rec = httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, eraRequest("2025-11-25", ping))
	if rec.Code != http.StatusOK {
		t.Errorf("after the share came back: %d %s", rec.Code, rec.Body)
	}
	if g.inflight.Held() != 0 {
		t.Errorf("%d bytes still held after every request ended", g.inflight.Held())
	}
}

func discoverBody(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// server/discover, 2026-07-28's nearest to a ping, is answered by the
// gateway's own code byte for byte as the SDK answers it, with and
// without list changes told, for a version that JSON must escape; it
// allocates at most 64 KiB however large the caller's catalog (the SDK's
// server for it allocated 461 KiB).
func TestDiscoverMatchesTheSDK(t *testing.T) {
	up := callUpstream(t)
	tools, allow := bigCatalog(t, 60, 70<<10)
	g, hs := catalogGatewayWith(t, up.URL, nil, allow, 0, func(o *Options) { o.Version = `v1.2.3<&>` }, tools...)
	for _, told := range []bool{false, true} {
		g.changes.running.Store(told)
		for _, id := range []string{`1`, `"abc"`} {
			g.noInitializeEra.Store(false)
			before := g.eraAnswers.Load()
			own := postMCP(t, hs.URL, "server/discover", "", obsToken, discoverBody(id))
			if g.eraAnswers.Load() != before+1 {
				t.Fatalf("told %v, id %s: not answered by the gateway's own code: %+v", told, id, own)
			}
			g.noInitializeEra.Store(true)
			sdkAnswer := postMCP(t, hs.URL, "server/discover", "", obsToken, discoverBody(id))
			if own != sdkAnswer {
				t.Errorf("told %v, id %s: the gateway's answer differs from the SDK's:\n own: %+v\n sdk: %+v", told, id, own, sdkAnswer)
			}
		}
	}
	g.noInitializeEra.Store(false)
	per, recs := allocatedPerRequest(t, g.Handler(), 20, func() *http.Request {
		req := eraRequest(modernProtocol, discoverBody("1"))
		req.Header.Set("Mcp-Method", "server/discover")
		return req
	})
	if recs[0].Code != http.StatusOK {
		t.Fatalf("server/discover: %d %s", recs[0].Code, recs[0].Body)
	}
	if per > 64<<10 {
		t.Errorf("server/discover allocated %d bytes per request, want at most 64 KiB", per)
	}
}

// twoNamespaces authenticates the agent of obsNS by obsToken and one of
// the namespace other by "other".
func twoNamespaces() tokenTable {
	return tokenTable{
		obsToken: {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
		"other":  {Username: "system:serviceaccount:other:agent", UID: "u2", Namespace: "other", ServiceAccount: "agent"},
	}
}
