package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// FieldManager owns what kubectl-mcp writes: spec.enabled and
// spec.approvedDefinitionHash of McpTools it is told to change.
const FieldManager = "kubectl-mcp"

// clusterFlags are the kubectl connection flags plus the output format.
type clusterFlags struct {
	config        *genericclioptions.ConfigFlags
	allNamespaces bool
	output        string
}

func newClusterFlags() *clusterFlags {
	return &clusterFlags{config: genericclioptions.NewConfigFlags(true)}
}

func (f *clusterFlags) bind(cmd *cobra.Command, withAll bool) {
	f.config.AddFlags(cmd.Flags())
	if withAll {
		cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "Act in every namespace.")
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "Output format: table, json or yaml.")
}

func (f *clusterFlags) client(s Streams) (client.Client, string, error) {
	if f.output != "table" && f.output != "json" && f.output != "yaml" {
		return nil, "", usageErr("--output must be table, json or yaml")
	}
	if s.NewKubeClient != nil {
		c, ns := s.NewKubeClient()
		if f.config.Namespace != nil && *f.config.Namespace != "" {
			ns = *f.config.Namespace
		}
		return c, ns, nil
	}
	cfg, err := f.config.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the namespace: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, ns, nil
}

func (f *clusterFlags) print(s Streams, v any, table func()) error {
	switch f.output {
	case "json":
		return writeJSON(s.Out, v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = s.Out.Write(b)
		return err
	}
	table()
	return nil
}

// requestResult is one server's outcome of an import or test request.
type requestResult struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Result    string `json:"result"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Tools     *int32 `json:"tools,omitempty"`
	Skipped   *int32 `json:"skipped,omitempty"`
	Latency   string `json:"latency,omitempty"`
}

// requestKind describes one annotation-driven request: which annotation
// asks, which status field echoes it, and which condition says how it went.
type requestKind struct {
	verb       string
	annotation string
	handled    func(*mcpv1alpha1.McpServer) string
	condition  string
	result     func(*mcpv1alpha1.McpServer, *requestResult)
}

var importRequest = requestKind{
	verb:       "import",
	annotation: mcpv1alpha1.AnnotationRequestedImportAt,
	handled:    func(s *mcpv1alpha1.McpServer) string { return s.Status.LastHandledImportAt },
	condition:  mcpv1alpha1.ConditionCatalogSynced,
	result: func(s *mcpv1alpha1.McpServer, r *requestResult) {
		if t := s.Status.Tools; t != nil {
			r.Tools, r.Skipped = &t.Imported, &t.Skipped
		}
	},
}

var testRequest = requestKind{
	verb:       "test",
	annotation: mcpv1alpha1.AnnotationRequestedProbeAt,
	handled:    func(s *mcpv1alpha1.McpServer) string { return s.Status.LastHandledProbeAt },
	condition:  mcpv1alpha1.ConditionReachable,
	result: func(s *mcpv1alpha1.McpServer, r *requestResult) {
		if l := s.Status.LastContactLatency; l != nil && r.Result == "Succeeded" {
			r.Latency = l.Duration.String()
		}
	},
}

func newRequestCommand(s Streams, k requestKind, use, short string) *cobra.Command {
	f := newClusterFlags()
	var all bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usageErr("name one or more McpServers, or give --all")
			}
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			targets, err := selectServers(ctx, c, ns, f.allNamespaces, all, args)
			if err != nil {
				return err
			}
			results := requestAndWait(ctx, s, c, k, targets, timeout)
			if err := f.print(s, results, func() { printResults(s, results) }); err != nil {
				return err
			}
			failed := 0
			for _, r := range results {
				if r.Result != "Succeeded" {
					failed++
				}
			}
			if failed > 0 {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%d of %d servers did not %s successfully", failed, len(results), k.verb)}
			}
			return nil
		},
	}
	f.bind(cmd, true)
	cmd.Flags().BoolVar(&all, "all", false, "Act on every McpServer in the namespace (or in every namespace with -A).")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "How long to wait for the operator to act.")
	return cmd
}

func selectServers(ctx context.Context, c client.Client, ns string, allNamespaces, all bool, names []string) ([]types.NamespacedName, error) {
	if !all {
		out := make([]types.NamespacedName, 0, len(names))
		for _, n := range names {
			out = append(out, types.NamespacedName{Namespace: ns, Name: n})
		}
		return out, nil
	}
	var list mcpv1alpha1.McpServerList
	opts := []client.ListOption{}
	if !allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing McpServers: %w", err)
	}
	out := make([]types.NamespacedName, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
	}
	return out, nil
}

// requestAndWait asks every server at once, then waits for each to be
// handled. A server that refuses or does not exist does not stop the
// others.
func requestAndWait(ctx context.Context, s Streams, c client.Client, k requestKind, targets []types.NamespacedName, timeout time.Duration) []requestResult {
	stamp := time.Now().UTC().Format(time.RFC3339Nano)
	results := make([]requestResult, len(targets))
	pending := map[int]bool{}
	for i, t := range targets {
		results[i] = requestResult{Namespace: t.Namespace, Name: t.Name}
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, k.annotation, stamp)))
		srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}}
		if err := c.Patch(ctx, srv, patch); err != nil {
			results[i].Result, results[i].Message = "Failed", requestError(err)
			continue
		}
		pending[i] = true
	}
	deadline := time.Now().Add(timeout)
	lastReport := time.Time{}
	for len(pending) > 0 {
		for i := range pending {
			srv := &mcpv1alpha1.McpServer{}
			if err := c.Get(ctx, targets[i], srv); err != nil {
				results[i].Result, results[i].Message = "Failed", requestError(err)
				delete(pending, i)
				continue
			}
			if k.handled(srv) != stamp {
				if srv.Spec.Suspend {
					results[i].Result, results[i].Reason, results[i].Message = "Failed", mcpv1alpha1.ReasonSuspended, "the server is suspended"
					delete(pending, i)
				}
				continue
			}
			delete(pending, i)
			cond := meta.FindStatusCondition(srv.Status.Conditions, k.condition)
			switch {
			case cond != nil && cond.Status == metav1.ConditionTrue:
				results[i].Result = "Succeeded"
			default:
				results[i].Result = "Failed"
			}
			if cond != nil {
				results[i].Reason, results[i].Message = cond.Reason, cond.Message
			}
			k.result(srv, &results[i])
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			for i := range pending {
				results[i].Result, results[i].Message = "TimedOut", "the operator did not act on the request in time"
			}
			break
		}
		if time.Since(lastReport) > 5*time.Second {
			fmt.Fprintf(s.Err, "waiting for %d of %d servers to %s...\n", len(pending), len(targets), k.verb)
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return results
}

func requestError(err error) string {
	if apierrors.IsNotFound(err) {
		return "no such McpServer"
	}
	return err.Error()
}

func printResults(s Streams, results []requestResult) {
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tRESULT\tREASON\tTOOLS\tSKIPPED\tLATENCY\tMESSAGE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.Result, dash(r.Reason), count(r.Tools), count(r.Skipped), dash(r.Latency), oneLine(r.Message, 80))
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func count(n *int32) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

type toolRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	LocalName string `json:"localName"`
	Server    string `json:"server"`
	Enabled   bool   `json:"enabled"`
	DataClass string `json:"dataClass"`
	Approval  bool   `json:"approvalRequired"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason"`
	// DefinitionHash is the current definition, as `approve --hash` takes it.
	DefinitionHash string `json:"definitionHash,omitempty"`
}

