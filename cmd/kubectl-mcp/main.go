// Command kubectl-mcp is the mcp-catalog-operator's kubectl plugin
// (`kubectl mcp ...`). Installed (or linked) a second time as
// kubectl_complete-mcp, it answers kubectl's shell completion for the
// plugin.
package main

import (
	"os"

	"github.com/mcp-catalog/operator/internal/cli"
)

func main() {
	os.Exit(cli.Run(cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, cli.Args(os.Args[0], os.Args[1:])))
}
