package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/review"
)

// clusterFlags are the kubectl connection flags plus the output flags.
type clusterFlags struct {
	config        *genericclioptions.ConfigFlags
	allNamespaces bool
	printer       *printFlags
}

func newClusterFlags(operation string) *clusterFlags {
	return &clusterFlags{config: genericclioptions.NewConfigFlags(true), printer: newPrintFlags(operation)}
}

func (f *clusterFlags) bind(cmd *cobra.Command, withAll bool) {
	f.config.AddFlags(cmd.Flags())
	if withAll {
		cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "Act in every namespace.")
	}
	f.printer.bind(cmd)
}

// client connects to the cluster the kubeconfig flags name and returns the
// namespace to act in. Every failure names the flag that fixes it.
func (f *clusterFlags) client(s Streams) (client.Client, string, error) {
	if err := f.printer.validate(); err != nil {
		return nil, "", err
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
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", &exitError{code: ExitFailed, err: fmt.Errorf("no cluster configured: set KUBECONFIG or use --kubeconfig/--context: %w", err)}
		}
		return nil, "", &exitError{code: ExitFailed, err: fmt.Errorf("cannot load the kubeconfig: check --kubeconfig/--context: %w", err)}
	}
	ns, _, err := f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", &exitError{code: ExitFailed, err: fmt.Errorf("cannot read the namespace from the kubeconfig: check --kubeconfig/--context or use -n/--namespace: %w", err)}
	}
	if ns == "" && !f.allNamespaces {
		return nil, "", usageErr("no namespace given: use -n/--namespace")
	}
	// A client that can also watch, for `approvals --watch` and `console`.
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", clusterError(err, "connecting to the cluster")
	}
	return c, ns, nil
}

// clusterError says which flag fixes a failed API call; every such
// failure is the operation failing (exit 1).
func clusterError(err error, doing string) error {
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		err = fmt.Errorf("%s: the cluster refused your credentials: check --context/--user/--as: %w", doing, err)
	case unreachable(err):
		err = fmt.Errorf("%s: cannot reach the cluster: check --kubeconfig/--context/--server: %w", doing, err)
	default:
		err = fmt.Errorf("%s: %w", doing, err)
	}
	return &exitError{code: ExitFailed, err: err}
}

// unreachable says the request never got an answer from the API server.
func unreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) || utilnet.IsConnectionRefused(err)
}

// notFound says where an object was looked for and how to look elsewhere.
func notFound(kind, ns, name string) error {
	return &exitError{code: ExitFailed, err: fmt.Errorf("%s %s not found in namespace %s: check -n/--namespace", kind, name, ns)}
}

// requestResult is one server's outcome of an import or test request.
type requestResult struct {
	// Namespace and Name are the McpServer's; printed, they are the
	// result's metadata.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
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
	kind       string
	annotation string
	handled    func(*mcpv1alpha1.McpServer) string
	condition  string
	result     func(*mcpv1alpha1.McpServer, *requestResult)
}

var importRequest = requestKind{
	verb:       "import",
	kind:       "ImportResult",
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
	kind:       "TestResult",
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
	f := newClusterFlags("")
	var all bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Example: fmt.Sprintf(`  kubectl mcp %[1]s tickets -n agents
  kubectl mcp %[1]s --all -A -o json
  kubectl mcp %[1]s tickets -o jsonpath='{.items[0].result}'`, k.verb),
		ValidArgsFunction: completeServers(s, f),
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
			results, err := requestAndWait(ctx, s, c, k, targets, timeout)
			if err != nil {
				return err
			}
			list, err := requestList(k, results)
			if err != nil {
				return err
			}
			if err := f.printer.print(s.Out, list, func(wide bool) error { return printResults(s, results, wide) }); err != nil {
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
		return nil, clusterError(err, "listing McpServers")
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
func requestAndWait(ctx context.Context, s Streams, c client.Client, k requestKind, targets []types.NamespacedName, timeout time.Duration) ([]requestResult, error) {
	stamp := time.Now().UTC().Format(time.RFC3339Nano)
	results := make([]requestResult, len(targets))
	pending := map[int]bool{}
	for i, t := range targets {
		results[i] = requestResult{Namespace: t.Namespace, Name: t.Name}
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, k.annotation, stamp)))
		srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}}
		if err := c.Patch(ctx, srv, patch); err != nil {
			// Without the cluster no server can be asked: that is one
			// failure, not one per server.
			if unreachable(err) {
				return nil, clusterError(err, "asking the operator")
			}
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
	return results, nil
}

func requestError(err error) string {
	if apierrors.IsNotFound(err) {
		return "no such McpServer in this namespace (check -n/--namespace)"
	}
	return clusterError(err, "asking the operator").Error()
}

