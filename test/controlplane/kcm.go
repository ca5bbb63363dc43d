package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-catalog/operator/test/capture"
)

// controllerManager is a kube-controller-manager process.
type controllerManager struct {
	cmd *exec.Cmd
	dir string
	out *capture.Buffer
	// exited is closed once the process has ended.
	exited chan struct{}
}

func startControllerManager(binary string, cp *ControlPlane, controllers []string) (*controllerManager, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("%s is missing: build it with hack/envtest.sh --with-controller-manager (`make test` does)", binary)
	}
	dir, err := os.MkdirTemp("", "kube-controller-manager-")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := cp.Kubeconfig(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	m := &controllerManager{dir: dir, out: &capture.Buffer{}, exited: make(chan struct{})}
	m.cmd = exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No HTTPS endpoint: nothing scrapes it here.
		"--secure-port=0",
	)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	setParentDeathSignal(m.cmd)
	if err := m.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.exited)
	}()
	return m, nil
}

// stop ends the process; it is an error if it had ended by itself.
func (m *controllerManager) stop() error {
	defer func() { _ = os.RemoveAll(m.dir) }()
	select {
	case <-m.exited:
		return fmt.Errorf("kube-controller-manager exited early (%v):\n%s", m.cmd.ProcessState, Tail(m.out.String(), 40))
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	return nil
}
