package bench

import (
	"bytes"
	"io"
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
//
// The audited bare proxy is the same process writing two audit records to
// standard output per call, as the gateway does when it audits there (the
// chart's default): one before it forwards the request, one once it has
// read the upstream's answer and before it answers. The records are the
// bytes the gateway wrote for a call of the same benchmark, one write each.
// What it adds is the least any proxy of Go's HTTP stack that keeps the
// gateway's audit contract (no record, no call; no answer before its
// outcome is recorded) adds on this machine.
const (
	bareProxyUpstream = "BENCH_BARE_PROXY_UPSTREAM"
	bareProxyAddr     = "BENCH_BARE_PROXY_ADDR"
	// bareProxyAudit names a file of two lines, the records to write
	// before and after each call; unset, nothing is written.
	bareProxyAudit = "BENCH_BARE_PROXY_AUDIT"
)

func TestMain(m *testing.M) {
	if up := os.Getenv(bareProxyUpstream); up != "" {
		os.Exit(runBareProxy(up, os.Getenv(bareProxyAddr), os.Getenv(bareProxyAudit), os.Args[1:]))
	}
	if addr := os.Getenv(upstreamAddr); addr != "" {
		os.Exit(runUpstream(addr, os.Args[1:]))
	}
	if addr := os.Getenv(typedUpstreamAddr); addr != "" {
		os.Exit(runTypedUpstream(addr, os.Args[1:]))
	}
	if addr := os.Getenv(argsUpstreamAddr); addr != "" {
		os.Exit(runArgsUpstream(addr, os.Args[1:]))
	}
	if addr := os.Getenv(soakUpstreamAddr); addr != "" {
		os.Exit(runSoakUpstream(addr, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runBareProxy serves addr, forwarding to upstream and writing the records
// of the auditFile (if set) around each call, and answers /readyz on the
// address of the --health-probe-bind-address argument, as the manager
// binary does, so that startManagerProc can run it.
func runBareProxy(upstream, addr, auditFile string, args []string) int {
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
	var handler http.Handler = rp
	if auditFile != "" {
		raw, err := os.ReadFile(auditFile)
		end := bytes.IndexByte(raw, '\n') + 1 // of the first line, its newline kept
		if err != nil || end <= 1 || end == len(raw) {
			return 2
		}
		before, after := raw[:end], raw[end:]
		// A record is written before its call is sent, and the outcome's
		// before the answer: the whole answer is read first, as the
		// gateway reads it, so that nothing of it reaches the agent
		// before the record.
		rp.ModifyResponse = func(resp *http.Response) error {
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			_, err = os.Stdout.Write(after)
			return err
		}
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := os.Stdout.Write(before); err != nil {
				http.Error(w, "audit", http.StatusServiceUnavailable)
				return
			}
			rp.ServeHTTP(w, r)
		})
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
	_ = (&http.Server{Handler: handler, ReadHeaderTimeout: time.Minute}).Serve(ln)
	return 1
}

// startBareProxy runs the bare proxy to upstream on cpus with the
// gateway's GOGC; with auditFile set, the audited bare proxy, its standard
// output drained as the gateway's is. The agents call it at the upstream's
// path.
func startBareProxy(b *testing.B, upstream, gogc, auditFile string, cpus []int) *gatewayProc {
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
	if auditFile != "" {
		s.what = "the audited bare proxy"
		s.env = append(s.env, bareProxyAudit+"="+auditFile)
		defer drainStdout(b, &s)()
	}
	return &gatewayProc{managerProc: startManagerProc(b, s), addr: addr}
}
