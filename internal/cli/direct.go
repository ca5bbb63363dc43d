package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/internal/safeurl"
	"github.com/mcp-catalog/operator/internal/secret"
)

// directFlags are the flags of the commands that talk to a server directly.
// A credential is read from a file or an environment variable, never from a
// flag value, so it does not land in shell history or process listings.
type directFlags struct {
	bearerFile, bearerEnv string
	header                string
	headerFile, headerEnv string
	allowHTTPCredential   bool
	allowPrivateNetwork   bool
	timeout               time.Duration
	printer               *printFlags
	maxCatalogBytes       int64
	maxDefinitionBytes    int64
}

func (f *directFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.bearerFile, "bearer-file", "", "Read a bearer token from this file.")
	fl.StringVar(&f.bearerEnv, "bearer-env", "", "Read a bearer token from this environment variable.")
	fl.StringVar(&f.header, "header", "", "Send the credential in this header instead of Authorization.")
	fl.StringVar(&f.headerFile, "header-value-file", "", "Read the --header value from this file.")
	fl.StringVar(&f.headerEnv, "header-value-env", "", "Read the --header value from this environment variable.")
	fl.BoolVar(&f.allowHTTPCredential, "allow-credential-over-http", false, "Allow sending the credential over plain http.")
	fl.BoolVar(&f.allowPrivateNetwork, "allow-private-network", false, "Allow loopback and private addresses.")
	fl.DurationVar(&f.timeout, "timeout", mcp.DefaultTimeout, "Budget of the whole operation.")
	// The operator's defaults: a server that would exhaust the operator
	// cannot exhaust the person checking it either.
	fl.Int64Var(&f.maxCatalogBytes, "max-catalog-bytes", mcp.DefaultMaxCatalogBytes, "Budget in bytes for all tool definitions kept from tools/list.")
	fl.Int64Var(&f.maxDefinitionBytes, "max-definition-bytes", mcp.DefaultMaxDefinitionBytes, "Bound in bytes on one tool definition; a larger one is skipped.")
	f.printer = newPrintFlags("")
	f.printer.bind(cmd)
}

func (f *directFlags) endpoint(s Streams, url string) (mcp.Endpoint, error) {
	ep := mcp.Endpoint{
		Name:                    "command line server",
		URL:                     url,
		AllowInsecureCredential: f.allowHTTPCredential,
		AllowPrivateNetwork:     f.allowPrivateNetwork,
		Timeout:                 f.timeout,
		MaxCatalogBytes:         f.maxCatalogBytes,
		MaxDefinitionBytes:      f.maxDefinitionBytes,
	}
	if f.maxCatalogBytes <= 0 || f.maxDefinitionBytes <= 0 {
		return ep, usageErr("--max-catalog-bytes and --max-definition-bytes must be positive")
	}
	if err := f.printer.validate(); err != nil {
		return ep, err
	}
	sources := 0
	for _, v := range []string{f.bearerFile, f.bearerEnv, f.headerFile, f.headerEnv} {
		if v != "" {
			sources++
		}
	}
	if sources > 1 {
		return ep, usageErr("give at most one of --bearer-file, --bearer-env, --header-value-file, --header-value-env")
	}
	headerMode := f.headerFile != "" || f.headerEnv != ""
	if headerMode != (f.header != "") {
		return ep, usageErr("--header needs --header-value-file or --header-value-env, and they need --header")
	}
	var value string
	switch {
	case f.bearerFile != "" || f.headerFile != "":
		path := f.bearerFile + f.headerFile
		b, err := os.ReadFile(path)
		if err != nil {
			return ep, usageErr("reading the credential file: %v", err)
		}
		value = strings.TrimRight(string(b), "\r\n")
	case f.bearerEnv != "" || f.headerEnv != "":
		name := f.bearerEnv + f.headerEnv
		value = s.getenv(name)
		if value == "" {
			return ep, usageErr("environment variable %s is empty or unset", name)
		}
	default:
		return ep, nil
	}
	if value == "" {
		return ep, usageErr("the credential is empty")
	}
	ep.Credential = &mcp.Credential{Header: f.header, Value: secret.New(value)}
	return ep, nil
}

