//go:build linux

package upgrade

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill a manager if the test process
// dies without running its cleanups, so no manager outlives the test.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
