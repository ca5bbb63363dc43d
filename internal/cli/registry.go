package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/semver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/registry"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/internal/version"
)

// Approval choices of `registry import --approval`.
const (
	approvalRequired    = "required"
	approvalNotRequired = "not-required"
)

// registryFlags name the registry a command reads.
type registryFlags struct {
	url     string
	timeout time.Duration
}

func (f *registryFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "registry", registry.OfficialURL, "The MCP registry (v0.1 API) to read: the official one, or a compatible subregistry.")
	cmd.Flags().DurationVar(&f.timeout, "registry-timeout", registry.DefaultTimeout, "How long one request to the registry may take.")
}

func (f *registryFlags) client() (*registry.Client, error) {
	c, err := registry.NewClient(f.url, registry.Options{Timeout: f.timeout, UserAgent: "kubectl-mcp/" + version.Get()})
	if err != nil {
		return nil, usageErr("--registry: %v", err)
	}
	return c, nil
}

// registryErr makes a registry failure the operation failing, with what
// fixes it where something does.
func registryErr(err error, name string) error {
	var e *registry.Error
	if errors.As(err, &e) {
		switch e.Reason {
		case registry.ReasonNotFound:
			if name != "" {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%w: the registry holds no server %s (or not that version): check the name with `kubectl mcp registry search`", err, review.OneLine(name, 200))}
			}
		case registry.ReasonRedirect, registry.ReasonUnreachable, registry.ReasonTimeout:
			return &exitError{code: ExitFailed, err: fmt.Errorf("%w: check --registry (and --registry-timeout)", err)}
		}
	}
	return &exitError{code: ExitFailed, err: err}
}

func newRegistryCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Find servers in an MCP registry and import them as McpServer drafts",
		Long: "kubectl mcp registry reads the official MCP Registry (v0.1 API) or a compatible\n" +
			"subregistry. `import` writes an McpServer for a remote server; its tools arrive\n" +
			"disabled, like every imported tool. " + registryWarning + "\n\n" +
			"`outdated` reports McpServers whose recorded registry version is older than the\n" +
			"registry's latest; nothing is ever updated by itself.",
	}
	cmd.AddCommand(newRegistrySearchCommand(s), newRegistryShowCommand(s), newRegistryImportCommand(s), newRegistryOutdatedCommand(s))
	return cmd
}

// registryWarning is registry.NotProven, as a sentence for people.
const registryWarning = "The registry does not prove who controls a remote server's URL:\n" +
	"an entry is its publisher's claim, so `import` asks you for the data class of what the\n" +
	"server returns (--data-class) and whether calls need approval (--approval)."

// registryServer is one registry entry as printed with -o.
type registryServer struct {
	Server     registry.ServerDetail `json:"server"`
	Status     string                `json:"status"`
	IsLatest   bool                  `json:"isLatest"`
	Importable string                `json:"importable"`
	Versions   []registryVersion     `json:"versions,omitempty"`
}

type registryVersion struct {
	Version  string `json:"version"`
	Status   string `json:"status"`
	IsLatest bool   `json:"isLatest,omitempty"`
}

func newRegistryServer(r *registry.ServerResponse) registryServer {
	imp := "yes"
	if err := registry.Importable(r); err != nil {
		imp = "no: " + registryDetail(err)
	}
	r.Server.Packages = nil
	return registryServer{Server: r.Server, Status: r.Status(), IsLatest: r.IsLatest(), Importable: imp}
}

func registryDetail(err error) string {
	var e *registry.Error
	if errors.As(err, &e) && e.Detail != "" {
		return e.Detail
	}
	return err.Error()
}

