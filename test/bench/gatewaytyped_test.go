package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/testproc"
)

// typedUpstreamAddr, set, makes this test binary the upstream of the
// typed-result scenario (TestMain): a stateless go-sdk server whose tool
// picture returns an image of the size asked, and a caption.
const typedUpstreamAddr = "BENCH_TYPED_UPSTREAM_ADDR"

// typedImageBytes is the size of the image the scenario passes: 5 MiB,
// 6.7 MiB in base64.
const typedImageBytes = 5 << 20

// typedInFlight is how many calls the scenario keeps in flight at once.
const typedInFlight = 4

const typedTool = "picture"

// typedImage is the picture tool's image of n bytes, the same for the
// same n.
func typedImage(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 11))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// typedUpstreamLength, set, has the typed upstream say the length of its
// answers (Content-Length), which the go-sdk's server does not: it writes
// them chunked.
const typedUpstreamLength = "BENCH_TYPED_UPSTREAM_LENGTH"

// typedUpstreamStream, set, has the typed upstream answer calls as an
// event stream, as the go-sdk's and the TypeScript SDK's servers do by
// default.
const typedUpstreamStream = "BENCH_TYPED_UPSTREAM_STREAM"

// runTypedUpstream serves the picture tool on addr, answering
// application/json (or an event stream), and /readyz as startManagerProc
// expects.
func runTypedUpstream(addr string, args []string) int {
	srv := sdk.NewServer(&sdk.Implementation{Name: "typed", Version: "1"}, nil)
	images := map[int][]byte{}
	var mu sync.Mutex
	srv.AddTool(&sdk.Tool{Name: typedTool, InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Bytes int }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			mu.Lock()
			img, ok := images[a.Bytes]
			if !ok {
				img = typedImage(a.Bytes)
				images[a.Bytes] = img
			}
			mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: img, MIMEType: "image/png"}, &sdk.TextContent{Text: "a picture"}}}, nil
		})
	return serveStatelessUpstream(srv, addr, args, os.Getenv(typedUpstreamLength) != "", os.Getenv(typedUpstreamStream) != "")
}

// serveStatelessUpstream serves srv on addr, stateless, answering
// application/json (whole, with its length, when length is set; an event
// stream when stream is), and /readyz as startManagerProc expects.
func serveStatelessUpstream(srv *sdk.Server, addr string, args []string, length, stream bool) int {
	for _, a := range args {
		if probe, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			go func() {
				_ = http.ListenAndServe(probe, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
			}()
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 1
	}
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: !stream})
	if length {
		h = withLength(h)
	}
	_ = (&http.Server{Handler: h, ReadHeaderTimeout: time.Minute}).Serve(ln)
	return 1
}

