package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// maxDescriptionFile bounds what --description-file reads: the API's limit
// on a description, with room for a final newline.
const maxDescriptionFile = 8192 + 1

func newDescribeAsCommand(s Streams) *cobra.Command {
	f := newClusterFlags("reviewed")
	var (
		force, clear             bool
		title, description, file string
		params                   []string
	)
	cmd := &cobra.Command{
		Use:   "describe-as TOOL [--title TEXT] [--description TEXT | --description-file FILE] [--parameter NAME=TEXT]...",
		Short: "Set the reviewed text agents read of an McpTool instead of the server's",
		Long: "What an agent reads of a tool is an instruction to its model, so the platform decides it:\n" +
			"describe-as sets spec.reviewedText, which the gateway serves instead of the server's title,\n" +
			"description and argument descriptions. Once any reviewed text is set, the schema agents\n" +
			"read carries no description of the server's (of the schema, of nested arguments or of\n" +
			"arguments without reviewed text); argument names and enum values are the server's words\n" +
			"and are shown as such. The server's own text stays in status for\n" +
			"reviewers, and the approval stays the approval of the server's definition: when the\n" +
			"server changes it, the tool is not served until it is approved again.\n\n" +
			"Each flag replaces what kubectl mcp set before for that field and keeps the rest; --clear\n" +
			"drops everything kubectl mcp set. Text describing an argument the server's schema does\n" +
			"not have is refused. Without flags, the command shows what agents read and what the\n" +
			"server wrote.",
		Example: `  kubectl mcp describe-as db.query -n agents --description "Runs one read-only SELECT against the orders table."
  kubectl mcp describe-as db.query --parameter "query=A single SELECT statement."
  kubectl mcp describe-as db.query --description-file reviewed.txt
  kubectl mcp describe-as db.query --clear`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			change := review.TextChange{Clear: clear, Parameters: map[string]string{}}
			if cmd.Flags().Changed("title") {
				change.Title = &title
			}
			switch {
			case cmd.Flags().Changed("description") && file != "":
				return usageErr("give either --description or --description-file, not both")
			case cmd.Flags().Changed("description"):
				change.Description = &description
			case file != "":
				text, err := readDescription(s, file)
				if err != nil {
					return err
				}
				change.Description = &text
			}
			for _, p := range params {
				name, text, ok := strings.Cut(p, "=")
				if !ok || name == "" || text == "" {
					return usageErr("--parameter takes NAME=TEXT, both non-empty (got %q)", p)
				}
				change.Parameters[name] = text
			}
			c, ns, name, err := f.toolClient(s, args[0])
			if err != nil {
				return err
			}
			if !clear && change.Title == nil && change.Description == nil && len(change.Parameters) == 0 {
				t, err := getTool(cmd.Context(), c, ns, name, args[0])
				if err != nil {
					return err
				}
				return printText(s.Out, t)
			}
			if err := textErr(review.SetReviewedText(cmd.Context(), c, ns, name, change, force)); err != nil {
				return err
			}
			return printChanged(cmd.Context(), s, f, c, ns, []string{name}, func(n string) string { return "mcptool/" + n + " reviewed text set" })
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&title, "title", "", "The title agents read (empty: the server's).")
	cmd.Flags().StringVar(&description, "description", "", "The description agents read (empty: the server's).")
	cmd.Flags().StringVar(&file, "description-file", "", "Read the description from a file (- for standard input).")
	cmd.Flags().StringArrayVar(&params, "parameter", nil, "NAME=TEXT: the description agents read of the argument NAME (repeatable).")
	cmd.Flags().BoolVar(&clear, "clear", false, "Drop the reviewed text kubectl mcp set before applying the other flags.")
	cmd.Flags().BoolVar(&force, "force", false, "Take the fields from another manager (for example from Git).")
	return cmd
}

// readDescription reads --description-file, refusing more than the API
// takes.
func readDescription(s Streams, file string) (string, error) {
	r := s.In
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return "", usageErr("--description-file: %v", err)
		}
		defer func() { _ = fh.Close() }()
		r = fh
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDescriptionFile+1))
	if err != nil {
		return "", usageErr("--description-file: %v", err)
	}
	text := strings.TrimSuffix(string(b), "\n")
	if len(text) > 8192 {
		return "", usageErr("--description-file: a description holds at most 8192 bytes")
	}
	return text, nil
}

// textErr is reviewErr for describe-as: text the tool could not be served
// with is the operation failing, and says what to fix.
func textErr(err error) error {
	var bad *review.TextNotHonouredError
	switch {
	case errors.As(err, &bad):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w (see `kubectl mcp diff` for the tool's schema)", err)}
	case errors.Is(err, review.ErrNotImported):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w: the tool's arguments are not known, so none can be described", err)}
	}
	return reviewErr(err)
}

// printText shows what agents read of a tool beside what the server wrote.
func printText(w io.Writer, t *mcpv1alpha1.McpTool) error {
	fmt.Fprintf(w, "McpTool %s/%s\n", t.Namespace, t.Name)
	v, err := toolview.Build(t)
	if err != nil {
		fmt.Fprintf(w, "The tool cannot be served as its spec stands: %s\n", review.Printable(err.Error(), false))
		return nil
	}
	if t.Spec.ReviewedText == nil {
		fmt.Fprintln(w, "No reviewed text is set (spec.reviewedText): agents read the server's own text.")
	} else {
		fmt.Fprintln(w, "Reviewed text is set: agents read no description of the server's in the input schema, only those")
		fmt.Fprintln(w, "reviewed; argument names and enum values stay the server's words.")
	}
	fmt.Fprintln(w, "Agents read:")
	read := &mcpv1alpha1.ToolDefinition{Title: v.Title, Description: v.Description, InputSchema: &apiextensionsv1.JSON{Raw: v.InputSchema}}
	for _, l := range review.Lines(read) {
		fmt.Fprintln(w, "  "+l)
	}
	if t.Spec.ReviewedText != nil {
		fmt.Fprintln(w, "The server wrote (status, what an approval names):")
		for _, l := range review.Lines(review.Current(t)) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}