func newRegistrySearchCommand(s Streams) *cobra.Command {
	var rf registryFlags
	p := newPrintFlags("")
	var limit int
	cmd := &cobra.Command{
		Use:   "search [TEXT]",
		Short: "List the registry's servers (latest versions), those whose name holds TEXT",
		Example: `  kubectl mcp registry search weather
  kubectl mcp registry search --registry https://registry.example.internal -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.validate(); err != nil {
				return err
			}
			if limit < 1 {
				return usageErr("--limit must be at least 1")
			}
			c, err := rf.client()
			if err != nil {
				return err
			}
			o := registry.ListOptions{Version: "latest"}
			if len(args) == 1 {
				o.Search = args[0]
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			found, err := c.List(ctx, o, limit)
			if err != nil {
				return registryErr(err, "")
			}
			items := make([]*unstructured.Unstructured, 0, len(found))
			rows := make([]registryServer, 0, len(found))
			for i := range found {
				rs := newRegistryServer(&found[i])
				rows = append(rows, rs)
				u, err := resultObject("RegistryServer", "", rs.Server.Name, rs)
				if err != nil {
					return err
				}
				items = append(items, u)
			}
			return p.print(s.Out, resultList(items, map[string]any{"registry": c.URL()}), func(wide bool) error {
				return printRegistryServers(s.Out, rows, wide)
			})
		},
	}
	rf.bind(cmd)
	p.bind(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "Show at most this many servers.")
	return cmd
}

func printRegistryServers(w io.Writer, rows []registryServer, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := "NAME\tVERSION\tSTATUS\tIMPORTABLE\tDESCRIPTION"
	if wide {
		header += "\tREMOTES"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		imp := r.Importable
		if !wide && imp != "yes" {
			imp = "no"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", review.OneLine(r.Server.Name, 200), review.OneLine(r.Server.Version, 40), r.Status, review.OneLine(imp, 200), review.OneLine(r.Server.Description, 60))
		if wide {
			var urls []string
			for _, rm := range r.Server.Remotes {
				urls = append(urls, review.OneLine(rm.Type+" "+rm.URL, 200))
			}
			line += "\t" + dash(strings.Join(urls, ", "))
		}
		fmt.Fprintln(tw, line)
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "(no servers found)")
	}
	return tw.Flush()
}

func newRegistryShowCommand(s Streams) *cobra.Command {
	var rf registryFlags
	p := newPrintFlags("")
	var ver string
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one registry server: its remotes, what it asks for, and its versions",
		Example: `  kubectl mcp registry show io.github.user/weather
  kubectl mcp registry show io.github.user/weather --version 1.0.1 -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.validate(); err != nil {
				return err
			}
			c, err := rf.client()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			r, err := c.Version(ctx, args[0], ver)
			if err != nil {
				return registryErr(err, args[0])
			}
			versions, err := c.Versions(ctx, args[0])
			if err != nil {
				return registryErr(err, args[0])
			}
			remotes := r.Server.Remotes
			rs := newRegistryServer(r)
			for i := range versions {
				rs.Versions = append(rs.Versions, registryVersion{Version: versions[i].Server.Version, Status: versions[i].Status(), IsLatest: versions[i].IsLatest()})
			}
			u, err := resultObject("RegistryServer", "", rs.Server.Name, rs)
			if err != nil {
				return err
			}
			return p.print(s.Out, u, func(bool) error { return printRegistryServer(s.Out, rs, remotes, len(r.Server.Packages)) })
		},
	}
	rf.bind(cmd)
	p.bind(cmd)
	cmd.Flags().StringVar(&ver, "version", "latest", "The version to show.")
	return cmd
}

