package bench

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/test/testproc"
)

// The bare proxy is the gateway scenario's floor for one hop: a process
// laid out as the gateway is (its CPUs, the chart's GOGC) that forwards
// every request to the upstream with net/http's reverse proxy and decides,
// audits and parses nothing. What it adds to a call is what any proxy of
// Go's HTTP stack adds on this machine; the gateway's added latency above
// it is the gateway's own work. It is this test binary run again with
// bareProxyUpstream set (TestMain), so that no other binary is built.
const (
	bareProxyUpstream = "BENCH_BARE_PROXY_UPSTREAM"
	bareProxyAddr     = "BENCH_BARE_PROXY_ADDR"
)

func TestMain(m *testing.M) {
	if up := os.Getenv(bareProxyUpstream); up != "" {
		os.Exit(runBareProxy(up, os.Getenv(bareProxyAddr), os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runBareProxy serves addr, forwarding to upstream, and answers /readyz on
// the address of the --health-probe-bind-address argument, as the manager
// binary does, so that startManagerProc can run it.
func runBareProxy(upstream, addr string, args []string) int {
	target, err := url.Parse(upstream)
	if err != nil {
		return 2
	}
	target.Path = ""
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		// The gateway's upstream client keeps as many idle connections.
		Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
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
	_ = (&http.Server{Handler: rp, ReadHeaderTimeout: time.Minute}).Serve(ln)
	return 1
}

// startBareProxy runs the bare proxy to upstream on cpus with the
// gateway's GOGC. The agents call it at the upstream's path.
func startBareProxy(b *testing.B, upstream, gogc string, cpus []int) *gatewayProc {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	addr := testproc.FreeAddr(b)
	s := procSpec{what: "the bare proxy", binary: self, kubeconfig: os.DevNull, cpus: cpus,
		env: []string{bareProxyUpstream + "=" + upstream, bareProxyAddr + "=" + addr}}
	if gogc != "" {
		s.env = append(s.env, "GOGC="+gogc)
	}
	return &gatewayProc{managerProc: startManagerProc(b, s), addr: addr}
}