// refusal names the flag that lifts a refusal of the client's own, when
// one does: a credential over plain http (--allow-credential-over-http),
// a loopback or private address (--allow-private-network). Addresses that
// are never dialled (link-local, metadata) name none.
func (f *directFlags) refusal(err error) error {
	var blocked *egress.BlockedAddressError
	switch {
	case mcp.KindOf(err) == mcp.KindInsecureCredential && !f.allowHTTPCredential:
		return fmt.Errorf("%w; --allow-credential-over-http sends it over plain http anyway (a development server, on a network you trust)", err)
	case mcp.KindOf(err) == mcp.KindBlockedAddress && errors.As(err, &blocked) && blocked.Private && !f.allowPrivateNetwork:
		return fmt.Errorf("%w; --allow-private-network lets this command reach loopback and private addresses", err)
	}
	return err
}

// signalContext ends on Ctrl-C, so an interrupted call is cancelled, not
// abandoned.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt)
}

func newProbeCommand(s Streams) *cobra.Command {
	var f directFlags
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "Handshake with an MCP server and show what it says about itself",
		Example: `  kubectl mcp probe https://tickets.example.com/mcp --bearer-env TICKETS_TOKEN
  kubectl mcp probe https://tickets.example.com/mcp -o jsonpath='{.protocolVersion}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ep, err := f.endpoint(s, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			res, err := s.client(f.allowPrivateNetwork).Probe(ctx, ep)
			if err != nil {
				return f.refusal(err)
			}
			pr := probeJSON(res)
			obj, err := resultObject("ProbeResult", "", pr.Name, pr)
			if err != nil {
				return err
			}
			return f.printer.print(s.Out, obj, func(bool) error { return printProbe(s, res) })
		},
	}
	f.bind(cmd)
	return cmd
}

// printProbe is the probe's table; wide shows nothing more.
func printProbe(s Streams, res *mcp.ProbeResult) error {
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SERVER\t%s\n", review.OneLine(res.Server.Name, 256))
	if res.Server.Title != "" {
		fmt.Fprintf(tw, "TITLE\t%s\n", review.OneLine(res.Server.Title, 256))
	}
	fmt.Fprintf(tw, "VERSION\t%s\n", review.OneLine(res.Server.Version, 128))
	fmt.Fprintf(tw, "PROTOCOL\t%s\n", review.OneLine(res.ProtocolVersion, 64))
	fmt.Fprintf(tw, "CAPABILITIES\t%s\n", review.OneLine(strings.Join(res.Capabilities, ", "), 512))
	fmt.Fprintf(tw, "SESSION\t%t\n", res.SessionIssued)
	fmt.Fprintf(tw, "LATENCY\t%s\n", res.Latency.Round(time.Millisecond))
	return tw.Flush()
}

type probeOut struct {
	Name            string   `json:"name"`
	Title           string   `json:"title,omitempty"`
	Version         string   `json:"version"`
	ProtocolVersion string   `json:"protocolVersion"`
	Capabilities    []string `json:"capabilities"`
	SessionIssued   bool     `json:"sessionIssued"`
	LatencyMillis   int64    `json:"latencyMillis"`
}

func probeJSON(res *mcp.ProbeResult) probeOut {
	caps := res.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return probeOut{
		Name: res.Server.Name, Title: res.Server.Title, Version: res.Server.Version,
		ProtocolVersion: res.ProtocolVersion, Capabilities: caps, SessionIssued: res.SessionIssued,
		LatencyMillis: res.Latency.Milliseconds(),
	}
}

// isURL says whether a tools argument is a server to talk to directly
// rather than an McpServer name (which can never hold "://").
func isURL(arg string) bool {
	u, err := url.Parse(arg)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func newToolsCommand(s Streams) *cobra.Command {
	var f directFlags
	var maxPages, maxTools int
	cf := newClusterFlags("")
	var server string
	cmd := &cobra.Command{
		Use:   "tools [SERVER | URL]",
		Short: "List the catalog's McpTools (of one McpServer), or (given a URL) a server's tools as the operator would import them",
		Long: "Without an argument, list the McpTools in the namespace: name, enabled, data class,\n" +
			"approval, Ready and its reason. With an McpServer's name, list that server's\n" +
			"McpTools. With an http(s) URL, talk to that MCP server directly and list its\n" +
			"tools as an import would accept them.\n\n" +
			"-o json|yaml|name|jsonpath|go-template|custom-columns prints the McpTool objects;\n" +
			"for a URL, a List of Tool results (apiVersion " + ResultGroupVersion + ").",
		Example: `  kubectl mcp tools -n agents
  kubectl mcp tools tickets -o wide
  kubectl mcp tools tickets -o custom-columns=NAME:.metadata.name,ENABLED:.spec.enabled
  kubectl mcp tools https://tickets.example.com/mcp --bearer-env TICKETS_TOKEN -o name`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeServers(s, cf)(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || !isURL(args[0]) {
				if len(args) == 1 {
					if server != "" && server != args[0] {
						return usageErr("give the McpServer once: as the argument or with --mcp-server")
					}
					if strings.Contains(args[0], "://") {
						return usageErr("%s is neither an http(s) URL nor an McpServer name", safeurl.Display(args[0]))
					}
					server = args[0]
				}
				return listTools(cmd, s, cf, server)
			}
			if server != "" || cf.allNamespaces {
				return usageErr("--mcp-server and -A/--all-namespaces list the catalog; a URL is listed directly")
			}
			ep, err := f.endpoint(s, args[0])
			if err != nil {
				return err
			}
			ep.MaxPages, ep.MaxTools = maxPages, maxTools
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			cat, err := s.client(f.allowPrivateNetwork).ListTools(ctx, ep)
			if err != nil {
				return f.refusal(err)
			}
			list, err := toolsList(cat)
			if err != nil {
				return err
			}
			return f.printer.print(s.Out, list, func(wide bool) error { return printServerTools(s, cat, wide) })
		},
	}
	f.bind(cmd)
	// One -o for both modes.
	cf.printer = f.printer
	cf.config.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&cf.allNamespaces, "all-namespaces", "A", false, "List McpTools in every namespace.")
	cmd.Flags().StringVar(&server, "mcp-server", "", "List only the McpTools of this McpServer, as the SERVER argument does (--server is the API server, as in kubectl).")
	cmd.Flags().IntVar(&maxPages, "max-pages", mcp.DefaultMaxPages, "Most tools/list pages to follow.")
	cmd.Flags().IntVar(&maxTools, "max-tools", mcp.DefaultMaxTools, "Most tools to accept.")
	return cmd
}

