package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/poll"
)

// mcp-go's client is told too: on the initialize era's GET stream
// (continuous listening), and on a 2026-07-28 subscriptions/listen stream.
func TestAnMcpGoClientIsToldWhenWhatItMaySeeChanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
	}{{"initialize era, GET stream", "2025-11-25"}, {"2026-07-28, subscriptions/listen", "2026-07-28"}} {
		t.Run(tc.name, func(t *testing.T) {
			g, c, url := changesGateway(t)
			var opts []transport.StreamableHTTPCOption
			opts = append(opts, transport.WithHTTPBasicClient(&http.Client{Transport: bearerTransport{chWideToken}}))
			if tc.version != "2026-07-28" {
				opts = append(opts, transport.WithContinuousListening()) //nolint:staticcheck // the initialize era's GET stream is what this case is about
			}
			cl, err := mcpgoclient.NewStreamableHttpClient(url+Path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cl.Close() })
			told := make(chan struct{}, 10)
			cl.OnNotification(func(n mcpgo.JSONRPCNotification) {
				if n.Method == notificationToolsList {
					told <- struct{}{}
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cl.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcpgo.InitializeRequest{}
			init.Params.ProtocolVersion = tc.version
			init.Params.ClientInfo = mcpgo.Implementation{Name: "agent", Version: "1"}
			res, err := cl.Initialize(ctx, init)
			if err != nil {
				t.Fatal(err)
			}
			if res.ProtocolVersion != tc.version {
				t.Fatalf("the session speaks %s, want %s", res.ProtocolVersion, tc.version)
			}
			if tc.version == "2026-07-28" {
				stop, err := cl.ListenAsync(context.Background(), mcpgo.SubscriptionFilter{ToolsListChanged: true}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(stop)
			}
			poll.Until(t, 10*time.Second, "the client watched", func() error {
				if n := watching(g); n != 1 {
					return fmt.Errorf("%d watched", n)
				}
				return nil
			})

			change(t, g, c, vaultObject, func(tl *mcpv1alpha1.McpTool) { tl.Spec.Enabled = false })
			select {
			case <-told:
			case <-time.After(20 * time.Second):
				t.Fatal("the mcp-go client was not told that its tools changed")
			}
			list, err := cl.ListTools(ctx, mcpgo.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if want := []string{echoLocal}; !slices.Equal(names, want) {
				t.Fatalf("after the change it lists %v, want %v", names, want)
			}
		})
	}
}
