// Command golangci-lint is golangci-lint with the kube-api-linter module
// plugin compiled in. It is what `golangci-lint custom` would generate, built
// from the Go module proxy so that it needs neither git nor a download.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Registers the "kubeapilinter" module plugin.
	_ "sigs.k8s.io/kube-api-linter"
)

func main() {
	info := commands.BuildInfo{Version: "unknown", Commit: "?", Date: "(unknown)", GoVersion: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/golangci/golangci-lint/v2" {
				info.Version = dep.Version
			}
		}
	}
	if err := commands.Execute(info); err != nil {
		fmt.Fprintf(os.Stderr, "golangci-lint: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}
