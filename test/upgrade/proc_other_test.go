//go:build !linux

package upgrade

import "os/exec"

// setParentDeathSignal does nothing where the kernel offers no parent
// death signal; the test's cleanups still kill every manager.
func setParentDeathSignal(*exec.Cmd) {}