// requestList is the results as a List of ImportResult or TestResult
// objects, named after their McpServers.
func requestList(k requestKind, results []requestResult) (*unstructured.UnstructuredList, error) {
	items := make([]*unstructured.Unstructured, 0, len(results))
	for _, r := range results {
		fields := r
		fields.Namespace, fields.Name = "", ""
		u, err := resultObject(k.kind, r.Namespace, r.Name, fields)
		if err != nil {
			return nil, err
		}
		items = append(items, u)
	}
	return resultList(items, nil), nil
}

// printResults is the table; wide does not shorten the message.
func printResults(s Streams, results []requestResult, wide bool) error {
	msgLen := 80
	if wide {
		msgLen = 4096
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tRESULT\tREASON\tTOOLS\tSKIPPED\tLATENCY\tMESSAGE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.Result, dash(r.Reason), count(r.Tools), count(r.Skipped), dash(r.Latency), review.OneLine(r.Message, msgLen))
	}
	return tw.Flush()
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

// toolRow is one line of the McpTool table.
type toolRow struct {
	Namespace  string
	Name       string
	LocalName  string
	Server     string
	RemoteName string
	Enabled    bool
	DataClass  string
	Approval   bool
	Ready      string
	Reason     string
	Message    string
	// DefinitionHash is the current definition, as `approve --hash` takes it.
	DefinitionHash string
}

// listTools lists the catalog's McpTools (of one McpServer when server is
// set); the tools command runs it when not given a URL. -o prints the
// McpTool objects themselves.
func listTools(cmd *cobra.Command, s Streams, f *clusterFlags, server string) error {
	c, ns, err := f.client(s)
	if err != nil {
		return err
	}
	opts := []client.ListOption{}
	if !f.allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	if server != "" {
		if !f.allNamespaces {
			// A name that is not a server is a mistake to report, not an
			// empty list.
			if err := c.Get(cmd.Context(), types.NamespacedName{Namespace: ns, Name: server}, &mcpv1alpha1.McpServer{}); err != nil {
				if apierrors.IsNotFound(err) {
					return notFound("McpServer", ns, server)
				}
				return clusterError(err, "reading the McpServer")
			}
		}
		opts = append(opts, client.MatchingLabels{mcpv1alpha1.LabelServer: server})
	}
	var list mcpv1alpha1.McpToolList
	if err := c.List(cmd.Context(), &list, opts...); err != nil {
		return clusterError(err, "listing McpTools")
	}
	sort.Slice(list.Items, func(i, j int) bool {
		if list.Items[i].Namespace != list.Items[j].Namespace {
			return list.Items[i].Namespace < list.Items[j].Namespace
		}
		return list.Items[i].Name < list.Items[j].Name
	})
	objs := make([]runtime.Object, 0, len(list.Items))
	rows := make([]toolRow, 0, len(list.Items))
	for i := range list.Items {
		t := &list.Items[i]
		t.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpTool"))
		objs = append(objs, t)
		_, approval := governance.Recorded(t)
		r := toolRow{Namespace: t.Namespace, Name: t.Name, LocalName: t.Status.LocalName, Server: t.Spec.ServerRef.Name, Enabled: t.Spec.Enabled,
			DataClass: string(t.Status.EffectiveDataClass), Approval: approval, Ready: "Unknown"}
		if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
			r.Ready, r.Reason, r.Message = string(c.Status), c.Reason, c.Message
		}
		r.RemoteName, r.DefinitionHash = t.Spec.RemoteName, t.Status.DefinitionHash
		rows = append(rows, r)
	}
	out, err := objectList(objs)
	if err != nil {
		return err
	}
	if !f.allNamespaces && server == "" {
		// The tools other namespaces share with this one, as its agents
		// see them; the table only: -o prints this namespace's objects.
		shared, err := sharedToolRows(cmd.Context(), c, ns)
		if err != nil {
			return err
		}
		rows = append(rows, shared...)
	}
	return f.printer.print(s.Out, out, func(wide bool) error {
		tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
		if wide {
			fmt.Fprintln(tw, "NAMESPACE\tNAME\tSERVER\tREMOTE NAME\tLOCAL NAME\tENABLED\tCLASS\tAPPROVAL\tREADY\tREASON\tDEFINITION\tMESSAGE")
		} else {
			fmt.Fprintln(tw, "NAMESPACE\tNAME\tLOCAL NAME\tENABLED\tCLASS\tAPPROVAL\tREADY\tREASON")
		}
		for _, r := range rows {
			if wide {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%t\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.Server, review.OneLine(r.RemoteName, 128), dash(r.LocalName), r.Enabled,
					dash(r.DataClass), r.Approval, r.Ready, dash(r.Reason), dash(r.DefinitionHash), dash(review.OneLine(r.Message, 4096)))
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%t\t%s\t%s\n", r.Namespace, r.Name, dash(r.LocalName), r.Enabled, dash(r.DataClass), r.Approval, r.Ready, dash(r.Reason))
		}
		return tw.Flush()
	})
}

