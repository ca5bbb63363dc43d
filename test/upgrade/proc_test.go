package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testproc"
)

// proc is one run of a manager binary standing in for a container of a
// Deployment the chart installed: there is no kubelet, so the test runs
// the container's command itself.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	probe   string
	metrics string
	gateway string
	done    chan struct{}
	stopped bool
}

// container returns the Deployment in the release namespace that runs a
// container of this name, and the container.
func container(t *testing.T, c client.Client, name string) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	var deps appsv1.DeploymentList
	if err := c.List(context.Background(), &deps, client.InNamespace(releaseNS)); err != nil {
		t.Fatal(err)
	}
	for i := range deps.Items {
		for _, ct := range deps.Items[i].Spec.Template.Spec.Containers {
			if ct.Name == name {
				return &deps.Items[i], ct
			}
		}
	}
	t.Fatalf("the release has no Deployment with a container %q", name)
	return nil, corev1.Container{}
}

// runContainer runs binary with the arguments of the installed
// Deployment's container, as its pod would, authenticated as the pod's
// ServiceAccount with a TokenRequest token. Only what a process outside a
// pod must differ in is appended (the Go flag package takes a flag's last
// value): the kubeconfig, the lease's namespace (a pod finds its own),
// loopback ports, no metrics server, and for a gateway plain HTTP in
// place of the mounted TLS Secret.
func runContainer(t *testing.T, c client.Client, cs kubernetes.Interface, cfg *rest.Config, binary, containerName, run, dir string) *proc {
	t.Helper()
	dep, ct := container(t, c, containerName)
	if len(ct.Command) > 0 {
		t.Fatalf("Deployment %s's container %s has a command %v: the test runs the manager binary with its args only", dep.Name, ct.Name, ct.Command)
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName
	kubeconfig := filepath.Join(dir, run+".kubeconfig")
	testproc.WriteKubeconfig(t, kubeconfig, cfg, token(t, cs, releaseNS, sa))
	p := &proc{name: run, logPath: filepath.Join(dir, run+".log"), probe: testproc.FreeAddr(t), metrics: testproc.FreeAddr(t), done: make(chan struct{})}
	args := append([]string(nil), ct.Args...)
	args = append(args,
		"--kubeconfig="+kubeconfig,
		"--leader-election-namespace="+releaseNS,
		// Plain HTTP, for the test to read the reconcile counts.
		"--metrics-bind-address="+p.metrics, "--metrics-secure=false",
		"--health-probe-bind-address="+p.probe,
	)
	if containerName == "gateway" {
		p.gateway = testproc.FreeAddr(t)
		args = append(args, "--gateway-bind-address="+p.gateway, "--gateway-insecure", "--gateway-cert-dir=",
			"--gateway-audit-log="+filepath.Join(dir, run+"-audit.jsonl"))
	} else {
		// v0.1.0's one Deployment also served the gateway; this run is
		// its controllers only.
		args = append(args, "--gateway-bind-address=")
	}
	f, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = testproc.WithoutEnv(os.Environ(), "KUBECONFIG")
	for _, e := range ct.Env {
		if e.ValueFrom == nil {
			p.cmd.Env = append(p.cmd.Env, e.Name+"="+e.Value)
		}
	}
	setParentDeathSignal(p.cmd)
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatalf("starting %s: %v", run, err)
	}
	go func() {
		_ = p.cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	p.waitReady(t)
	t.Logf("%s runs Deployment %s's container %s as ServiceAccount %s", run, dep.Name, ct.Name, sa)
	return p
}

// token returns a ServiceAccount token from the TokenRequest API, as the
// kubelet projects one into a pod. No audience means the API server's.
func token(t *testing.T, cs kubernetes.Interface, ns, name string, audiences ...string) string {
	t.Helper()
	tok, err := requestToken(cs, ns, name, audiences...)
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", ns, name, err)
	}
	return tok
}

// alive returns an error once the process exited without the test
// stopping it, so that waits end at once with its log.
func (p *proc) alive() error {
	select {
	case <-p.done:
		if p.stopped {
			return nil
		}
		return fmt.Errorf("%s exited (%v); its log ends with:\n%s", p.name, p.cmd.ProcessState, tail(p.logPath, 30))
	default:
		return nil
	}
}

// waitReady waits for /readyz.
func (p *proc) waitReady(t *testing.T) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	poll.Until(t, 2*time.Minute, p.name+"'s /readyz", func() error {
		if err := p.alive(); err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get("http://" + p.probe + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		return nil
	})
}

// reconciles returns how many reconciles of a controller ended without an
// error (whether they asked to be run again later or not), from
// controller-runtime's own metric.
func (p *proc) reconciles(controller string) (int, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	prefix := `controller_runtime_reconcile_total{controller="` + controller + `",result="`
	total, found := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		result, value, _ := strings.Cut(rest, `"} `)
		found = true
		if result == "error" {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", line, err)
		}
		total += int(n)
	}
	if !found {
		return 0, fmt.Errorf("no controller_runtime_reconcile_total of controller %q in /metrics (HTTP %d)", controller, resp.StatusCode)
	}
	return total, nil
}

// stop ends the process as a rollout ends a pod: SIGTERM, then the
// graceful shutdown, and waits for it.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.stopped = true
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("stopping %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("%s did not stop within a minute of SIGTERM; its log ends with:\n%s", p.name, tail(p.logPath, 30))
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
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

// helm runs the helm binary against the control plane, with a
// configuration of its own (no user repositories or plugins), in dir.
func helm(t *testing.T, bin, kubeconfig, dir string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(testproc.WithoutEnv(os.Environ(), "KUBECONFIG"),
		"KUBECONFIG="+kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}
