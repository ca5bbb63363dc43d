package bench

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/mcp-catalog/operator/test/testproc"
)

// The gateway scenario runs the gateway as the chart deploys it: the
// manager binary with --components=gateway, a process of its own on CPUs
// of its own. The agents and the upstream server stay in this process on
// the other CPUs, in the direct runs and the gateway runs alike, so the
// direct runs measure what the agents' CPUs can drive, and the gateway
// runs whether the gateway, given its own CPU, keeps up with that.

// cpuSplit divides the CPUs this process may use into two halves: the
// first for this process (agents and upstream), the second for the
// gateway. It skips the benchmark on a machine with one CPU, or without
// taskset to start the gateway on its half.
func cpuSplit(b *testing.B) (own, gateway []int) {
	b.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		b.Fatalf("reading this process's CPU affinity: %v", err)
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		b.Skip("the gateway scenario needs two CPUs: one for the agents and the upstream, one for the gateway")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Skip("the gateway scenario starts the gateway on its CPUs with taskset (util-linux), which is not installed")
	}
	half := len(cpus) / 2
	return cpus[:half], cpus[half:]
}

// pinSelf binds every thread of this process to cpus (threads started
// later inherit the binding from the thread that starts them) and sets
// GOMAXPROCS to match. The returned function undoes both.
func pinSelf(b *testing.B, cpus []int) func() {
	b.Helper()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		b.Fatal(err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	apply := func(s *unix.CPUSet) error {
		// Twice: a thread started by a not yet bound thread while the
		// first pass runs is bound by the second.
		for range 2 {
			tasks, err := os.ReadDir("/proc/self/task")
			if err != nil {
				return err
			}
			for _, t := range tasks {
				tid, err := strconv.Atoi(t.Name())
				if err != nil {
					continue
				}
				if err := unix.SchedSetaffinity(tid, s); err != nil && !errors.Is(err, unix.ESRCH) {
					return fmt.Errorf("binding thread %d: %w", tid, err)
				}
			}
		}
		return nil
	}
	if err := apply(&set); err != nil {
		b.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(len(cpus))
	return func() {
		runtime.GOMAXPROCS(prev)
		if err := apply(&old); err != nil {
			b.Errorf("restoring the CPU affinity: %v", err)
		}
	}
}

// cpuOfSelf is the CPU time this process has used.
func cpuOfSelf(b *testing.B) time.Duration {
	b.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ),
// 100 on Linux on every architecture Go supports.
const clockTicks = 100

// cpuOfPID is the CPU time (user and system) process pid has used, from
// /proc/PID/stat, in steps of 10 ms.
func cpuOfPID(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from after its closing parenthesis, where field 3
	// begins; utime and stime are fields 14 and 15.
	end := bytes.LastIndexByte(raw, ')')
	fields := strings.Fields(string(raw[end+1:]))
	if len(fields) < 13 {
		b.Fatalf("/proc/%d/stat has %d fields after the command", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// chartGatewayGOGC is the GOGC the chart sets for the gateway
// (gateway.gcPercent in its values.yaml); BENCH_GATEWAY_GOGC overrides it
// to compare settings. Empty means the chart leaves the default.
func chartGatewayGOGC(b *testing.B) string {
	b.Helper()
	if v := os.Getenv("BENCH_GATEWAY_GOGC"); v != "" {
		return v
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "mcp-catalog-operator", "values.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var values struct {
		Gateway struct {
			GCPercent *int `json:"gcPercent"`
		} `json:"gateway"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		b.Fatalf("the chart's values.yaml: %v", err)
	}
	if values.Gateway.GCPercent == nil {
		return ""
	}
	return strconv.Itoa(*values.Gateway.GCPercent)
}

// buildManager builds the manager binary from this tree.
func buildManager(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "manager")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/manager")
	cmd.Dir = filepath.Join("..", "..")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/manager: %v\n%s", err, msg)
	}
	return out
}

// managerProc is one process of the manager binary.
type managerProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// procSpec says how to run the manager binary.
type procSpec struct {
	what       string // names the process in messages, e.g. "the gateway"
	binary     string
	kubeconfig string
	args       []string // flags beyond --kubeconfig and --health-probe-bind-address
	env        []string // KEY=VALUE set over this process's environment
	cpus       []int    // CPUs to bind it to with taskset; nil leaves it unbound
	stdout     *os.File // nil: standard output goes to the log
	afterExit  func()   // run once the process has ended, before done closes
}

// startManagerProc runs the manager binary as its own process, logging to
// a file, killed with this process and stopped when the benchmark ends. It
// returns once the process answers /readyz.
func startManagerProc(b *testing.B, s procSpec) *managerProc {
	b.Helper()
	m := &managerProc{log: filepath.Join(b.TempDir(), "manager.log"), done: make(chan struct{})}
	probe := testproc.FreeAddr(b)
	args := append([]string{"--kubeconfig=" + s.kubeconfig, "--health-probe-bind-address=" + probe}, s.args...)
	if len(s.cpus) > 0 {
		args = append([]string{"-c", cpuList(s.cpus), s.binary}, args...)
		m.cmd = exec.Command("taskset", args...)
	} else {
		m.cmd = exec.Command(s.binary, args...)
	}
	// The process uses the kubeconfig it is given, never one of the
	// environment.
	m.cmd.Env = testproc.WithoutEnv(os.Environ(), "KUBECONFIG")
	for _, kv := range s.env {
		k, _, _ := strings.Cut(kv, "=")
		m.cmd.Env = append(testproc.WithoutEnv(m.cmd.Env, k), kv)
	}
	logFile, err := os.Create(m.log)
	if err != nil {
		b.Fatal(err)
	}
	m.cmd.Stderr = logFile
	m.cmd.Stdout = logFile
	if s.stdout != nil {
		m.cmd.Stdout = s.stdout
	}
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		b.Fatalf("starting %s: %v", s.what, err)
	}
	go func() {
		_ = m.cmd.Wait()
		_ = logFile.Close()
		if s.afterExit != nil {
			s.afterExit()
		}
		close(m.done)
	}()
	b.Cleanup(func() {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(15 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
	hc := &http.Client{Timeout: 2 * time.Second}
	await(b, time.Minute, s.what+" process ready", func() bool {
		select {
		case <-m.done:
			b.Fatalf("%s exited: %v\n%s", s.what, m.cmd.ProcessState, readTail(m.log))
		default:
		}
		resp, err := hc.Get("http://" + probe + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return readTail(m.log) })
	return m
}

// drainStdout makes the process's standard output a pipe that cat drains
// on the process's CPUs: a node's container runtime reads it off the
// agents' CPUs, and what shipping the log costs is the process's to pay
// here. The caller calls what it returns once the process has started.
func drainStdout(b *testing.B, s *procSpec) (started func()) {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	drain := exec.Command("taskset", "-c", cpuList(s.cpus), "cat")
	drain.Stdin = r // and standard output, nil, is /dev/null
	drain.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := drain.Start(); err != nil {
		b.Fatalf("starting the drain of %s's standard output: %v", s.what, err)
	}
	_ = r.Close() // cat holds its own copy
	s.stdout = w
	s.afterExit = func() { _ = drain.Wait() } // cat ends at the end of the pipe
	return func() { _ = w.Close() }           // the process holds its own copy
}

func cpuList(cpus []int) string {
	list := make([]string, len(cpus))
	for i, c := range cpus {
		list[i] = strconv.Itoa(c)
	}
	return strings.Join(list, ",")
}

// gatewayProc is one gateway process.
type gatewayProc struct {
	*managerProc
	addr string
	// pprof is the address its profiles are served on, if they are.
	pprof string
}

// gatewaySetup says how to run a gateway process.
type gatewaySetup struct {
	binary, kubeconfig string
	// auditFile is where it audits: "-" is standard output, drained on
	// the gateway's CPUs as a container runtime would drain it.
	auditFile string
	// gogc is the GOGC it runs with; empty leaves the runtime's default.
	gogc string
	cpus []int
	// chartBudgets keeps the budgets the chart deploys (the flags'
	// defaults); otherwise they are raised so that they are checked on
	// every request but never met, for one ServiceAccount that drives a
	// whole load (docs/adr/025-gateway-budgets.md).
	chartBudgets bool
	// pprof serves its profiles on a loopback port (gatewayProc.pprof).
	pprof bool
	// args are further flags, after (and so over) the ones above.
	args []string
}

// startGateway runs the manager binary as a gateway only, bound to cpus,
// stateless, with the GOGC the chart gives it and GOMEMLIMIT from its
// memory limit, auditing to auditFile ("-" is standard output, drained on
// the gateway's CPUs). It returns once the gateway answers /readyz.
func startGateway(b *testing.B, binary, kubeconfig, auditFile, gogc string, cpus []int) *gatewayProc {
	b.Helper()
	return startGatewayWith(b, gatewaySetup{binary: binary, kubeconfig: kubeconfig, auditFile: auditFile, gogc: gogc, cpus: cpus})
}

// startGatewayWith runs a gateway process as g says.
func startGatewayWith(b *testing.B, g gatewaySetup) *gatewayProc {
	b.Helper()
	addr := testproc.FreeAddr(b)
	s := procSpec{what: "the gateway", binary: g.binary, kubeconfig: g.kubeconfig, cpus: g.cpus, args: []string{
		"--components=gateway",
		"--gateway-bind-address=" + addr, "--gateway-insecure", "--gateway-stateless",
		"--gateway-audit-file=" + g.auditFile,
		"--metrics-bind-address=0",
		"--allow-private-networks",
	}}
	if !g.chartBudgets {
		s.args = append(s.args,
			"--gateway-serviceaccount-rate=1e6", "--gateway-serviceaccount-burst=1000000", "--gateway-serviceaccount-concurrency=100000",
			"--gateway-namespace-rate=1e6", "--gateway-namespace-burst=1000000", "--gateway-namespace-concurrency=100000",
		)
	}
	// BENCH_GATEWAY_PPROF=1 serves the gateway's profiles on a port named
	// on standard error, to profile it while the benchmark runs.
	var pprof string
	if g.pprof || os.Getenv("BENCH_GATEWAY_PPROF") != "" {
		pprof = testproc.FreeAddr(b)
		s.args = append(s.args, "--pprof-bind-address="+pprof)
		fmt.Fprintf(os.Stderr, "gateway (audit %s): profiles on http://%s/debug/pprof/\n", g.auditFile, pprof)
	}
	s.args = append(s.args, g.args...)
	if g.gogc != "" {
		s.env = append(s.env, "GOGC="+g.gogc)
	}
	if limit := chartGatewayMemoryLimit(b); limit != "" {
		s.env = append(s.env, "GOMEMLIMIT="+limit)
	}
	if g.auditFile == "-" {
		defer drainStdout(b, &s)()
	}
	return &gatewayProc{managerProc: startManagerProc(b, s), addr: addr, pprof: pprof}
}

// chartGatewayMemoryLimit is the GOMEMLIMIT the chart gives the gateway:
// its container's memory limit (gateway.resources.limits.memory) in bytes;
// empty if the chart sets none.
func chartGatewayMemoryLimit(b *testing.B) string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "mcp-catalog-operator", "values.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var values struct {
		Gateway struct {
			Resources struct {
				Limits map[string]string `json:"limits"`
			} `json:"resources"`
		} `json:"gateway"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		b.Fatalf("the chart's values.yaml: %v", err)
	}
	v := values.Gateway.Resources.Limits["memory"]
	if v == "" {
		return ""
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		b.Fatalf("the chart's gateway.resources.limits.memory %q: %v", v, err)
	}
	return strconv.FormatInt(q.Value(), 10)
}

// cpu is the CPU time the gateway process has used.
func (g *gatewayProc) cpu(b *testing.B) time.Duration {
	b.Helper()
	return cpuOfPID(b, g.cmd.Process.Pid)
}

// readTail is the end of a log file, for a failure message.
func readTail(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}
