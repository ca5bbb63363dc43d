package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/utils/ptr"

	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/testproc"
)

// argsUpstreamAddr, set, makes this test binary the upstream of the
// large-arguments scenario (TestMain): a stateless go-sdk server whose
// tool take answers, small, the hash and length of the text it was given.
const argsUpstreamAddr = "BENCH_ARGS_UPSTREAM_ADDR"

// argsBytes is the size of the arguments the scenario's calls carry, as
// the request carries them (the object holding the one string, encoded):
// 900 KiB, under the gateway's default bound on a request's body
// (gateway.DefaultMaxRequestBytes, 1 MiB) with room for the rest of the
// request.
const argsBytes = 900 << 10

const argsTool = "take"

const argsSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// argsReceipt is what the take tool answers for text: its hash and length.
func argsReceipt(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:]) + " " + strconv.Itoa(len(text))
}

// runArgsUpstream serves the take tool on addr, answering
// application/json, and /readyz as startManagerProc expects.
func runArgsUpstream(addr string, args []string) int {
	srv := sdk.NewServer(&sdk.Implementation{Name: "args", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: argsTool, InputSchema: json.RawMessage(argsSchema)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: argsReceipt(a.Text)}}}, nil
		})
	return serveStatelessUpstream(srv, addr, args, false, false)
}

// argsKinds are the arguments the scenario's calls carry: plain, a
// string of printable ASCII that JSON writes as it is; escaped, the text
// of a source file (lines, tabs, quotes, backslashes), which JSON escapes
// (encoding/json's escapes, as the clients write them); unsorted, the
// same text followed by a second, short member whose name sorts before
// it, as a client that keeps the order it wrote its members in (the
// TypeScript SDK's) sends them. The gateway passes the first two on as
// they came (their bytes are what encoding/json writes of them) and
// decodes and encodes the third again (internal/gateway/arguments.go).
var argsKinds = []string{"plain", "escaped", "unsorted"}

// argsTail is the unsorted kind's second member.
const argsTail = `,"mode":"write"`

// argsEncoded is the arguments of the kind named, encoded as the clients
// send them, and their text.
func argsEncoded(kind string) ([]byte, string, error) {
	text := argsText(kind)
	args, err := json.Marshal(map[string]string{"text": text})
	if err != nil || kind != "unsorted" {
		return args, text, err
	}
	return append(args[:len(args)-1:len(args)-1], argsTail+"}"...), text, nil
}

