package cli

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// completeServers completes McpServer names in the namespace the flags
// name, from the API server. A failure completes nothing rather than
// printing an error into the shell.
func completeServers(s Streams, f *clusterFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := f.client(s)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var list mcpv1alpha1.McpServerList
		if err := c.List(cmd.Context(), &list, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		names := make([]string, 0, len(list.Items))
		for _, it := range list.Items {
			names = append(names, it.Name)
		}
		return candidates(names, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTools completes McpTool object names in the namespace the flags
// name, from the API server.
func completeTools(s Streams, f *clusterFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := f.client(s)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var list mcpv1alpha1.McpToolList
		if err := c.List(cmd.Context(), &list, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		names := make([]string, 0, len(list.Items))
		for _, it := range list.Items {
			names = append(names, it.Name)
		}
		return candidates(names, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// candidates are the names starting with toComplete, without those already
// given, sorted.
func candidates(names, given []string, toComplete string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) && !slices.Contains(given, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// completePendingApprovals completes the names of the McpCallApprovals
// still waiting for a decision.
func completePendingApprovals(s Streams, f *clusterFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := f.client(s)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var list mcpv1alpha1.McpCallApprovalList
		if err := c.List(cmd.Context(), &list, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		now := time.Now()
		names := make([]string, 0, len(list.Items))
		for i := range list.Items {
			if approvalState(&list.Items[i], now) == string(mcpv1alpha1.CallPending) {
				names = append(names, list.Items[i].Name)
			}
		}
		return candidates(names, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}
