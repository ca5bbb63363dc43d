// Command manager runs the mcp-catalog-operator controllers.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/internal/manager"
)

func main() {
	opts := manager.DefaultOptions()
	var watchNamespaces string

	fs := flag.CommandLine
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", opts.MetricsAddr, `Address of the metrics endpoint; "0" disables it.`)
	fs.BoolVar(&opts.SecureMetrics, "metrics-secure", opts.SecureMetrics, "Serve metrics over HTTPS with authentication and authorisation.")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", opts.MetricsCertDir, "Directory with tls.crt and tls.key for the metrics server; empty generates a self-signed certificate.")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", opts.ProbeAddr, "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", opts.LeaderElect, "Elect a leader so that only one replica is active.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", opts.LeaderElectionNamespace, "Namespace of the leader-election lease; defaults to the manager's own.")
	fs.StringVar(&watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces to watch; empty watches all.")
	fs.BoolVar(&opts.EnableHTTP2, "enable-http2", opts.EnableHTTP2, "Allow HTTP/2 on the metrics server.")
	fs.DurationVar(&opts.GracefulShutdownTimeout, "graceful-shutdown-timeout", opts.GracefulShutdownTimeout, "How long running work may take to finish on shutdown.")
	fs.BoolVar(&opts.AllowPrivateNetworks, "allow-private-networks", opts.AllowPrivateNetworks, "Let every McpServer reach loopback and private addresses (development and tests only).")

	zopts := zap.Options{Development: false}
	zopts.BindFlags(fs)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("setup")

	for _, ns := range strings.Split(watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			opts.WatchNamespaces = append(opts.WatchNamespaces, ns)
		}
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading the cluster configuration")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := manager.Run(ctrl.LoggerInto(ctx, log), cfg, opts); err != nil {
		log.Error(err, "manager stopped")
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
