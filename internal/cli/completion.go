package cli

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// completeServers completes McpServer names in the namespace the flags
// name, from the API server.
func completeServers(s Streams, f *clusterFlags) cobra.CompletionFunc {
	return completeNames(s, f, func() client.ObjectList { return &mcpv1alpha1.McpServerList{} }, nil)
}

// completeTools completes McpTool object names in the namespace the flags
// name, from the API server.
func completeTools(s Streams, f *clusterFlags) cobra.CompletionFunc {
	return completeNames(s, f, func() client.ObjectList { return &mcpv1alpha1.McpToolList{} }, nil)
}

// completeNames completes the names of the objects of one list kind in the
// namespace the flags name, those keep accepts (every one when nil). A
// failure completes nothing rather than printing an error into the shell.
func completeNames(s Streams, f *clusterFlags, newList func() client.ObjectList, keep func(runtime.Object) bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := f.client(s)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		list := newList()
		if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var names []string
		err = meta.EachListItem(list, func(o runtime.Object) error {
			if keep == nil || keep(o) {
				if m, err := meta.Accessor(o); err == nil {
					names = append(names, m.GetName())
				}
			}
			return nil
		})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
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
	return completeNames(s, f, func() client.ObjectList { return &mcpv1alpha1.McpCallApprovalList{} }, func(o runtime.Object) bool {
		a, ok := o.(*mcpv1alpha1.McpCallApproval)
		return ok && governance.CallState(a, time.Now()) == governance.CallStatePending
	})
}
