//go:build !linux

package lifetime_test

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
