package lifetime_test

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills the controller manager with the test process,
// should the test itself be killed before its cleanup runs.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