func printRegistryServer(w io.Writer, r registryServer, remotes []registry.Remote, packages int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	d := r.Server
	line("Name", review.OneLine(d.Name, 200))
	if d.Title != "" {
		line("Title", review.OneLine(d.Title, 100))
	}
	state := r.Status
	if r.IsLatest {
		state = "latest, " + state
	}
	line("Version", review.OneLine(d.Version, 100)+" ("+state+")")
	line("Description", review.OneLine(d.Description, 200))
	if d.Repository != nil {
		line("Repository", review.OneLine(d.Repository.URL, 300))
	}
	if d.WebsiteURL != "" {
		line("Website", review.OneLine(d.WebsiteURL, 300))
	}
	line("Importable", review.OneLine(r.Importable, 300))
	_ = tw.Flush()
	fmt.Fprintln(w, "Remotes:")
	if len(remotes) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, rm := range remotes {
		note := ""
		if rm.Type != registry.TransportStreamableHTTP {
			note = " (not imported: the operator speaks Streamable HTTP only)"
		}
		fmt.Fprintf(w, "  %s %s%s\n", review.OneLine(rm.Type, 40), review.OneLine(rm.URL, 300), note)
		for _, h := range rm.Headers {
			fmt.Fprintf(w, "    header %s%s\n", review.OneLine(h.Name, 64), inputFlags(h))
		}
		names := make([]string, 0, len(rm.Variables))
		for k := range rm.Variables {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "    variable %s%s\n", review.OneLine(k, 64), inputFlags(rm.Variables[k]))
		}
	}
	if packages > 0 {
		fmt.Fprintf(w, "Packages: %d (not imported: the operator calls remote servers, it runs no local software)\n", packages)
	}
	if len(r.Versions) > 0 {
		vs := make([]string, 0, len(r.Versions))
		for _, v := range r.Versions {
			note := v.Status
			if v.IsLatest {
				note = "latest, " + note
			}
			vs = append(vs, review.OneLine(v.Version, 60)+" ("+note+")")
		}
		fmt.Fprintf(w, "Versions: %s\n", strings.Join(vs, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, registryWarning)
	return nil
}

func inputFlags(in registry.Input) string {
	var f []string
	if in.IsRequired {
		f = append(f, "required")
	}
	if in.IsSecret {
		f = append(f, "secret")
	}
	if len(f) == 0 {
		return ""
	}
	return " (" + strings.Join(f, ", ") + ")"
}

func newRegistryImportCommand(s Streams) *cobra.Command {
	var rf registryFlags
	f := newClusterFlags("created")
	var (
		ver, name, dataClass, approval, dryRun string
		remote                                 int
	)
	cmd := &cobra.Command{
		Use:   "import NAME --data-class CLASS --approval required|not-required",
		Short: "Write an McpServer for a registry server's remote; its tools arrive disabled",
		Long: "import turns one registry entry's Streamable HTTP remote into an McpServer: spec.url\n" +
			"is the remote's URL, the registry's URL, the server's name and its version are recorded\n" +
			"in the annotations mcp.catalog.dev/registry-url, -name and -version, and no credential\n" +
			"is set. It creates the object (never replacing one that exists), except with -o yaml or\n" +
			"-o json: then it prints it for a GitOps repository and creates nothing. Its tools are\n" +
			"imported disabled, like every imported tool, until someone enables them.\n\n" +
			registryWarning,
		Example: `  kubectl mcp registry import io.github.user/weather --data-class Internal --approval required -n agents
  kubectl mcp registry import io.github.user/weather --data-class Public --approval required -o yaml > weather.yaml
  kubectl mcp registry import io.github.user/weather --version 1.0.1 --name weather-v1 --data-class Confidential --approval required`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.printer.validate(); err != nil {
				return err
			}
			choices, err := importChoices(dataClass, approval)
			if err != nil {
				return err
			}
			choices.Name, choices.Remote = name, remote
			if dryRun != "none" && dryRun != "server" {
				return usageErr("--dry-run must be none or server (-o yaml prints the object without sending it)")
			}
			c, err := rf.client()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			r, err := c.Version(ctx, args[0], ver)
			if err != nil {
				return registryErr(err, args[0])
			}
			// -o json or yaml: the manifest for GitOps, nothing created.
			printing := f.printer.format() == "yaml" || f.printer.format() == "json"
			var kc client.Client
			if !printing {
				var ns string
				if kc, ns, err = f.client(s); err != nil {
					return err
				}
				choices.Namespace = ns
			} else if f.config.Namespace != nil {
				choices.Namespace = *f.config.Namespace
			}
			d, err := registry.Manifest(c.URL(), r, choices)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			for _, n := range d.Notes {
				fmt.Fprintln(s.Err, "note:", review.OneLine(n, 400))
			}
			if printing {
				u, err := draftObject(d.Server)
				if err != nil {
					return err
				}
				return f.printer.print(s.Out, u, nil)
			}
			opts := []client.CreateOption{client.FieldOwner("kubectl-mcp")}
			if dryRun == "server" {
				opts = append(opts, client.DryRunAll)
			}
			if err := kc.Create(ctx, d.Server, opts...); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return &exitError{code: ExitFailed, err: fmt.Errorf("McpServer %s already exists in namespace %s: an import never replaces one; choose another name with --name", d.Server.Name, d.Server.Namespace)}
				}
				return clusterError(err, "creating the McpServer")
			}
			if format := f.printer.format(); format != "" && format != "wide" {
				// Create decodes the answer into the object, without its kind.
				d.Server.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpServer"))
				u, err := draftObject(d.Server)
				if err != nil {
					return err
				}
				return f.printer.print(s.Out, u, nil)
			}
			suffix := ""
			if dryRun == "server" {
				suffix = " (server dry run)"
			}
			fmt.Fprintf(s.Out, "mcpserver.mcp.catalog.dev/%s created%s from %s %s; its tools arrive disabled: review and enable them with `kubectl mcp enable`\n",
				d.Server.Name, suffix, review.OneLine(r.Server.Name, 200), review.OneLine(r.Server.Version, 60))
			return nil
		},
	}
	rf.bind(cmd)
	f.bind(cmd, false)
	cmd.Flags().StringVar(&ver, "version", "latest", "The registry version to import.")
	cmd.Flags().StringVar(&name, "name", "", "The McpServer's name (default: from the registry name, as a DNS label).")
	cmd.Flags().StringVar(&dataClass, "data-class", "", "Required: the data class of what the server's tools return (Public, Internal, Confidential, Restricted).")
	cmd.Flags().StringVar(&approval, "approval", "", "Required: whether calls need a person's approval (required or not-required).")
	cmd.Flags().IntVar(&remote, "remote", 0, "Which of the entry's streamable-http remotes to use, from 0.")
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", "none, or server: the API server checks the object and stores nothing.")
	return cmd
}

