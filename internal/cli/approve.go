package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

var definitionHashPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// ErrDefinitionChanged says the definition a person reviewed is no longer
// the tool's current one, so approving it would approve something unseen.
var ErrDefinitionChanged = errors.New("the definition changed since it was reviewed")

// errStale says the McpTool changed between reading and writing it.
var errStale = errors.New("the McpTool changed while it was being approved")

// review is what a person needs to decide on a definition.
type review struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Server    string `json:"server"`
	// RemoteName is the tool's name on the server.
	RemoteName string `json:"remoteName"`
	// CurrentHash is the definition the server offers now; pass it to
	// `approve --hash`.
	CurrentHash string `json:"currentHash"`
	// ApprovedHash is the approved definition, and ApprovedBy says where
	// that comes from: spec.approvedDefinitionHash, or none.
	ApprovedHash string `json:"approvedHash,omitempty"`
	ApprovedBy   string `json:"approvedBy"`
	Changed      bool   `json:"changed"`
	// Title, Description and InputSchema are the current definition as the
	// server sent it (normalised); control characters are removed in the
	// table output.
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Approved is the text of the approved definition when the cluster
	// kept it (status.approvedDefinition), and Diff the line difference
	// from it to the current definition, as printed.
	Approved *mcpv1alpha1.ToolDefinition `json:"approved,omitempty"`
	Diff     string                      `json:"diff,omitempty"`
}

func reviewOf(t *mcpv1alpha1.McpTool) review {
	r := review{Namespace: t.Namespace, Name: t.Name, Server: t.Spec.ServerRef.Name, RemoteName: t.Spec.RemoteName,
		CurrentHash: t.Status.DefinitionHash, Title: t.Status.Title, Description: t.Status.Description, ApprovedBy: "none"}
	// Only spec.approvedDefinitionHash approves: enabling a tool does not.
	if t.Spec.ApprovedDefinitionHash != "" {
		r.ApprovedHash, r.ApprovedBy = t.Spec.ApprovedDefinitionHash, "spec.approvedDefinitionHash"
	}
	r.Changed = r.ApprovedHash != r.CurrentHash
	if t.Status.InputSchema != nil && len(t.Status.InputSchema.Raw) > 0 {
		r.InputSchema = json.RawMessage(t.Status.InputSchema.Raw)
	}
	// A kept text counts only while it is the one approved now.
	if rec := t.Status.ApprovedDefinition; r.Changed && r.CurrentHash != "" && rec != nil && rec.Hash == r.ApprovedHash {
		r.Approved = rec
		current := &mcpv1alpha1.ToolDefinition{Hash: t.Status.DefinitionHash, Title: t.Status.Title,
			Description: t.Status.Description, InputSchema: t.Status.InputSchema, Hints: t.Status.Hints}
		r.Diff = definitionDiff(rec, current)
	}
	return r
}

// definitionLines renders a definition as the lines a person reads and a
// diff compares, with control characters removed.
func definitionLines(d *mcpv1alpha1.ToolDefinition) []string {
	lines := []string{"title: " + oneLine(d.Title, 256), "description:"}
	for _, l := range strings.Split(printable(d.Description, true), "\n") {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, "input schema (normalised):")
	var pretty bytes.Buffer
	if d.InputSchema == nil || len(d.InputSchema.Raw) == 0 || json.Indent(&pretty, d.InputSchema.Raw, "  ", "  ") != nil {
		lines = append(lines, "  (none)")
	} else {
		for _, l := range strings.Split(printable(pretty.String(), true), "\n") {
			lines = append(lines, "  "+l)
		}
	}
	if h := d.Hints; h != nil {
		lines = append(lines, "hints (untrusted):")
		if h.Title != "" {
			lines = append(lines, "  title: "+oneLine(h.Title, 256))
		}
		for _, b := range []struct {
			name string
			v    *bool
		}{{"readOnlyHint", h.ReadOnlyHint}, {"destructiveHint", h.DestructiveHint}, {"idempotentHint", h.IdempotentHint}, {"openWorldHint", h.OpenWorldHint}} {
			if b.v != nil {
				lines = append(lines, fmt.Sprintf("  %s: %t", b.name, *b.v))
			}
		}
	}
	return lines
}

// definitionDiff is a unified line diff from the approved definition to the
// current one.
func definitionDiff(approved, current *mcpv1alpha1.ToolDefinition) string {
	withEOL := func(ls []string) []string {
		for i := range ls {
			ls[i] += "\n"
		}
		return ls
	}
	out, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: withEOL(definitionLines(approved)), B: withEOL(definitionLines(current)),
		FromFile: "approved " + approved.Hash, ToFile: "current " + current.Hash, Context: 3,
	})
	if err != nil {
		// Writing to a strings.Builder does not fail.
		return ""
	}
	return out
}

