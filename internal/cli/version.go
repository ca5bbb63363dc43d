package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcp-catalog/operator/internal/version"
)

// newVersionCommand prints the plugin's version, the same line --version
// prints, for scripts that compare it with the operator's.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get())
			return err
		},
	}
}