// listTools lists the catalog's McpTools; the tools command runs it when
// given no URL.
func listTools(cmd *cobra.Command, s Streams, f *clusterFlags, server string) error {
	{
		{
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			var list mcpv1alpha1.McpToolList
			opts := []client.ListOption{}
			if !f.allNamespaces {
				opts = append(opts, client.InNamespace(ns))
			}
			if server != "" {
				opts = append(opts, client.MatchingLabels{mcpv1alpha1.LabelServer: server})
			}
			if err := c.List(cmd.Context(), &list, opts...); err != nil {
				return fmt.Errorf("listing McpTools: %w", err)
			}
			rows := make([]toolRow, 0, len(list.Items))
			for _, t := range list.Items {
				r := toolRow{Namespace: t.Namespace, Name: t.Name, LocalName: t.Status.LocalName, Server: t.Spec.ServerRef.Name, Enabled: t.Spec.Enabled,
					DataClass: string(t.Status.EffectiveDataClass), Approval: t.Status.EffectiveApprovalRequired == nil || *t.Status.EffectiveApprovalRequired, Ready: "Unknown",
					DefinitionHash: t.Status.DefinitionHash}
				if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
					r.Ready, r.Reason = string(c.Status), c.Reason
				}
				rows = append(rows, r)
			}
			sort.Slice(rows, func(i, j int) bool {
				if rows[i].Namespace != rows[j].Namespace {
					return rows[i].Namespace < rows[j].Namespace
				}
				return rows[i].Name < rows[j].Name
			})
			return f.print(s, rows, func() {
				tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAMESPACE\tNAME\tLOCAL NAME\tENABLED\tCLASS\tAPPROVAL\tREADY\tREASON")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%t\t%s\t%s\n", r.Namespace, r.Name, dash(r.LocalName), r.Enabled, dash(r.DataClass), r.Approval, r.Ready, dash(r.Reason))
				}
				_ = tw.Flush()
			})
		}
	}
}

