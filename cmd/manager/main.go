// Command manager runs the mcp-catalog-operator controllers.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/version"
)

// main assembles: the flags are bound per concern in flags.go.
func main() {
	c := newCommandLine(flag.CommandLine)
	zopts := zap.Options{Development: false}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()

	if c.version {
		fmt.Println(version.Get())
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("setup")
	opts, err := c.options()
	if err != nil {
		log.Error(err, "invalid flags")
		os.Exit(1)
	}
	if c.auditPath != "-" {
		f, err := audit.OpenAuditFile(c.auditPath)
		if err != nil {
			log.Error(err, "opening the gateway audit log")
			os.Exit(1)
		}
		defer f.Close()
		opts.GatewayAudit = f
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading the cluster configuration")
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = float32(c.apiQPS), c.apiBurst
	ctx := ctrl.SetupSignalHandler()
	if err := manager.Run(ctrl.LoggerInto(ctx, log), cfg, opts); err != nil {
		log.Error(err, "manager stopped")
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
