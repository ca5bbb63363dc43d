// Command devrun is what `make run` starts: the operator's manager against
// the cluster in KUBECONFIG when one answers, otherwise against a local
// control plane (kube-apiserver and etcd from KUBEBUILDER_ASSETS) that it
// starts and stops itself. Either way it installs the CRDs, the
// call-approval admission policy and a demo agent first, and prints the
// call that agent can make through the development gateway.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"net"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/api/scheme"
	"github.com/mcp-catalog/operator/internal/demoserver"
	"github.com/mcp-catalog/operator/internal/manager"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devrun:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		local      bool
		crdDir     string
		kubeconfig string
		probeAddr  string
		demoAddr   string
		gwAddr     string
		demo       demoAgent
		pluginDir  string
	)
	flag.BoolVar(&local, "local", false, "Always start a local control plane, even when KUBECONFIG reaches a cluster.")
	flag.StringVar(&crdDir, "crd-dir", filepath.Join("config", "crd", "bases"), "Directory of the CRD manifests to install.")
	flag.StringVar(&kubeconfig, "write-kubeconfig", filepath.Join(".local", "kubeconfig"), "Where to write the local control plane's kubeconfig.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the manager's /healthz and /readyz endpoints.")
	flag.StringVar(&demoAddr, "demo-server-addr", "127.0.0.1:18080", `Where to serve the demo MCP server that config/samples/mcp_v1alpha1_mcpserver_demo.yaml points at; "" serves none.`)
	flag.StringVar(&gwAddr, "gateway-addr", "127.0.0.1:18444", `Where the gateway serves agents, over plain HTTP since this is a development run; "" serves none.`)
	flag.StringVar(&demo.PolicyFile, "approval-policy", filepath.Join("config", "policy", "call_approvals.yaml"), "The call-approval admission policy to apply, as the chart installs it; the gateway asks a person to approve calls only while it is in force.")
	flag.StringVar(&demo.AgentFile, "demo-agent", filepath.Join("config", "samples", "demo-agent", "demo_agent.yaml"), `The demo agent to apply (a ServiceAccount, and what lets it call); "" applies no agent and no policy.`)
	flag.StringVar(&demo.Namespace, "demo-namespace", "default", "The namespace of the demo agent, and of the samples the printed commands apply.")
	flag.StringVar(&pluginDir, "plugin-dir", "bin", "Where make run built kubectl-mcp; the printed commands put it on PATH.")
	zopts := zap.Options{Development: true}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, reachable := clusterInKubeconfig()
	userKubeconfig := ""
	if local || !reachable {
		say("no reachable cluster in KUBECONFIG: starting a local control plane")
		if err := ensureControlPlane(); err != nil {
			return err
		}
		env := &envtest.Environment{
			CRDDirectoryPaths:     []string{crdDir},
			ErrorIfCRDPathMissing: true,
			// envtest's default, 20 s per attempt, is too short for a
			// kube-apiserver starting on a busy laptop or CI runner.
			ControlPlaneStartTimeout: 2 * time.Minute,
		}
		var err error
		if cfg, err = env.Start(); err != nil {
			return fmt.Errorf("starting the local control plane (is KUBEBUILDER_ASSETS set? `make run` sets it): %w", err)
		}
		defer func() {
			say("stopping the local control plane")
			if err := env.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "devrun: stopping the local control plane:", err)
			}
		}()
		path, err := writeKubeconfig(env, kubeconfig)
		if err != nil {
			return err
		}
		say("local control plane up; its kubeconfig is %s", path)
		userKubeconfig = path
	} else {
		say("installing the CRDs into the cluster at %s", cfg.Host)
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crdDir}, ErrorIfPathMissing: true}); err != nil {
			return fmt.Errorf("installing CRDs: %w", err)
		}
	}

	if demoAddr != "" {
		if err := startDemoServer(ctx, demoAddr); err != nil {
			return err
		}
	}

	opts := manager.DefaultOptions()
	// A development run has no certificates and serves no one else.
	opts.MetricsAddr = "0"
	opts.ProbeAddr = probeAddr
	opts.AllowPrivateNetworks = true
	if demo.AgentFile != "" {
		c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			return fmt.Errorf("connecting to apply the demo agent: %w", err)
		}
		demo.Audience = opts.GatewayAudience
		demo.TokenFile = filepath.Join(filepath.Dir(kubeconfig), "demo-agent.token")
		if abs, err := filepath.Abs(demo.TokenFile); err == nil {
			demo.TokenFile = abs
		}
		applied, err := demo.apply(ctx, cfg, c)
		if err != nil {
			return fmt.Errorf("applying the demo agent (--demo-agent=\"\" skips it): %w", err)
		}
		say("applied the call-approval admission policy %s and the demo agent %s/%s; its token for the gateway is in %s",
			applied.PolicyName, demo.Namespace, applied.ServiceAccount, demo.TokenFile)
		opts.GatewayApprovalPolicy = applied.PolicyName
		go demo.renewToken(ctx, cfg, applied.ServiceAccount, applied.Expires)
		if gwAddr != "" {
			ready := make(chan string, 1)
			opts.GatewayReady = ready
			plugin := ""
			if abs, err := filepath.Abs(pluginDir); err == nil && fileExists(filepath.Join(abs, "kubectl-mcp")) {
				plugin = abs
			}
			go func() {
				select {
				case addr := <-ready:
					if applied.AccessPolicy != "" {
						controllersRunning(ctx, c, demo.Namespace, applied.AccessPolicy)
					}
					fmt.Fprint(os.Stderr, nextSteps(addr, userKubeconfig, plugin, demo.TokenFile, demo.Namespace, applied.ServiceAccount, applied.Expires))
				case <-ctx.Done():
				}
			}()
		}
	}
	if gwAddr != "" {
		opts.GatewayAddr, opts.GatewayInsecure = gwAddr, true
		say("gateway for agents at http://%s/mcp (plain HTTP: development only)", gwAddr)
	}
	say("starting the manager; Ctrl-C stops everything")
	err := manager.Run(ctx, cfg, opts)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// ensureControlPlane makes KUBEBUILDER_ASSETS name a directory with