// argsText is the text of one call's arguments, of the kind named, whose
// arguments object encodes to about argsBytes. None holds <, > or &,
// which the go-sdk's client escapes and the TypeScript SDK's does not:
// both clients encode them the same.
func argsText(kind string) string {
	room := argsBytes - len(`{"text":""}`)
	if kind == "unsorted" {
		room -= len(argsTail)
	}
	r := rand.New(rand.NewPCG(uint64(len(kind)), 7))
	if kind == "plain" {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-_()[]{}=+*/!?#%"
		b := make([]byte, room)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	var sb bytes.Buffer
	for i := 0; ; i++ {
		line := fmt.Sprintf("\tfmt.Printf(\"line %d: %%s\\n\", values[%d])\n", i, r.IntN(1000))
		enc, _ := json.Marshal(line)
		if room -= len(enc) - 2; room < 0 {
			break
		}
		sb.WriteString(line)
	}
	return sb.String()
}

// BenchmarkGatewayLargeArguments measures what a call carrying large
// arguments costs the gateway, against their size: an agent's calls of a
// tool whose stateless go-sdk upstream (a process of its own) answers
// small, the hash and length of the one string of about 900 KiB the
// arguments carry (argsBytes), typedInFlight calls in flight at once, over
// the real HTTP endpoint of a gateway running in this process, stateless
// as the chart runs it, with plain requests of the shape the go-sdk's and
// the TypeScript SDK's clients send, in each era agents speak: the
// gateway's own path (its front door, internal/gateway/wire.go and
// callfast.go), with each of argsKinds.
//
// Every call checks that the upstream received the string byte for byte
// (its hash, answered back), and fails the benchmark if not. alloc-x and
// peak-x are measureCalls', over argsBytes: the bytes this process
// allocated per call (the gateway's, and the benchmark's client's, a few
// KiB: it sends one body it built once and reads each small answer into a
// buffer of its own), and the highest heap in use above the idle heap per
// call in flight, at GOGC 1 and 100.
func BenchmarkGatewayLargeArguments(b *testing.B) {
	r := startEnvtest(b)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	upAddr := testproc.FreeAddr(b)
	startManagerProc(b, procSpec{what: "the arguments' upstream", binary: self, kubeconfig: os.DevNull, env: []string{argsUpstreamAddr + "=" + upAddr}})
	token := argsNamespace(b, r, "args", "http://"+upAddr+"/mcp")
	addr := startStatelessGateway(b, r)
	local := toolname.LocalName("args", argsTool)
	for _, kind := range argsKinds {
		args, text, err := argsEncoded(kind)
		if err != nil {
			b.Fatal(err)
		}
		if len(args) > argsBytes || len(args) < argsBytes-200 {
			b.Fatalf("the %s arguments are %d bytes, not about %d", kind, len(args), argsBytes)
		}
		receipt := argsReceipt(text)
		for _, era := range gatewayEras {
			for _, gc := range []int{1, 100} {
				b.Run(fmt.Sprintf("args=%s/era=%s/gc=%d", kind, era, gc), func(b *testing.B) {
					body := argsBody(local, era, args)
					if len(body) >= gateway.DefaultMaxRequestBytes {
						b.Fatalf("the request is %d bytes, over the gateway's default bound", len(body))
					}
					calls := make([]func() error, typedInFlight)
					for i := range calls {
						c := &argsRequester{url: "http://" + addr + gateway.Path, token: token, era: era, tool: local, body: body, receipt: receipt}
						calls[i] = c.do
					}
					// Every call checks the receipt; the first is checked
					// before any is measured.
					measureCalls(b, calls, func() error { return nil }, len(args), gc)
					b.ReportMetric(float64(len(args))/1024, "args-KiB")
					b.ReportMetric(float64(len(text))/1024, "string-KiB")
					b.ReportMetric(1, "received-intact")
				})
			}
		}
	}
}

// argsBody is a tools/call of tool with args (an encoded object), as the
// clients of era send it: in 2026-07-28 with the revision's _meta.
func argsBody(tool, era string, args []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":`)
	b.Write(args)
	if era == eraModern {
		b.WriteString(`,"_meta":{` + modernMeta + `}`)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// argsRequester calls the take tool with plain net/http in one era,
// sending the same body each time and reading each answer into one
// reused buffer.
type argsRequester struct {
	url, token, era, tool string
	body                  []byte
	// receipt is what the upstream answers when it received the string
	// byte for byte.
	receipt string
	hc      http.Client
	buf     bytes.Buffer
}

// do makes the call once and checks its answer: a result, not an error,
// holding the receipt of the string sent.
func (c *argsRequester) do() error {
	status, got, err := postCall(&c.hc, &c.buf, c.url, c.token, c.era, c.tool, bytes.NewReader(c.body))
	if err != nil {
		return err
	}
	if status != http.StatusOK || bytes.Contains(got, []byte(`"isError":true`)) {
		return fmt.Errorf("%s: status %d: %.300s", c.era, status, got)
	}
	if !bytes.Contains(got, []byte(`"`+c.receipt+`"`)) {
		return fmt.Errorf("%s: the upstream did not receive the arguments byte for byte: %.300s", c.era, got)
	}
	return nil
}

// argsNamespace creates namespace ns with the McpServer args at url, an
// agent allowed to call it, and its take tool, enabled, approved and
// Ready. It returns the agent's token.
func argsNamespace(b *testing.B, r *envtestRun, ns, url string) string {
	b.Helper()
	r.namespace(b, ns)
	srv := mcpServer(ns, "args", url, time.Hour)
	srv.Spec.ApprovalRequired = ptr.To(false)
	createAgent(b, r, srv)
	if err := createTool(context.Background(), r.c, ns, "args", argsTool, []byte(argsSchema), true); err != nil {
		b.Fatal(err)
	}
	return agentToken(b, r, ns)
}
