// Package cli implements kubectl-mcp, the operator's kubectl plugin. Its
// direct commands (probe, tools, call) talk to an MCP server with the same
// client the operator uses, so an operator can check a server before
// declaring it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	// and the default namespace. Tests use it; a client that can watch
	// (client.WithWatch) serves `approvals --watch` and `console`.
	NewKubeClient func() (client.Client, string)
	// Context, if set, ends the commands that run until interrupted
	// (`console`, `approvals --watch`) when it is done. Tests use it.
	Context context.Context
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

// NewRootCommand returns the kubectl-mcp command tree. Its usage and
// examples say `kubectl mcp`, the way kubectl runs the plugin.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-mcp",
		Short: "Check MCP servers and manage the mcp-catalog-operator's catalog",
		Long: "kubectl mcp checks MCP servers directly (probe, tools URL, call) and manages the\n" +
			"catalog of McpServers and McpTools in the cluster.\n\n" +
			"Exit codes: 0 success; 1 the operation ran and failed (a server unreachable, an\n" +
			"import refused, a tool reporting an error, an object not found); 2 the command\n" +
			"line was wrong (unknown flag or command, bad argument or flag value).",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mcp"},
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// Every command's help: its own flags before kubectl's (usage.go).
	root.SetUsageFunc(usage)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetIn(s.In)
	// Flag errors happen before a command runs: they are usage errors.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	root.AddCommand(newProbeCommand(s), newToolsCommand(s), newCallCommand(s),
		newRequestCommand(s, importRequest, "import [NAME...]", "Import McpServers' catalogs now and wait for the result"),
		newRequestCommand(s, testRequest, "test [NAME...]", "Probe McpServers now and print their latency"),
		newEnableCommand(s, true), newEnableCommand(s, false), newDiffCommand(s), newApproveCommand(s), newEffectsCommand(s), newDescribeAsCommand(s), newVersionCommand(),
		newApprovalsCommand(s), newDecideCommand(s, mcpv1alpha1.CallApproved), newDecideCommand(s, mcpv1alpha1.CallDenied),
		newConsoleCommand(s), newRegistryCommand(s), newResetMarkCommand(s),
		newAuthorizationsCommand(s), newRevokeAuthorizationCommand(s))
	return root
}

// CompletionExecutable is the name kubectl (1.26 and later) looks for to
// complete `kubectl mcp <TAB>`: it runs it with the words typed after
// `kubectl mcp`.
const CompletionExecutable = "kubectl_complete-mcp"

// Args returns the command line to run for a process started as argv0 with
// args: started under the completion name, it is a request for cobra's
// completion.
func Args(argv0 string, args []string) []string {
	base := filepath.Base(argv0)
	base = strings.TrimSuffix(base, ".exe")
	if base == CompletionExecutable {
		return append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	return args
}

// Run executes the command line and returns the process exit code: 0 when
// it succeeded, 1 when the operation ran and failed, 2 when the command
// line was wrong.
func Run(s Streams, args []string) int {
	cmd := NewRootCommand(s)
	cmd.SetArgs(args)
	// Everything cobra refuses (unknown command, flag or argument count)
	// happens before the persistent pre-run; an error after it without an
	// exit code of its own is the operation failing.
	started := false
	cmd.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	ctx := s.Context
	if ctx == nil {
		ctx = context.Background()
	}
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(s.Err, "error:", err)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case started:
		return ExitFailed
	}
	return ExitUsage
}