// kube-apiserver and etcd, asking hack/envtest.sh (which downloads or builds
// them once and caches them) when it does not. Only a run that needs a local
// control plane gets here, so a run against a cluster builds nothing.
func ensureControlPlane() error {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return nil
	}
	say("finding or building the local control plane (hack/envtest.sh; the first build takes several minutes)")
	cmd := exec.Command(filepath.Join("hack", "envtest.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("preparing the local control plane with hack/envtest.sh (run make run from the repository root): %w", err)
	}
	return os.Setenv("KUBEBUILDER_ASSETS", strings.TrimSpace(string(out)))
}

// clusterInKubeconfig loads the kubeconfig (--kubeconfig, else KUBECONFIG,
// else ~/.kube/config) and reports whether its API server answers within a
// few seconds. It does not try the in-cluster configuration, whose absence
// on a laptop is no error worth a stack trace.
func clusterInKubeconfig() (*rest.Config, bool) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		rules.ExplicitPath = f.Value.String()
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, false
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 3 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, false
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, false
	}
	return cfg, true
}

// writeKubeconfig writes an admin kubeconfig for the local control plane.
func writeKubeconfig(env *envtest.Environment, path string) (string, error) {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("creating a local admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path, nil
	}
	return abs, nil
}

// startDemoServer serves the demo MCP server in the background until ctx
// ends.
func startDemoServer(ctx context.Context, addr string) error {
	srv, err := demoserver.New(demoserver.Options{Flavor: demoserver.GoSDK, Tools: 5, Name: "mcp-demo-server", Title: "mcp-catalog-operator demo"})
	if err != nil {
		return fmt.Errorf("building the demo MCP server: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for the demo MCP server on %s (choose another with --demo-server-addr): %w", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	go func() {
		<-ctx.Done()
		srv.Close()
		_ = hs.Close()
	}()
	say("demo MCP server at http://%s%s", addr, demoserver.Path)
	return nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, ">> "+format+"\n", args...)
}