// printServerTools is the table of a server's tools; wide adds the
// annotations the server declares (hints only, never trusted).
func printServerTools(s Streams, cat *mcp.Catalog, wide bool) error {
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "NAME\tTITLE\tDESCRIPTION\tHINTS")
	} else {
		fmt.Fprintln(tw, "NAME\tTITLE\tDESCRIPTION")
	}
	for _, t := range cat.Tools {
		if wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", review.OneLine(t.Name, 128), review.OneLine(t.Title, 30), review.OneLine(t.Description, 60), dash(hints(t.Annotations)))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", review.OneLine(t.Name, 128), review.OneLine(t.Title, 30), review.OneLine(t.Description, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "\n%d tools in %d pages (protocol %s)", len(cat.Tools), cat.Pages, review.OneLine(cat.Probe.ProtocolVersion, 64))
	if len(cat.Skipped) > 0 {
		fmt.Fprintf(s.Out, "; %d skipped:\n", len(cat.Skipped))
		sk := append([]mcp.SkippedTool(nil), cat.Skipped...)
		sort.Slice(sk, func(i, j int) bool { return sk[i].Name < sk[j].Name })
		for _, t := range sk {
			fmt.Fprintf(s.Out, "  %s\t%s\n", review.OneLine(t.Name, 60), t.Reason)
		}
		return nil
	}
	fmt.Fprintln(s.Out)
	return nil
}

