// Package cli implements kubectl-mcp, the operator's kubectl plugin. Its
// direct commands (probe, tools, call) talk to an MCP server with the same
// client the operator uses, so an operator can check a server before
// declaring it.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/version"
)

// Exit codes.
const (
	ExitOK = 0
	// ExitFailed: the operation failed, or the tool reported isError.
	ExitFailed = 1
	// ExitUsage: the command line was wrong.
	ExitUsage = 2
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Streams are where a command reads and writes; tests replace them.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// NewClient builds the MCP client; nil means mcp.New.
	NewClient func(mcp.Options) *mcp.Client
	// NewKubeClient, if set, replaces the kubeconfig: it returns the client
	// and the default namespace. Tests use it.
	NewKubeClient func() (client.Client, string)
}

func (s Streams) getenv(k string) string {
	if s.Getenv != nil {
		return s.Getenv(k)
	}
	return os.Getenv(k)
}

func (s Streams) client(allowPrivate bool) *mcp.Client {
	opts := mcp.Options{AllowPrivateNetworks: allowPrivate, ClientName: "kubectl-mcp", ClientVersion: version.Get()}
	if s.NewClient != nil {
		return s.NewClient(opts)
	}
	return mcp.New(opts)
}

// NewRootCommand returns the kubectl-mcp command tree.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-mcp",
		Short:         "Check MCP servers and manage the mcp-catalog-operator's catalog",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetIn(s.In)
	root.AddCommand(newProbeCommand(s), newToolsCommand(s), newCallCommand(s),
		newRequestCommand(s, importRequest, "import [NAME...]", "Import McpServers' catalogs now and wait for the result"),
		newRequestCommand(s, testRequest, "test [NAME...]", "Probe McpServers now and print their latency"),
		newEnableCommand(s, true), newEnableCommand(s, false), newDiffCommand(s), newApproveCommand(s), newVersionCommand(),
		newApprovalsCommand(s), newDecideCommand(s, mcpv1alpha1.CallApproved), newDecideCommand(s, mcpv1alpha1.CallDenied))
	return root
}

// Run executes the command line and returns the process exit code.
func Run(s Streams, args []string) int {
	cmd := NewRootCommand(s)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(s.Err, "error:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Cobra's own errors (unknown flag, wrong arguments) are usage errors.
	var me *mcp.Error
	if errors.As(err, &me) {
		return ExitFailed
	}
	return ExitUsage
}
