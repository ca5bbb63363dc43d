// Package version holds the operator's release version, stamped into the
// manager and the kubectl plugin at build time, so that both, the MCP
// clientInfo the operator sends and the gateway's serverInfo report the
// same version.
package version

import "runtime/debug"

// Fallback is the version of a build that was neither stamped nor built
// from a module version (a plain go build of a checkout).
const Fallback = "v0.0.0-dev"

// stamped is set at link time:
//
//	go build -ldflags "-X github.com/mcp-catalog/operator/internal/version.stamped=$(git describe --tags --always --dirty)"
//
// The Makefile's build target does this.
var stamped string

// Get returns the stamped version; without one, the module version `go
// install module@version` records; without that, Fallback.
func Get() string {
	if stamped != "" {
		return stamped
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return Fallback
}
