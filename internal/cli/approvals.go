package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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

// approvalRowOf is a as a row of the approvals table, at now.
func approvalRowOf(a *mcpv1alpha1.McpCallApproval, now time.Time) approvalRow {
	return approvalRow{
		Namespace: a.Namespace, Name: a.Name, State: governance.CallState(a, now), Tool: a.Spec.Tool, Server: a.Spec.Server,
		Caller: review.OneLine(a.Spec.Caller, 512), DataClass: string(a.Spec.DataClass), ArgumentsHash: a.Spec.ArgumentsHash,
		Expires: a.Spec.ExpiresAt.UTC().Format(time.RFC3339), DecidedBy: review.OneLine(a.Spec.DecidedBy, 512), Reason: review.OneLine(a.Spec.Reason, 1024),
	}
}

const approvalsHeader = "NAMESPACE\tNAME\tSTATE\tTOOL\tCALLER\tCLASS\tEXPIRES\tDECIDED BY"

func printApprovalRows(w io.Writer, rows []approvalRow, header bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, approvalsHeader)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.State, r.Tool, r.Caller, r.DataClass, r.Expires, dash(r.DecidedBy))
	}
	return tw.Flush()
}

func newApprovalsCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	var all, watchFlag bool
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List tool calls waiting for a person's approval (McpCallApprovals)",
		Long: "approvals lists the calls waiting for a person's approval. With --watch it goes on\n" +
			"printing a line for each new waiting call and for each change of one it printed (decided,\n" +
			"used), as they happen, until interrupted.",
		Example: `  kubectl mcp approvals -n agents
  kubectl mcp approvals -A --watch`,
		Args: cobra.NoArgs,
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
				return clusterError(err, "listing McpCallApprovals")
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
			shown := map[types.UID]string{}
			for i := range list.Items {
				a := &list.Items[i]
				r := approvalRowOf(a, now)
				if !all && r.State != governance.CallStatePending {
					continue
				}
				shown[a.UID] = r.State
				a.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpCallApproval"))
				objs = append(objs, a)
				rows = append(rows, r)
			}
			out, err := objectList(objs)
			if err != nil {
				return err
			}
			if !watchFlag {
				return f.printer.print(s.Out, out, func(bool) error { return printApprovalRows(s.Out, rows, true) })
			}
			table := f.printer.format() == "" || f.printer.format() == "wide"
			if table {
				if err := printApprovalRows(s.Out, rows, true); err != nil {
					return err
				}
			} else {
				for _, o := range objs {
					if err := f.printer.print(s.Out, o, nil); err != nil {
						return err
					}
				}
			}
			wc, err := watchClient(c)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			return watchApprovals(ctx, wc, opts, list.ResourceVersion, func(a *mcpv1alpha1.McpCallApproval) error {
				r := approvalRowOf(a, time.Now())
				last, seen := shown[a.UID]
				// A new waiting call, or a change of where one printed
				// stands; with --all, every change.
				if !all && !(r.State == governance.CallStatePending && !seen) && !(seen && last != r.State) {
					return nil
				}
				shown[a.UID] = r.State
				if table {
					return printApprovalRows(s.Out, []approvalRow{r}, false)
				}
				a.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpCallApproval"))
				return f.printer.print(s.Out, a, nil)
			})
		},
	}
	f.bind(cmd, true)
	cmd.Flags().BoolVar(&all, "all", false, "Also list decided, used and expired approvals.")
	cmd.Flags().BoolVarP(&watchFlag, "watch", "w", false, "After listing, print each new waiting call and each change of one, until interrupted.")
	return cmd
}

// watchApprovals calls show with every approval added or changed after
// version rv until ctx ends, resuming the watch where the API server closed
// it.
func watchApprovals(ctx context.Context, c client.WithWatch, opts []client.ListOption, rv string, show func(*mcpv1alpha1.McpCallApproval) error) error {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &mcpv1alpha1.McpCallApprovalList{}, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return clusterError(err, "watching McpCallApprovals")
		}
		for ev := range w.ResultChan() {
			a, ok := ev.Object.(*mcpv1alpha1.McpCallApproval)
			switch {
			case ctx.Err() != nil:
				// Interrupted: what the watch says now is about that.
				w.Stop()
				return nil
			case ev.Type == watch.Error:
				w.Stop()
				return &exitError{code: ExitFailed, err: fmt.Errorf("watching McpCallApprovals: %w", apierrors.FromObject(ev.Object))}
			case !ok:
				continue
			}
			rv = a.ResourceVersion
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				if err := show(a); err != nil {
					w.Stop()
					return err
				}
			}
		}
		w.Stop()
	}
	return nil
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
