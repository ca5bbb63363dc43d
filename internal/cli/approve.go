package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/review"
)

// reviewErr turns an error of package review into the command's error,
// with the flag or command that fixes it; each is the operation failing.
func reviewErr(err error) error {
	var (
		nf      *review.NotFoundError
		changed *review.DefinitionChangedError
		owned   *review.FieldOwnedError
		api     *review.APIError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return notFound(nf.Kind, nf.Namespace, nf.Name)
	case errors.As(err, &changed):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w; review it again with `kubectl mcp diff %s`", err, changed.Tool)}
	case errors.As(err, &owned):
		return &exitError{code: ExitFailed, err: fmt.Errorf("another manager owns this field (change it there, for example in Git, or use --force): %w", owned.Err)}
	case errors.Is(err, review.ErrStale):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w; try again", err)}
	case errors.As(err, &api):
		return clusterError(api.Err, api.Doing)
	}
	return &exitError{code: ExitFailed, err: err}
}

// printReview shows the current definition next to what is approved: as a
// line diff when the cluster kept the approved text, in full otherwise.
func printReview(w io.Writer, r review.Review) { printReviewAs(w, r, r.Name) }

// printReviewAs is printReview whose approve command names the tool as
// the person did (the object name, SERVER/REMOTE_NAME or the name agents
// see; resolveTool accepts each).
func printReviewAs(w io.Writer, r review.Review, as string) {
	fmt.Fprintf(w, "McpTool %s/%s: tool %s of McpServer %s\n", r.Namespace, r.Name, review.OneLine(r.RemoteName, 128), r.Server)
	fmt.Fprintf(w, "current definition:  %s\n", dash(r.CurrentHash))
	fmt.Fprintf(w, "approved definition: %s (%s)\n", dash(r.ApprovedHash), r.ApprovedBy)
	if r.ReviewedText != nil {
		fmt.Fprintf(w, "Agents read reviewed text instead of the server's (spec.reviewedText; `kubectl mcp describe-as %s` shows it).\n", r.Name)
		fmt.Fprintln(w, "The approval is still of the server's definition, below.")
	}
	printDrift(w, r.Drift)
	switch {
	case r.CurrentHash == "":
		fmt.Fprintln(w, "No definition has been imported yet: there is nothing to review.")
		return
	case !r.Changed:
		fmt.Fprintln(w, "The current definition is the approved one.")
	case r.ApprovedHash == "":
		fmt.Fprintln(w, "No definition is approved yet. The current definition follows in full.")
	case r.Approved != nil:
		fmt.Fprintln(w, "The definition CHANGED since it was approved. What changed, from the approved definition (-) to the current one (+):")
		fmt.Fprintln(w, "---")
		fmt.Fprint(w, r.Diff)
		fmt.Fprintln(w, "---")
		fmt.Fprintf(w, "To approve exactly the current definition:\n  kubectl mcp approve %s -n %s --hash %s\n", as, r.Namespace, r.CurrentHash)
		return
	default:
		fmt.Fprintln(w, "The definition CHANGED. The text of the approved definition is not on record (it was approved")
		fmt.Fprintln(w, "after the importer last replaced it), so the current definition follows in full: compare it with what you approved.")
	}
	current := &mcpv1alpha1.ToolDefinition{Title: r.Title, Description: r.Description}
	if len(r.InputSchema) > 0 {
		current.InputSchema = &apiextensionsv1.JSON{Raw: r.InputSchema}
	}
	if len(r.OutputSchema) > 0 {
		current.OutputSchema = &apiextensionsv1.JSON{Raw: r.OutputSchema}
	}
	fmt.Fprintln(w, "---")
	for _, l := range review.Lines(current) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "---")
	if r.Changed {
		fmt.Fprintf(w, "To approve exactly this definition:\n  kubectl mcp approve %s -n %s --hash %s\n", as, r.Namespace, r.CurrentHash)
	}
}

// printDrift shows how the current definition drifted (status.drift), in
// the categories a reviewer acts on, and where each finding is.
func printDrift(w io.Writer, d *mcpv1alpha1.DefinitionDrift) {
	if d == nil {
		return
	}
	cats := make([]string, len(d.Categories))
	for i, c := range d.Categories {
		cats[i] = review.OneLine(string(c), 64)
	}
	if d.FromHash == "" {
		fmt.Fprintf(w, "Warnings of the first import: %s\n", strings.Join(cats, ", "))
	} else {
		fmt.Fprintf(w, "What changed since %s: %s\n", review.OneLine(d.FromHash, 71), strings.Join(cats, ", "))
	}
	for _, detail := range d.Details {
		fmt.Fprintf(w, "  %s\n", review.OneLine(detail, 256))
	}
}

// toolClient connects to the cluster and resolves the McpTool an argument
// names (resolveTool).
func (f *clusterFlags) toolClient(s Streams, arg string) (client.Client, string, string, error) {
	c, ns, err := f.client(s)
	if err != nil {
		return nil, "", "", err
	}
	name, err := resolveTool(arg)
	if err != nil {
		return nil, "", "", err
	}
	return c, ns, name, nil
}

