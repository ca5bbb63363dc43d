//go:build !linux

package e2e

import "os/exec"

// setParentDeathSignal has no portable equivalent outside Linux; the
// test's cleanups still kill the manager.
func setParentDeathSignal(*exec.Cmd) {}
