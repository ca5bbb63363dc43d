package cli

import (
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/review"
)

// approvalRow is one McpCallApproval as a person deciding it sees it.
type approvalRow struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	State         string `json:"state"`
	Tool          string `json:"tool"`
	Server        string `json:"server"`
	Caller        string `json:"caller"`
	DataClass     string `json:"dataClass"`
	ArgumentsHash string `json:"argumentsHash"`
	Expires       string `json:"expires"`
	DecidedBy     string `json:"decidedBy,omitempty"`
	Reason        string `json:"reason,omitempty"`
}

func newApprovalsCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	var all bool
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List tool calls waiting for a person's approval (McpCallApprovals)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			var list mcpv1alpha1.McpCallApprovalList
			var opts []client.ListOption
			if !f.allNamespaces {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := c.List(cmd.Context(), &list, opts...); err != nil {
				return fmt.Errorf("listing McpCallApprovals: %w", err)
			}
			now := time.Now()
			sort.Slice(list.Items, func(i, j int) bool {
				if list.Items[i].Namespace != list.Items[j].Namespace {
					return list.Items[i].Namespace < list.Items[j].Namespace
				}
				return list.Items[i].Spec.ExpiresAt.Before(&list.Items[j].Spec.ExpiresAt)
			})
			rows := make([]approvalRow, 0, len(list.Items))
			objs := make([]runtime.Object, 0, len(list.Items))
			for i := range list.Items {
				a := &list.Items[i]
				state := governance.CallState(a, now)
				if !all && state != string(mcpv1alpha1.CallPending) {
					continue
				}
				a.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpCallApproval"))
				objs = append(objs, a)
				rows = append(rows, approvalRow{
					Namespace: a.Namespace, Name: a.Name, State: state, Tool: a.Spec.Tool, Server: a.Spec.Server,
					Caller: a.Spec.Caller, DataClass: string(a.Spec.DataClass), ArgumentsHash: a.Spec.ArgumentsHash,
					Expires: a.Spec.ExpiresAt.UTC().Format(time.RFC3339), DecidedBy: a.Spec.DecidedBy, Reason: a.Spec.Reason,
				})
			}
			out, err := objectList(objs)
			if err != nil {
				return err
			}
			return f.printer.print(s.Out, out, func(bool) error {
				tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAMESPACE\tNAME\tSTATE\tTOOL\tCALLER\tCLASS\tEXPIRES\tDECIDED BY")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.State, r.Tool, r.Caller, r.DataClass, r.Expires, dash(r.DecidedBy))
				}
				return tw.Flush()
			})
		},
	}
	f.bind(cmd, true)
	cmd.Flags().BoolVar(&all, "all", false, "Also list decided, used and expired approvals.")
	return cmd
}

func newDecideCommand(s Streams, d mcpv1alpha1.CallDecision) *cobra.Command {
	var reason string
	verb, past := "approve-call", "approved"
	short := "Approve a tool call waiting in an McpCallApproval; the agent's retry is then made once"
	if d == mcpv1alpha1.CallDenied {
		verb, past = "deny-call", "denied"
		short = "Deny a tool call waiting in an McpCallApproval"
	}
	f := newClusterFlags(past)
	cmd := &cobra.Command{
		Use:               verb + " NAME...",
		Short:             short,
		Example:           "  kubectl mcp " + verb + " call-3f9a1c27d0 -n agents --reason \"ticket OPS-12\"",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completePendingApprovals(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			me, err := review.WhoAmI(cmd.Context(), c)
			if err != nil {
				return reviewErr(err)
			}
			var errs []error
			var done []string
			for _, name := range args {
				if err := reviewErr(review.DecideCall(cmd.Context(), c, types.NamespacedName{Namespace: ns, Name: name}, d, me, reason)); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
					continue
				}
				done = append(done, name)
			}
			if err := printChangedObjects(cmd.Context(), s, f, c, ns, done, func(n string) string { return "mcpcallapproval/" + n + " " + past + " by " + me },
				func() client.Object { return &mcpv1alpha1.McpCallApproval{} }, mcpv1alpha1.GroupVersion.WithKind("McpCallApproval")); err != nil {
				errs = append(errs, err)
			}
			return joinExit(errs)
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&reason, "reason", "", "A note for the agent and the record (at most 1024 characters).")
	return cmd
}