// getTool reads the McpTool named name, which arg named (for the near
// names of a "not found").
func getTool(ctx context.Context, c client.Client, ns, name, arg string) (*mcpv1alpha1.McpTool, error) {
	t, err := review.GetTool(ctx, c, ns, name)
	if err != nil {
		return nil, toolErr(ctx, c, ns, arg, err)
	}
	return t, nil
}

func newDiffCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	cmd := &cobra.Command{
		Use:   "diff TOOL",
		Short: "Show an McpTool's current definition, how it drifted, what is approved, and the hash to approve",
		Example: `  kubectl mcp diff tickets.create-ticket -n agents
  kubectl mcp diff tickets.create-ticket -o jsonpath='{.currentHash}'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, name, err := f.toolClient(s, args[0])
			if err != nil {
				return err
			}
			t, err := getTool(cmd.Context(), c, ns, name, args[0])
			if err != nil {
				return err
			}
			r := review.Of(t)
			obj, err := resultObject("DefinitionReview", r.Namespace, r.Name, r)
			if err != nil {
				return err
			}
			return f.printer.print(s.Out, obj, func(bool) error {
				printReviewAs(s.Out, r, args[0])
				return nil
			})
		},
	}
	f.bind(cmd, false)
	return cmd
}

// approveFeature is approve for an McpPrompt or McpResource: without a
// hash it shows the definition and its hash, and approves nothing.
func approveFeature(ctx context.Context, s Streams, f *clusterFlags, kind, name, hash string, force bool) error {
	c, ns, err := f.client(s)
	if err != nil {
		return err
	}
	ref := strings.ToLower(kind) + "/" + name
	if hash == "" {
		ft, err := review.GetFeature(ctx, c, kind, ns, name)
		if err != nil {
			return reviewErr(err)
		}
		fmt.Fprintf(s.Out, "%s %s/%s\n", kind, ns, name)
		fmt.Fprintf(s.Out, "current definition:  %s\n", dash(ft.Hash))
		fmt.Fprintf(s.Out, "approved definition: %s\n", dash(ft.Approved))
		if ft.Approved != "" && ft.Approved != ft.Hash {
			fmt.Fprintln(s.Out, "The definition CHANGED since it was approved; the current one follows in full.")
		}
		printDrift(s.Out, ft.Drift)
		if ft.Hash == "" {
			fmt.Fprintln(s.Out, "No definition has been imported yet: there is nothing to review.")
		} else {
			for _, l := range ft.Lines {
				fmt.Fprintln(s.Out, "  "+l)
			}
			fmt.Fprintf(s.Out, "To approve exactly this definition:\n  kubectl mcp approve %s -n %s --hash %s\n", ref, ns, ft.Hash)
		}
		return &exitError{code: ExitFailed, err: errors.New("nothing was approved: review the definition above and pass its hash with --hash")}
	}
	if !review.HashPattern.MatchString(hash) {
		return usageErr("--hash must be sha256:<64 lowercase hex digits>, as `kubectl mcp approve %s` prints it", ref)
	}
	if err := review.ApproveFeature(ctx, c, kind, ns, name, hash, force); err != nil {
		return reviewErr(err)
	}
	return printChangedFeatures(ctx, s, f, c, ns, map[string][]string{kind: {name}}, func(r string) string { return r + " approved " + hash })
}

func newApproveCommand(s Streams) *cobra.Command {
	f := newClusterFlags("approved")
	var force bool
	var hash string
	cmd := &cobra.Command{
		Use:   "approve TOOL --hash sha256:...",
		Short: "Approve the definition of an McpTool (or mcpprompt/NAME, mcpresource/NAME) that you reviewed (see `diff`)",
		Long: "Approve exactly the definition you reviewed: --hash is the current definition hash\n" +
			"that `kubectl mcp diff TOOL` (or `approve TOOL` without --hash) shows. The approval is\n" +
			"refused when the tool's definition is no longer that one, including when it changes\n" +
			"between this command's read and its write.",
		Example: `  kubectl mcp approve tickets.create-ticket -n agents --hash sha256:…
  kubectl mcp approve mcp_tickets_create_ticket -n agents     # the name agents see: shows the definition and its hash`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kind, name, ok := review.FeatureKindOf(args[0]); ok {
				return approveFeature(cmd.Context(), s, f, kind, name, hash, force)
			}
			c, ns, name, err := f.toolClient(s, args[0])
			if err != nil {
				return err
			}
			if hash == "" {
				t, err := getTool(cmd.Context(), c, ns, name, args[0])
				if err != nil {
					return err
				}
				printReviewAs(s.Out, review.Of(t), args[0])
				return &exitError{code: ExitFailed, err: errors.New("nothing was approved: review the definition above and pass its hash with --hash")}
			}
			if !review.HashPattern.MatchString(hash) {
				return usageErr("--hash must be sha256:<64 lowercase hex digits>, as `kubectl mcp diff` prints it")
			}
			if err := review.Approve(cmd.Context(), c, ns, name, hash, force); err != nil {
				return toolErr(cmd.Context(), c, ns, args[0], err)
			}
			return printChanged(cmd.Context(), s, f, c, ns, []string{name}, func(n string) string { return "mcptool/" + n + " approved " + hash })
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&hash, "hash", "", "The definition hash you reviewed (required to approve).")
	cmd.Flags().BoolVar(&force, "force", false, "Take the field from another manager (for example from Git).")
	return cmd
}
