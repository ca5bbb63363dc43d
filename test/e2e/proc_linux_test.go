//go:build linux

package e2e

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the manager if the test process
// dies without running its cleanups (a go test timeout panics, say), so
// no manager outlives the test.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
