package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// newResetMarkCommand resets the write-down rule for one caller
// (McpAccessPolicy spec.writeDown, ADR 057): it deletes the caller's
// McpReadMark, so that what the caller read before no longer holds its
// calls back. Who may do this is RBAC's: delete on mcpreadmarks.
func newResetMarkCommand(s Streams) *cobra.Command {
	f := newClusterFlags("reset")
	var serviceAccount string
	cmd := &cobra.Command{
		Use:   "reset-mark [CALLER] [--service-account NAME]",
		Short: "Forget what a caller has read, for the write-down rule (delete its McpReadMark)",
		Long: "A caller held to an McpAccessPolicy's spec.writeDown may not call a lower-class or\n" +
			"open-world tool for a while after it read sensitive data. This deletes its record of\n" +
			"what it read, in the namespace given, so that its next calls are decided as if it had\n" +
			"read nothing. CALLER is the user name the audit records and the refusal name\n" +
			"(spec.caller of the McpReadMark); --service-account names a ServiceAccount of the\n" +
			"namespace instead.",
		Example: `  kubectl mcp reset-mark --service-account support-agent -n agents
  kubectl mcp reset-mark oidc:alice@example.com -n agents`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (serviceAccount != "") {
				return usageErr("name the caller: its user name, or --service-account NAME (not both)")
			}
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			caller := ""
			if len(args) == 1 {
				caller = args[0]
			} else {
				caller = "system:serviceaccount:" + ns + ":" + serviceAccount
			}
			if strings.TrimSpace(caller) == "" {
				return usageErr("the caller's user name is empty")
			}
			key := types.NamespacedName{Namespace: ns, Name: governance.ReadMarkName(caller)}
			m := &mcpv1alpha1.McpReadMark{}
			if err := c.Get(cmd.Context(), key, m); err != nil {
				if apierrors.IsNotFound(err) {
					_, err = fmt.Fprintf(s.Out, "%s has no read mark in namespace %s: nothing holds its calls back\n", caller, ns)
					return err
				}
				return &exitError{code: ExitFailed, err: fmt.Errorf("reading the read mark of %s: %w", caller, err)}
			}
			if err := c.Delete(cmd.Context(), m); err != nil && !apierrors.IsNotFound(err) {
				return &exitError{code: ExitFailed, err: fmt.Errorf("deleting the read mark of %s: %w", caller, err)}
			}
			_, err = fmt.Fprintf(s.Out, "mcpreadmark/%s of %s deleted: what it read no longer holds its calls back\n", key.Name, caller)
			return err
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&serviceAccount, "service-account", "", "The ServiceAccount of the namespace whose mark to reset.")
	return cmd
}
