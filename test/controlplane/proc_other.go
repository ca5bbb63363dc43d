//go:build !linux

package controlplane

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