// importChoices reads the two choices only a person can make, refusing
// to guess either.
func importChoices(dataClass, approval string) (registry.Choices, error) {
	var c registry.Choices
	var missing []string
	if dataClass == "" {
		missing = append(missing, "--data-class")
	}
	if approval == "" {
		missing = append(missing, "--approval")
	}
	if len(missing) > 0 {
		return c, usageErr("%s required: %s", strings.Join(missing, " and ")+map[bool]string{true: " is", false: " are"}[len(missing) == 1], registry.NotProven)
	}
	for _, dc := range []mcpv1alpha1.DataClass{mcpv1alpha1.DataClassPublic, mcpv1alpha1.DataClassInternal, mcpv1alpha1.DataClassConfidential, mcpv1alpha1.DataClassRestricted} {
		if strings.EqualFold(dataClass, string(dc)) {
			c.DataClass = dc
		}
	}
	if c.DataClass == "" {
		return c, usageErr("--data-class must be Public, Internal, Confidential or Restricted")
	}
	switch approval {
	case approvalRequired:
		yes := true
		c.ApprovalRequired = &yes
	case approvalNotRequired:
		no := false
		c.ApprovalRequired = &no
	default:
		return c, usageErr("--approval must be %s or %s", approvalRequired, approvalNotRequired)
	}
	return c, nil
}

// draftObject is the McpServer as a manifest: no status, no creation
// timestamp.
func draftObject(s *mcpv1alpha1.McpServer) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	// Empty settings the API server defaults anyway.
	for _, f := range []string{"import", "healthCheck"} {
		if m, ok, _ := unstructured.NestedMap(u.Object, "spec", f); ok && len(m) == 0 {
			unstructured.RemoveNestedField(u.Object, "spec", f)
		}
	}
	return u, nil
}

// versionCheck is one McpServer's recorded registry version next to the
// registry's latest.
type versionCheck struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	RegistryName string `json:"registryName"`
	Registry     string `json:"registry"`
	Version      string `json:"version"`
	Latest       string `json:"latest,omitempty"`
	// Result: Current, NewerAvailable, Deprecated, Deleted, NotFound,
	// OtherRegistry (not asked) or Failed.
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
}

