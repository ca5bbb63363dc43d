package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/review"
)

// effectFlags are the answers of kubectl mcp effects, by flag.
var effectFlags = []struct{ flag, usage string }{
	{"read-only", "The tool does not modify its environment."},
	{"destructive", "The tool may delete or overwrite what exists (unset: true, unless --read-only)."},
	{"idempotent", "Calling it again with the same arguments does nothing more (unset: false)."},
	{"open-world", "The tool reaches entities outside its server's own domain (unset: true)."},
}

func newEffectsCommand(s Streams) *cobra.Command {
	f := newClusterFlags("reviewed")
	var force bool
	var hash string
	answers := make([]bool, len(effectFlags))
	cmd := &cobra.Command{
		Use:   "effects TOOL --hash sha256:... [--read-only] [--destructive=false] [--idempotent] [--open-world=false]",
		Short: "Record what an McpTool's calls do, as you reviewed them (spec.reviewedEffects)",
		Long: "The server's hints about its own tool (read-only, destructive, idempotent, open-world)\n" +
			"decide nothing. Your answers do: McpServer spec.approvalByEffect and McpAccessPolicy\n" +
			"approvalRequiredFor and maxDataClassByEffect key on them, and agents are shown them.\n" +
			"An answer you leave out is the unsafe one. --hash is the definition you reviewed\n" +
			"(see `kubectl mcp diff`); the answers apply while it is the approved definition.\n" +
			"Without --hash, the command shows the server's hints and the effects in force.",
		Example: `  kubectl mcp effects tickets.search -n agents --hash sha256:… --read-only --open-world=false
  kubectl mcp effects mcp_tickets_close -n agents --hash sha256:… --idempotent --destructive=false`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, name, err := f.toolClient(s, args[0])
			if err != nil {
				return err
			}
			if hash == "" {
				t, err := getTool(cmd.Context(), c, ns, name, args[0])
				if err != nil {
					return err
				}
				printEffects(s.Out, t, args[0])
				return &exitError{code: ExitFailed, err: errors.New("nothing was recorded: pass the definition hash you reviewed with --hash, and your answers")}
			}
			if !review.HashPattern.MatchString(hash) {
				return usageErr("--hash must be sha256:<64 lowercase hex digits>, as `kubectl mcp diff` prints it")
			}
			var a review.EffectAnswers
			slots := []**bool{&a.ReadOnly, &a.Destructive, &a.Idempotent, &a.OpenWorld}
			for i, ef := range effectFlags {
				if cmd.Flags().Changed(ef.flag) {
					*slots[i] = &answers[i]
				}
			}
			if err := review.SetEffects(cmd.Context(), c, ns, name, hash, a, force); err != nil {
				if errors.Is(err, review.ErrReadOnlyDestructive) {
					return usageErr("--read-only and --destructive contradict each other: a read-only tool deletes nothing")
				}
				return toolErr(cmd.Context(), c, ns, args[0], err)
			}
			return printChanged(cmd.Context(), s, f, c, ns, []string{name}, func(n string) string {
				return "mcptool/" + n + " effects reviewed for " + hash
			})
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&hash, "hash", "", "The definition hash you reviewed (required to record).")
	for i, ef := range effectFlags {
		cmd.Flags().BoolVar(&answers[i], ef.flag, false, ef.usage)
	}
	cmd.Flags().BoolVar(&force, "force", false, "Take the field from another manager (for example from Git).")
	return cmd
}

// printEffects shows what the server says of its tool, and what the gate
// takes it to do.
func printEffects(w io.Writer, t *mcpv1alpha1.McpTool, as string) {
	fmt.Fprintf(w, "McpTool %s/%s: tool %s of McpServer %s\n", t.Namespace, t.Name, review.OneLine(t.Spec.RemoteName, 128), t.Spec.ServerRef.Name)
	fmt.Fprintf(w, "current definition:  %s\n", dash(t.Status.DefinitionHash))
	fmt.Fprintf(w, "approved definition: %s\n", dash(t.Spec.ApprovedDefinitionHash))
	fmt.Fprintf(w, "The server says (untrusted): %s\n", hintWords(t.Status.Hints))
	e := governance.EffectsOf(t)
	switch {
	case e.Reviewed:
		fmt.Fprintf(w, "In force: reviewed as %s.\n", e.Words())
	case governance.StaleEffectsReview(t):
		fmt.Fprintf(w, "In force: unreviewed (%s): the review on record is of %s, not the approved definition.\n", e.Words(), review.OneLine(t.Spec.ReviewedEffects.DefinitionHash, 71))
	default:
		fmt.Fprintf(w, "In force: unreviewed (%s).\n", e.Words())
	}
	if h := t.Status.DefinitionHash; h != "" {
		fmt.Fprintf(w, "To record your review of the current definition, for example:\n  kubectl mcp effects %s -n %s --hash %s --read-only --open-world=false\n", as, t.Namespace, h)
	}
}

// hintWords say a server's hints as it sent them.
func hintWords(h *mcpv1alpha1.ToolHints) string {
	if h == nil {
		return "no hints"
	}
	out := ""
	for _, x := range []struct {
		name string
		v    *bool
	}{{"readOnly", h.ReadOnlyHint}, {"destructive", h.DestructiveHint}, {"idempotent", h.IdempotentHint}, {"openWorld", h.OpenWorldHint}} {
		if x.v == nil {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s=%t", x.name, *x.v)
	}
	if out == "" {
		return "no hints"
	}
	return out
}
