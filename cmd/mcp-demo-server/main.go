// Command mcp-demo-server serves a small MCP server (built on the official
// go-sdk) for trying the operator locally: a handful of tools with different
// behaviours and, optionally, a generated catalog. `make run` starts the same
// server next to the local control plane.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-catalog/operator/internal/demoserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "Address to listen on; the endpoint is /mcp.")
	tools := flag.Int("tools", 5, "Number of generated catalog tools (tool_0001 ...) besides the built-in ones.")
	bearerEnv := flag.String("bearer-env", "", "Require the bearer token held in this environment variable.")
	stateless := flag.Bool("stateless", false, "Issue no session ids.")
	flag.Parse()

	opts := demoserver.Options{Flavor: demoserver.GoSDK, Tools: *tools, Stateless: *stateless, Name: "mcp-demo-server", Title: "mcp-catalog-operator demo"}
	if *bearerEnv != "" {
		opts.RequireBearer = os.Getenv(*bearerEnv)
		if opts.RequireBearer == "" {
			fmt.Fprintf(os.Stderr, "mcp-demo-server: %s is empty\n", *bearerEnv)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, *addr, opts); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-demo-server:", err)
		os.Exit(1)
	}
}

// Serve runs the demo server on addr until ctx ends.
func Serve(ctx context.Context, addr string, opts demoserver.Options) error {
	srv, err := demoserver.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := &http.Server{Addr: addr, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	fmt.Fprintf(os.Stderr, "mcp-demo-server: serving http://%s%s\n", addr, demoserver.Path)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