func newRegistryOutdatedCommand(s Streams) *cobra.Command {
	var rf registryFlags
	f := newClusterFlags("")
	cmd := &cobra.Command{
		Use:   "outdated",
		Short: "Report McpServers whose recorded registry version is older than the registry's latest",
		Long: "outdated reads the McpServers `kubectl mcp registry import` created (annotation\n" +
			"mcp.catalog.dev/registry-name) and asks the registry, --registry, for each one's versions.\n" +
			"It only reports: a newer version changes nothing until a person imports it (with\n" +
			"-o yaml, to review the difference) and applies it. Servers recorded from another\n" +
			"registry are listed without asking it; name that registry with --registry.",
		Example: `  kubectl mcp registry outdated -n agents
  kubectl mcp registry outdated -A -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := rf.client()
			if err != nil {
				return err
			}
			kc, ns, err := f.client(s)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			var list mcpv1alpha1.McpServerList
			opts := []client.ListOption{}
			if !f.allNamespaces {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := kc.List(ctx, &list, opts...); err != nil {
				return clusterError(err, "listing McpServers")
			}
			checks := outdated(ctx, c, list.Items)
			items := make([]*unstructured.Unstructured, 0, len(checks))
			failed := 0
			for _, ch := range checks {
				if ch.Result == "Failed" {
					failed++
				}
				u, err := resultObject("RegistryVersionCheck", ch.Namespace, ch.Name, ch)
				if err != nil {
					return err
				}
				items = append(items, u)
			}
			if err := f.printer.print(s.Out, resultList(items, nil), func(bool) error { return printVersionChecks(s.Out, checks) }); err != nil {
				return err
			}
			if failed > 0 {
				return &exitError{code: ExitFailed, err: fmt.Errorf("the registry did not answer for %d of %d McpServers", failed, len(checks))}
			}
			return nil
		},
	}
	rf.bind(cmd)
	f.bind(cmd, true)
	return cmd
}

// outdated checks each imported server against the registry c reads; it
// changes nothing.
func outdated(ctx context.Context, c *registry.Client, servers []mcpv1alpha1.McpServer) []versionCheck {
	var out []versionCheck
	for i := range servers {
		srv := &servers[i]
		a := srv.Annotations
		name := a[mcpv1alpha1.AnnotationRegistryName]
		if name == "" {
			continue
		}
		ch := versionCheck{Namespace: srv.Namespace, Name: srv.Name, RegistryName: name, Registry: a[mcpv1alpha1.AnnotationRegistryURL], Version: a[mcpv1alpha1.AnnotationRegistryVersion]}
		recorded, err := registry.NormalizeURL(ch.Registry)
		if err != nil || recorded != c.URL() {
			ch.Result, ch.Message = "OtherRegistry", "recorded from another registry: name it with --registry"
			out = append(out, ch)
			continue
		}
		versions, err := c.Versions(ctx, name)
		switch {
		case registry.IsReason(err, registry.ReasonNotFound):
			ch.Result, ch.Message = "NotFound", "the registry no longer lists this server"
		case err != nil:
			ch.Result, ch.Message = "Failed", registryDetail(err)
			var e *registry.Error
			if errors.As(err, &e) {
				ch.Message = string(e.Reason)
			}
		default:
			ch.Latest, ch.Result, ch.Message = compareVersions(ch.Version, versions)
		}
		out = append(out, ch)
	}
	return out
}

// compareVersions finds the registry's latest version (the one it marks
// latest, else the first: versions come newest first) and says how the
// recorded one stands. Semantic versions are compared as such; other
// strings only as equal or not.
func compareVersions(recorded string, versions []registry.ServerResponse) (latest, result, message string) {
	if len(versions) == 0 {
		return "", "NotFound", "the registry lists no version of this server"
	}
	latest = versions[0].Server.Version
	for i := range versions {
		if versions[i].IsLatest() {
			latest = versions[i].Server.Version
			break
		}
	}
	newer := latest != recorded
	if a, b := "v"+latest, "v"+recorded; semver.IsValid(a) && semver.IsValid(b) {
		newer = semver.Compare(a, b) > 0
	}
	if newer {
		return latest, "NewerAvailable", "import it with --version " + latest + " -o yaml to review, then apply"
	}
	for i := range versions {
		if versions[i].Server.Version == recorded {
			switch st := versions[i].Status(); st {
			case registry.StatusDeprecated:
				return latest, "Deprecated", review.OneLine(versions[i].Meta.Official.StatusMessage, 200)
			case registry.StatusDeleted:
				return latest, "Deleted", "the registry deleted this version"
			}
		}
	}
	return latest, "Current", ""
}

func printVersionChecks(w io.Writer, checks []versionCheck) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tREGISTRY NAME\tVERSION\tLATEST\tRESULT\tMESSAGE")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Name, review.OneLine(c.RegistryName, 200), dash(review.OneLine(c.Version, 60)),
			dash(review.OneLine(c.Latest, 60)), c.Result, review.OneLine(c.Message, 200))
	}
	if len(checks) == 0 {
		fmt.Fprintln(tw, "(no McpServer was imported from a registry)")
	}
	return tw.Flush()
}
