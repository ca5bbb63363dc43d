// Command kubectl-mcp is the mcp-catalog-operator's kubectl plugin
// (`kubectl mcp ...`).
package main

import (
	"os"

	"github.com/mcp-catalog/operator/internal/cli"
)

func main() {
	os.Exit(cli.Run(cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[1:]))
}