// withLength answers what h answers, whole, with its length.
func withLength(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &lengthRecorder{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

type lengthRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (l *lengthRecorder) Header() http.Header         { return l.header }
func (l *lengthRecorder) Write(p []byte) (int, error) { return l.body.Write(p) }
func (l *lengthRecorder) WriteHeader(status int)      { l.status = status }
func (l *lengthRecorder) Flush()                      {}

// BenchmarkGatewayTypedResult measures what a result carrying a 5 MiB
// image costs the gateway, against the image's size: an agent's calls of
// a tool whose stateless go-sdk upstream (a process of its own) returns
// the image and a caption (its answer chunked, as the go-sdk writes it;
// path=gateway-length: an upstream that says its answer's length),
// typedInFlight calls in flight at once, over
// the real HTTP endpoint of a gateway running in this process, stateless
// as the chart runs it, in each era agents speak; and through the go-sdk's
// server (path=sdk: the same calls with a progress token, which the
// gateway's own code leaves to it, ADR 042).
//
// alloc-x is the bytes this process allocated per call (the gateway's,
// and the benchmark's client's, a few KiB: it reads each answer into a
// buffer of its own, reused) over the image's size. peak-x is the highest
// heap in use (runtime/metrics, sampled every 100 µs) above the idle heap
// measured before the calls, per call in flight, over the image's size,
// with the collector at gc: 1 collects when the heap has grown by 1%, so
// that the peak is what the calls hold and not garbage not yet collected;
// 100 is the runtime's default. answer-MiB is the size of the answer as
// the agent reads it, the image in base64 and the rest. The target is
// peak-x ≤ 2 on the gateway's own path, in both eras.
func BenchmarkGatewayTypedResult(b *testing.B) {
	r := startEnvtest(b)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	upAddr, lengthAddr, streamAddr := testproc.FreeAddr(b), testproc.FreeAddr(b), testproc.FreeAddr(b)
	startManagerProc(b, procSpec{what: "the typed upstream", binary: self, kubeconfig: os.DevNull, env: []string{typedUpstreamAddr + "=" + upAddr}})
	startManagerProc(b, procSpec{what: "the typed upstream that says its lengths", binary: self, kubeconfig: os.DevNull,
		env: []string{typedUpstreamAddr + "=" + lengthAddr, typedUpstreamLength + "=1"}})
	startManagerProc(b, procSpec{what: "the typed upstream that answers event streams", binary: self, kubeconfig: os.DevNull,
		env: []string{typedUpstreamAddr + "=" + streamAddr, typedUpstreamStream + "=1"}})
	token := typedNamespace(b, r, "typed", "http://"+upAddr+"/mcp")
	streamToken := typedNamespace(b, r, "typed-stream", "http://"+streamAddr+"/mcp")
	lengthToken := typedNamespace(b, r, "typed-length", "http://"+lengthAddr+"/mcp")
	addr := startStatelessGateway(b, r)
	want := base64.StdEncoding.EncodeToString(typedImage(typedImageBytes))
	local := toolname.LocalName("typed", typedTool)
	run := func(name, token string, sdkPath bool, era string, gc int) {
		b.Run(name, func(b *testing.B) {
			reqs := make([]*typedRequester, typedInFlight)
			for i := range reqs {
				reqs[i] = &typedRequester{url: "http://" + addr + gateway.Path, token: token, era: era, tool: local, sdkPath: sdkPath}
			}
			calls := make([]func() error, len(reqs))
			for i, c := range reqs {
				calls[i] = c.do
			}
			measureCalls(b, calls, func() error { return reqs[0].checkImage(want) }, typedImageBytes, gc)
			b.ReportMetric(float64(reqs[0].buf.Len())/(1<<20), "answer-MiB")
		})
	}
	for _, path := range []string{"gateway", "sdk"} {
		for _, era := range gatewayEras {
			for _, gc := range []int{1, 100} {
				run(fmt.Sprintf("path=%s/era=%s/gc=%d", path, era, gc), token, path == "sdk", era, gc)
			}
		}
	}
	// The same calls of an upstream that says the length of its answer:
	// the gateway reads it into one buffer of that length.
	for _, era := range gatewayEras {
		run(fmt.Sprintf("path=gateway-length/era=%s/gc=1", era), lengthToken, false, era, 1)
	}
	// The same calls of an upstream that answers an event stream.
	for _, era := range gatewayEras {
		run(fmt.Sprintf("path=gateway-stream/era=%s/gc=1", era), streamToken, false, era, 1)
	}
}

// measureCalls warms calls up, checks the first one's answer (check),
// then has them make b.N calls between them, at most one each at a time,
// while the heap is sampled; it reports the bytes allocated per call and
// the peak heap per call in flight, in MiB and over size (the bytes the
// scenario passes through: alloc-x, peak-x).
func measureCalls(b *testing.B, calls []func() error, check func() error, size, gc int) {
	b.Helper()
	var last error
	await(b, time.Minute, "a first call answered", func() bool { last = calls[0](); return last == nil },
		func() string { return fmt.Sprintf("(last: %v)", last) })
	if err := check(); err != nil {
		b.Fatal(err)
	}
	for _, c := range calls {
		for range 2 {
			if err := c(); err != nil {
				b.Fatal(err)
			}
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(gc))
	runtime.GC()
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	inUse := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64()
	}
	idle := inUse()
	allocs0 := samples[2].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		own := make([]metrics.Sample, 2)
		copy(own, samples[:2])
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(own)
			if v := own[0].Value.Uint64() + own[1].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, len(calls))
	for _, c := range calls {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := c(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	metrics.Read(samples)
	allocs := float64(samples[2].Value.Uint64()-allocs0) / float64(b.N)
	held := float64(0)
	if p := peak.Load(); p > idle {
		held = float64(p-idle) / float64(len(calls))
	}
	b.ReportMetric(allocs/float64(size), "alloc-x")
	b.ReportMetric(held/float64(size), "peak-x")
	b.ReportMetric(allocs/(1<<20), "alloc-MiB/call")
	b.ReportMetric(held/(1<<20), "peak-MiB/call")
}

// typedRequester calls the picture tool with plain net/http in one era,
// reading each answer into one reused buffer.
type typedRequester struct {
	url, token, era, tool string
	// sdkPath sends a progress token, which leaves the call to the
	// go-sdk's server.
	sdkPath bool
	hc      http.Client
	buf     bytes.Buffer
}

func (c *typedRequester) body() string {
	args := `"arguments":{"bytes":` + strconv.Itoa(typedImageBytes) + `}`
	meta := ""
	if c.era == eraModern {
		meta = modernMeta
	}
	if c.sdkPath {
		if meta != "" {
			meta += ","
		}
		meta += `"progressToken":"p1"`
	}
	if meta != "" {
		args += `,"_meta":{` + meta + `}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + c.tool + `",` + args + `}}`
}

// do makes the call once and checks the answer's shape: an image, no
// error.
func (c *typedRequester) do() error {
	status, got, err := postCall(&c.hc, &c.buf, c.url, c.token, c.era, c.tool, strings.NewReader(c.body()))
	if err != nil {
		return err
	}
	if status != http.StatusOK || !bytes.Contains(got, []byte(`"type":"image"`)) || bytes.Contains(got, []byte(`"isError":true`)) || len(got) < typedImageBytes {
		return fmt.Errorf("%s: status %d: %.300s", c.era, status, got)
	}
	return nil
}

// checkImage checks that the last answer carries the upstream's image
// byte for byte.
func (c *typedRequester) checkImage(want string) error {
	body := c.buf.Bytes()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 && body[0] != '{' {
		body, _, _ = bytes.Cut(body[i+len("data: "):], []byte("\n"))
	}
	var msg struct {
		Result struct {
			Content []struct {
				Type, Data string
			}
		}
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return err
	}
	if len(msg.Result.Content) != 2 || msg.Result.Content[0].Type != "image" || msg.Result.Content[0].Data != want {
		return fmt.Errorf("%s: the image did not arrive byte for byte", c.era)
	}
	return nil
}

// typedNamespace creates namespace ns with the McpServer typed at url, an
// agent allowed to call it, and its picture tool, enabled, approved, Ready
// and bounded at 6 MiB of what is not text. It returns the agent's token.
func typedNamespace(b *testing.B, r *envtestRun, ns, url string) string {
	b.Helper()
	ctx := context.Background()
	r.namespace(b, ns)
	srv := mcpServer(ns, "typed", url, time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	if err := createTool(ctx, r.c, ns, "typed", typedTool, []byte(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`), true); err != nil {
		b.Fatal(err)
	}
	name, err := toolname.ObjectName("typed", typedTool)
	if err != nil {
		b.Fatal(err)
	}
	t := &mcpv1alpha1.McpTool{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, t); err != nil {
		b.Fatal(err)
	}
	t.Spec.MaxContentBytes = ptr.To(int64(6 << 20))
	if err := r.c.Update(ctx, t); err != nil {
		b.Fatal(err)
	}
	// Ready for the generation the bound made.
	for i := range t.Status.Conditions {
		t.Status.Conditions[i].ObservedGeneration = t.Generation
	}
	if err := r.c.Status().Update(ctx, t); err != nil {
		b.Fatal(err)
	}
	return agentToken(b, r, ns)
}

// postCall posts body, a tools/call of tool in era, to url as the agent of
// token, as the go-sdk's and the TypeScript SDK's clients send it, and
// reads the answer into buf: its status and bytes.
func postCall(hc *http.Client, buf *bytes.Buffer, url, token, era, tool string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return 0, nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", era)
	h.Set("Authorization", "Bearer "+token)
	if era == eraModern {
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", tool)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, buf.Bytes(), nil
}