// resolveTool accepts an McpTool object name, or SERVER/REMOTE_NAME.
func resolveTool(arg string) (string, error) {
	if server, remote, ok := strings.Cut(arg, "/"); ok {
		name, err := toolname.ObjectName(server, remote)
		if err != nil {
			return "", usageErr("%s: %v", arg, err)
		}
		return name, nil
	}
	return arg, nil
}

// applyToolSpec changes one spec field of an existing McpTool with its own
// field manager. Without --force, a field Git (or anyone) owns is not taken:
// the conflict is reported so the change is made where it belongs.
// ownedSpec is the part of t's spec this plugin's field manager owns,
// with the tool's identity. An apply states every field its manager means to
// keep, so enabling has to carry the approval this manager set earlier, and
// approving the enablement, or each would drop the other.
func ownedSpec(t *mcpv1alpha1.McpTool) (*mcpac.McpToolSpecApplyConfiguration, error) {
	owned, err := mcpac.ExtractMcpTool(t, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("reading the fields %s owns on McpTool %s: %w", FieldManager, t.Name, err)
	}
	spec := owned.Spec
	if spec == nil {
		spec = mcpac.McpToolSpec()
	}
	return spec.WithServerRef(mcpac.LocalObjectReference().WithName(t.Spec.ServerRef.Name)).
		WithRemoteName(t.Spec.RemoteName), nil
}

func applyToolSpec(ctx context.Context, c client.Client, ns, name string, force bool, set func(*mcpac.McpToolSpecApplyConfiguration)) error {
	var t mcpv1alpha1.McpTool
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
		if apierrors.IsNotFound(err) {
			return &exitError{code: ExitFailed, err: fmt.Errorf("McpTool %s/%s not found", ns, name)}
		}
		return err
	}
	spec, err := ownedSpec(&t)
	if err != nil {
		return err
	}
	set(spec)
	opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	if err := c.Apply(ctx, mcpac.McpTool(name, ns).WithSpec(spec), opts...); err != nil {
		if apierrors.IsConflict(err) {
			return &exitError{code: ExitFailed, err: fmt.Errorf("another manager owns this field (change it there, for example in Git, or use --force): %w", err)}
		}
		return err
	}
	return nil
}

func newEnableCommand(s Streams, enable bool) *cobra.Command {
	f := newClusterFlags()
	var force bool
	verb := "enable"
	if !enable {
		verb = "disable"
	}
	cmd := &cobra.Command{
		Use:   verb + " TOOL...",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " McpTools (by object name, or SERVER/REMOTE_NAME)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			var errs []error
			for _, a := range args {
				name, err := resolveTool(a)
				if err == nil {
					err = applyToolSpec(cmd.Context(), c, ns, name, force, func(sp *mcpac.McpToolSpecApplyConfiguration) { sp.WithEnabled(enable) })
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", a, err))
					continue
				}
				fmt.Fprintf(s.Out, "mcptool/%s %sd\n", name, verb)
			}
			return joinExit(errs)
		},
	}
	f.bind(cmd, false)
	cmd.Flags().BoolVar(&force, "force", false, "Take the field from another manager (for example from Git).")
	return cmd
}

func joinExit(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &exitError{code: ExitFailed, err: errors.Join(errs...)}
}
