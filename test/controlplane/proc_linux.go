package controlplane

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills a process the control plane started with the
// test process, should the test be killed before its cleanup runs.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