// printChanged prints the McpTools a command changed: by default one line
// each (`mcptool/NAME OPERATION`), with -o the objects as they are now.
func printChanged(ctx context.Context, s Streams, f *clusterFlags, c client.Client, ns string, names []string, line func(name string) string) error {
	return printChangedObjects(ctx, s, f, c, ns, names, line, func() client.Object { return &mcpv1alpha1.McpTool{} }, mcpv1alpha1.GroupVersion.WithKind("McpTool"))
}

// printChangedFeatures is printChanged for McpPrompts and McpResources,
// names by kind; line is given kind/name in lower case.
func printChangedFeatures(ctx context.Context, s Streams, f *clusterFlags, c client.Client, ns string, names map[string][]string, line func(ref string) string) error {
	for _, kind := range []string{review.KindPrompt, review.KindResource} {
		if len(names[kind]) == 0 {
			continue
		}
		newObj := func() client.Object { return &mcpv1alpha1.McpPrompt{} }
		if kind == review.KindResource {
			newObj = func() client.Object { return &mcpv1alpha1.McpResource{} }
		}
		prefix := strings.ToLower(kind) + "/"
		if err := printChangedObjects(ctx, s, f, c, ns, names[kind], func(n string) string { return line(prefix + n) }, newObj, mcpv1alpha1.GroupVersion.WithKind(kind)); err != nil {
			return err
		}
	}
	return nil
}

// printChangedObjects is printChanged for objects of any kind.
func printChangedObjects(ctx context.Context, s Streams, f *clusterFlags, c client.Client, ns string, names []string, line func(name string) string,
	newObj func() client.Object, gvk schema.GroupVersionKind) error {
	if f.printer.format() == "" || f.printer.format() == "wide" {
		for _, n := range names {
			fmt.Fprintln(s.Out, line(n))
		}
		return nil
	}
	objs := make([]runtime.Object, 0, len(names))
	for _, n := range names {
		o := newObj()
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, o); err != nil {
			return clusterError(err, "reading the changed "+gvk.Kind)
		}
		o.GetObjectKind().SetGroupVersionKind(gvk)
		objs = append(objs, o)
	}
	list, err := objectList(objs)
	if err != nil {
		return err
	}
	return f.printer.print(s.Out, list, nil)
}

func newEnableCommand(s Streams, enable bool) *cobra.Command {
	verb := "enable"
	if !enable {
		verb = "disable"
	}
	f := newClusterFlags(verb + "d")
	var force bool
	cmd := &cobra.Command{
		Use:   verb + " TOOL...",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " McpTools (by object name, SERVER/REMOTE_NAME, or the name agents see), McpPrompts and McpResources (mcpprompt/NAME, mcpresource/NAME)",
		Example: fmt.Sprintf(`  kubectl mcp %[1]s tickets/create_ticket -n agents
  kubectl mcp %[1]s mcp_tickets_create_ticket -n agents
  kubectl mcp %[1]s tickets.create-ticket tickets.close-ticket -o name
  kubectl mcp %[1]s mcpprompt/docs.review mcpresource/docs.r-0a1b2c3d4e5f60718293 -n agents`, verb),
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTools(s, f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			var errs []error
			var done []string
			features := map[string][]string{}
			for _, a := range args {
				if kind, name, ok := review.FeatureKindOf(a); ok {
					if err := review.SetFeatureEnabled(cmd.Context(), c, kind, ns, name, enable, force); err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", a, reviewErr(err)))
						continue
					}
					features[kind] = append(features[kind], name)
					continue
				}
				name, err := resolveTool(a)
				if err == nil {
					err = toolErr(cmd.Context(), c, ns, a, review.SetEnabled(cmd.Context(), c, ns, name, enable, force))
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", a, err))
					continue
				}
				done = append(done, name)
			}
			if err := printChanged(cmd.Context(), s, f, c, ns, done, func(n string) string { return "mcptool/" + n + " " + verb + "d" }); err != nil {
				errs = append(errs, err)
			}
			if err := printChangedFeatures(cmd.Context(), s, f, c, ns, features, func(ref string) string { return ref + " " + verb + "d" }); err != nil {
				errs = append(errs, err)
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