// hints lists the annotations a server set to true.
func hints(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	b, err := json.Marshal(a)
	if err != nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	var out []string
	for k, v := range m {
		if v == true {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

type toolOut struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	InputSchema json.RawMessage      `json:"inputSchema,omitempty"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// toolsList is a server's tools as a List of Tool results; the List
// also says which protocol the server spoke, how many pages the listing
// took, and which tools an import would skip and why.
func toolsList(cat *mcp.Catalog) (*unstructured.UnstructuredList, error) {
	items := make([]*unstructured.Unstructured, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		u, err := resultObject("Tool", "", t.Name, toolOut{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations})
		if err != nil {
			return nil, err
		}
		items = append(items, u)
	}
	skipped := cat.Skipped
	if skipped == nil {
		skipped = []mcp.SkippedTool{}
	}
	extra, err := toMap(struct {
		Protocol string            `json:"protocolVersion"`
		Pages    int               `json:"pages"`
		Skipped  []mcp.SkippedTool `json:"skipped"`
	}{cat.Probe.ProtocolVersion, cat.Pages, skipped})
	if err != nil {
		return nil, err
	}
	return resultList(items, extra), nil
}

func newCallCommand(s Streams) *cobra.Command {
	var f directFlags
	var argsJSON string
	cmd := &cobra.Command{
		Use:   "call URL TOOL",
		Short: "Call one tool of an MCP server",
		Long: "Call one tool of an MCP server and print its text. The exit code is 1 when the\n" +
			"call fails or the tool reports an error (isError).",
		Example: `  kubectl mcp call https://tickets.example.com/mcp search --args '{"q":"outage"}' --bearer-env TICKETS_TOKEN
  kubectl mcp call https://tickets.example.com/mcp search --args @args.json -o jsonpath='{.isError}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ep, err := f.endpoint(s, args[0])
			if err != nil {
				return err
			}
			callArgs, err := parseArgs(s, argsJSON)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			out, err := s.client(f.allowPrivateNetwork).CallTool(ctx, ep, args[1], callArgs)
			if asked := urlRequests(err); len(asked) > 0 {
				// The server asks its user to open an address (the
				// gateway: a person's approval). What it says is shown
				// as printable text; the call was not made.
				for _, a := range asked {
					if _, werr := fmt.Fprintf(s.Out, "%s\n%s\n", review.Printable(a.Message, true), review.Printable(a.URL, true)); werr != nil {
						return werr
					}
				}
				return &exitError{code: ExitFailed, err: fmt.Errorf("the server asks for input this command cannot give (%d address(es) to open, above)", len(asked))}
			}
			if err != nil {
				return f.refusal(err)
			}
			dropped := out.Dropped
			if dropped == nil {
				dropped = map[string]int{}
			}
			obj, err := resultObject("CallResult", "", args[1], callOut{IsError: out.IsError, Text: out.Text, Dropped: dropped})
			if err != nil {
				return err
			}
			if err := f.printer.print(s.Out, obj, func(bool) error {
				_, err := fmt.Fprintln(s.Out, review.Printable(out.Text, true))
				return err
			}); err != nil {
				return err
			}
			if out.IsError {
				return &exitError{code: ExitFailed, err: fmt.Errorf("the tool reported an error (isError)")}
			}
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&argsJSON, "args", "{}", "Arguments as a JSON object; @FILE reads them from a file, @- from standard input.")
	return cmd
}

// callOut is a call's result: the tool's text, whether it reported an
// error, and how many content blocks of each kind were left out.
type callOut struct {
	IsError bool           `json:"isError"`
	Text    string         `json:"text"`
	Dropped map[string]int `json:"dropped"`
}

func parseArgs(s Streams, v string) (map[string]any, error) {
	raw := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if name == "-" {
			raw, err = io.ReadAll(io.LimitReader(s.In, 4<<20))
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, usageErr("reading --args: %v", err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, usageErr("--args must be a JSON object")
	}
	return m, nil
}

// urlRequest is a URL elicitation a server sent in an input_required
// result.
type urlRequest struct {
	Message, URL string
}

// urlRequests are the URL elicitations of the input_required result err
// carries, if it is one; none otherwise.
func urlRequests(err error) []urlRequest {
	var e *mcp.Error
	if !errors.As(err, &e) || e.Kind != mcp.KindInputRequired || e.InputRequired == nil {
		return nil
	}
	var res struct {
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Mode    string `json:"mode"`
				Message string `json:"message"`
				URL     string `json:"url"`
			} `json:"params"`
		} `json:"inputRequests"`
	}
	if json.Unmarshal(e.InputRequired, &res) != nil {
		return nil
	}
	keys := make([]string, 0, len(res.InputRequests))
	for k := range res.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []urlRequest
	for _, k := range keys {
		r := res.InputRequests[k]
		if r.Method == "elicitation/create" && r.Params.Mode == "url" && r.Params.URL != "" {
			out = append(out, urlRequest{Message: r.Params.Message, URL: r.Params.URL})
		}
	}
	return out
}