// printReview shows the current definition next to what is approved: as a
// line diff when the cluster kept the approved text, in full otherwise.
func printReview(w io.Writer, r review) {
	fmt.Fprintf(w, "McpTool %s/%s: tool %s of McpServer %s\n", r.Namespace, r.Name, oneLine(r.RemoteName, 128), r.Server)
	fmt.Fprintf(w, "current definition:  %s\n", dash(r.CurrentHash))
	fmt.Fprintf(w, "approved definition: %s (%s)\n", dash(r.ApprovedHash), r.ApprovedBy)
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
		fmt.Fprintf(w, "To approve exactly the current definition:\n  kubectl mcp approve %s -n %s --hash %s\n", r.Name, r.Namespace, r.CurrentHash)
		return
	default:
		fmt.Fprintln(w, "The definition CHANGED. The text of the approved definition is not on record (it was approved")
		fmt.Fprintln(w, "after the importer last replaced it), so the current definition follows in full: compare it with what you approved.")
	}
	current := &mcpv1alpha1.ToolDefinition{Title: r.Title, Description: r.Description}
	if len(r.InputSchema) > 0 {
		current.InputSchema = &apiextensionsv1.JSON{Raw: r.InputSchema}
	}
	fmt.Fprintln(w, "---")
	for _, l := range definitionLines(current) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "---")
	if r.Changed {
		fmt.Fprintf(w, "To approve exactly this definition:\n  kubectl mcp approve %s -n %s --hash %s\n", r.Name, r.Namespace, r.CurrentHash)
	}
}

// toolClient connects to the cluster and resolves the McpTool an argument
// names (object name, or server/remote-name).
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

func getTool(ctx context.Context, c client.Client, ns, name string) (*mcpv1alpha1.McpTool, error) {
	var t mcpv1alpha1.McpTool
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound("McpTool", ns, name)
		}
		return nil, clusterError(err, "reading the McpTool")
	}
	return &t, nil
}

func newDiffCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	cmd := &cobra.Command{
		Use:   "diff TOOL",
		Short: "Show an McpTool's current definition, what is approved, and the hash to approve",
		Example: `  kubectl mcp diff tickets.create-ticket -n agents
  kubectl mcp diff tickets.create-ticket -o jsonpath='{.currentHash}'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, name, err := f.toolClient(s, args[0])
			if err != nil {
				return err
			}
			t, err := getTool(cmd.Context(), c, ns, name)
			if err != nil {
				return err
			}
			r := reviewOf(t)
			obj, err := resultObject("DefinitionReview", r.Namespace, r.Name, r)
			if err != nil {
				return err
			}
			return f.printer.print(s.Out, obj, func(bool) error {
				printReview(s.Out, r)
				return nil
			})
		},
	}
	f.bind(cmd, false)
	return cmd
}

func newApproveCommand(s Streams) *cobra.Command {
	f := newClusterFlags("approved")
	var force bool
	var hash string
	cmd := &cobra.Command{
		Use:   "approve TOOL --hash sha256:...",
		Short: "Approve the definition of an McpTool that you reviewed (see `diff`)",
		Long: "Approve exactly the definition you reviewed: --hash is the current definition hash\n" +
			"that `kubectl mcp diff TOOL` (or `approve TOOL` without --hash) shows. The approval is\n" +
			"refused when the tool's definition is no longer that one, including when it changes\n" +
			"between this command's read and its write.",
		Example:           `  kubectl mcp approve tickets.create-ticket -n agents --hash sha256:…`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, name, err := f.toolClient(s, args[0])
			if err != nil {
				return err
			}
			if hash == "" {
				t, err := getTool(cmd.Context(), c, ns, name)
				if err != nil {
					return err
				}
				printReview(s.Out, reviewOf(t))
				return &exitError{code: ExitFailed, err: errors.New("nothing was approved: review the definition above and pass its hash with --hash")}
			}
			if !definitionHashPattern.MatchString(hash) {
				return usageErr("--hash must be sha256:<64 lowercase hex digits>, as `kubectl mcp diff` prints it")
			}
			if err := approve(cmd.Context(), c, ns, name, hash, force); err != nil {
				return err
			}
			return printChanged(cmd.Context(), s, f, c, ns, []string{name}, func(n string) string { return "mcptool/" + n + " approved " + hash })
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&hash, "hash", "", "The definition hash you reviewed (required to approve).")
	cmd.Flags().BoolVar(&force, "force", false, "Take the field from another manager (for example from Git).")
	return cmd
}

// approve sets spec.approvedDefinitionHash to hash if, and only if, hash
// is the tool's current definition. A write that races a change of the
// tool is refused by the API server and checked again on a fresh read.
func approve(ctx context.Context, c client.Client, ns, name, hash string, force bool) error {
	for range 5 {
		t, err := getTool(ctx, c, ns, name)
		if err != nil {
			return err
		}
		err = approveIfCurrent(ctx, c, t, hash, force)
		if !errors.Is(err, errStale) {
			return err
		}
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%w; try again", errStale)}
}

// approveIfCurrent approves hash on t as read. The write carries t's
// resourceVersion, so it fails with errStale when the tool changed since.
func approveIfCurrent(ctx context.Context, c client.Client, t *mcpv1alpha1.McpTool, hash string, force bool) error {
	switch cur := t.Status.DefinitionHash; {
	case cur == "":
		return &exitError{code: ExitFailed, err: errors.New("no definition has been imported yet")}
	case cur != hash:
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w: the current definition is %s, not %s; review it again with `kubectl mcp diff %s`", ErrDefinitionChanged, cur, hash, t.Name)}
	}
	spec, err := ownedSpec(t)
	if err != nil {
		return err
	}
	spec.WithApprovedDefinitionHash(hash)
	obj := mcpac.McpTool(t.Name, t.Namespace).WithResourceVersion(t.ResourceVersion).WithSpec(spec)
	opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	err = c.Apply(ctx, obj, opts...)
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err) && !isFieldManagerConflict(err):
		return errStale
	case apierrors.IsConflict(err):
		return &exitError{code: ExitFailed, err: fmt.Errorf("another manager owns this field (change it there, for example in Git, or use --force): %w", err)}
	}
	return err
}

func isFieldManagerConflict(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			return true
		}
	}
	return false
}
