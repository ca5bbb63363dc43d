package bench

import (
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testproc"
)

// upstreamAddr, set, makes this test binary the upstream MCP server of a
// scenario that measures its own process's allocations (TestMain): the
// in-process stateless go-sdk server that the other gateway scenarios run,
// in a process of its own, so that what it allocates to answer a call is
// not counted as the gateway's.
const upstreamAddr = "BENCH_UPSTREAM_ADDR"

// runUpstream serves a stateless go-sdk server with application/json
// answers on addr, and answers /readyz on the address of the
// --health-probe-bind-address argument, as the manager binary does, so
// that startManagerProc can run it.
func runUpstream(addr string, args []string) int {
	s, err := mcpserver.New(mcpserver.Options{Stateless: true, JSONResponse: true})
	if err != nil {
		return 2
	}
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
	_ = (&http.Server{Handler: s.Handler(), ReadHeaderTimeout: time.Minute}).Serve(ln)
	return 1
}

// startUpstream runs the upstream server as a process of its own and
// returns its MCP endpoint's URL.
func startUpstream(b *testing.B) string {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	addr := testproc.FreeAddr(b)
	startManagerProc(b, procSpec{what: "the upstream server", binary: self, kubeconfig: os.DevNull, env: []string{upstreamAddr + "=" + addr}})
	return "http://" + addr + mcpserver.Path
}
