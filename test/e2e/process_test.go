package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/test/testproc"
)

// binaries are the real commands, built from this tree.
type binaries struct {
	manager, kubectlMCP string
}

// startBuild builds the manager and the kubectl plugin into dir in the
// background (one go build for both, so they share the work) and returns a
// function that waits for it. The build is cancelled and waited for at
// cleanup, so a failing test leaves no go build behind.
func startBuild(t *testing.T, dir string) func() binaries {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/manager", "./cmd/kubectl-mcp")
	cmd.Dir = repoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting go build: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	var result error
	waited := false
	wait := func() error {
		if !waited {
			result, waited = <-done, true
		}
		return result
	}
	t.Cleanup(func() {
		cancel()
		_ = wait()
	})
	return func() binaries {
		t.Helper()
		if err := wait(); err != nil {
			t.Fatalf("go build ./cmd/manager ./cmd/kubectl-mcp: %v\n%s", err, out.String())
		}
		t.Logf("built the manager and kubectl-mcp in %s", time.Since(start).Round(time.Second))
		return binaries{manager: filepath.Join(dir, "manager"), kubectlMCP: filepath.Join(dir, "kubectl-mcp")}
	}
}

// managerProc is one run of the manager binary.
type managerProc struct {
	cmd                     *exec.Cmd
	logPath                 string
	metrics, probe, gateway string
	done                    chan struct{}
	killed                  bool
}

// managerConfig is what every run of the manager shares.
type managerConfig struct {
	binary     string
	kubeconfig string
	auditLog   string
	dir        string
}

// startManager runs the manager binary as a separate process with the
// chart's ServiceAccount's kubeconfig. Its standard output and error go to
// a file of its own, which the test searches afterwards.
// t's cleanups must outlive the step that starts the manager: see
// suite.outlive.
func startManager(t testing.TB, mc managerConfig, run int) *managerProc {
	t.Helper()
	m := &managerProc{
		logPath: filepath.Join(mc.dir, fmt.Sprintf("manager-%d.log", run)),
		metrics: testproc.FreeAddr(t), probe: testproc.FreeAddr(t), gateway: testproc.FreeAddr(t),
		done: make(chan struct{}),
	}
	f, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(mc.binary,
		"--kubeconfig="+mc.kubeconfig,
		// The lease lives in the release namespace: running out of a pod,
		// the manager cannot find its own namespace, and the chart's
		// leader-election Role is granted there only.
		"--leader-elect", "--leader-election-namespace="+releaseNS,
		// Secure metrics (HTTPS, TokenReview, SubjectAccessReview) are the
		// default; the flag is not given so the default is what is tested.
		"--metrics-bind-address="+m.metrics,
		"--health-probe-bind-address="+m.probe,
		"--allow-private-networks",
		"--gateway-bind-address="+m.gateway, "--gateway-insecure",
		"--gateway-audit-log="+mc.auditLog,
		// Debug logs give the leak check the most text to search.
		"--zap-log-level=debug",
	)
	m.start(t, "the manager", f)
	return m
}

// start runs m.cmd with its output to log, and kills it when the test ends.
func (m *managerProc) start(t testing.TB, what string, log *os.File) {
	t.Helper()
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// The manager must use the kubeconfig it is given, never one of the
	// environment (which might be an administrator's).
	m.cmd.Env = testproc.WithoutEnv(os.Environ(), "KUBECONFIG")
	setParentDeathSignal(m.cmd)
	if err := m.cmd.Start(); err != nil {
		_ = log.Close()
		t.Fatalf("starting %s: %v", what, err)
	}
	go func() {
		_ = m.cmd.Wait()
		_ = log.Close()
		close(m.done)
	}()
	t.Cleanup(m.kill)
}

// kill ends the process with SIGKILL, as a node failure or an OOM kill
// would, and waits for it.
func (m *managerProc) kill() {
	select {
	case <-m.done:
		return
	default:
	}
	m.killed = true
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// alive returns an error when the process exited without the test killing
// it; waits use it to stop at once instead of timing out.
func (m *managerProc) alive() error {
	select {
	case <-m.done:
		if m.killed {
			return nil
		}
		return fmt.Errorf("the manager exited (%v); its log ends with:\n%s", m.cmd.ProcessState, tail(m.logPath, 30))
	default:
		return nil
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitHealthy waits for /readyz and for the gateway's listener.
func (m *managerProc) waitHealthy(t *testing.T) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	eventually(t, 60*time.Second, "the manager's /readyz", m.alive, func() error {
		resp, err := hc.Get("http://" + m.probe + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the gateway listening", m.alive, func() error {
		c, err := net.DialTimeout("tcp", m.gateway, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// cliResult is one run of kubectl-mcp.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs the kubectl plugin with a kubeconfig and returns its output
// and exit code.
func runCLI(t *testing.T, bin, kubeconfig string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig="+kubeconfig)...)
	cmd.Env = testproc.WithoutEnv(os.Environ(), "KUBECONFIG")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		t.Fatalf("running kubectl-mcp %s: %v", strings.Join(args, " "), err)
	}
	return res
}
