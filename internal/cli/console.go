package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/console"
)

// watchClient is c as a client that can watch, which every client the
// plugin builds is.
func watchClient(c client.Client) (client.WithWatch, error) {
	wc, ok := c.(client.WithWatch)
	if !ok {
		return nil, &exitError{code: ExitFailed, err: errors.New("this client cannot watch the cluster")}
	}
	return wc, nil
}

func newConsoleCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	var address string
	var port int
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve a local web page to review tools and decide waiting calls, acting as you",
		Long: "console serves a web page on this machine's loopback interface, on a random port, and\n" +
			"prints a link to it with a one-time token. The page shows the namespace's McpServers and\n" +
			"McpTools, the definitions waiting for review (approved and current side by side, with a\n" +
			"line diff) and the calls waiting for a person's approval, and keeps itself current from\n" +
			"watches. What you do in it (approve a definition, enable or disable a tool, approve or\n" +
			"deny a call) is done with your kubeconfig's identity through the API server, exactly as\n" +
			"the commands approve, enable, disable, approve-call and deny-call do: RBAC and the\n" +
			"approval admission policy decide. Nothing is installed in the cluster.",
		Example: `  kubectl mcp console -n agents
  kubectl mcp console -A --port 8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			wc, err := watchClient(c)
			if err != nil {
				return err
			}
			scope := "namespace " + ns
			if f.allNamespaces {
				ns, scope = "", "all namespaces"
			}
			con, err := console.Listen(console.Options{Client: wc, Namespace: ns, Address: address, Port: port})
			if errors.Is(err, console.ErrNotLoopback) {
				return usageErr("--address: %v", err)
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(s.Out, "Console for %s, acting as you (your kubeconfig's identity):\n\n  %s\n\n", scope, con.URL())
			fmt.Fprintln(s.Out, "Open the link once: it gives that browser the console's session. Press Ctrl-C to stop.")
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			return con.Serve(ctx)
		},
	}
	f.config.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "Show and act in every namespace your credentials can see.")
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "Loopback address to listen on (127.0.0.1 or ::1).")
	cmd.Flags().IntVar(&port, "port", 0, "Port to listen on; 0 picks a free one.")
	return cmd
}
