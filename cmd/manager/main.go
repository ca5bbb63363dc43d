// Command manager runs the mcp-catalog-operator controllers.
package main

import (
	"crypto/x509"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/internal/egress"
	"golang.org/x/time/rate"

	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/version"
)

func main() {
	opts := manager.DefaultOptions()
	var watchNamespaces string

	fs := flag.CommandLine
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", opts.MetricsAddr, `Address of the metrics endpoint; "0" disables it.`)
	fs.BoolVar(&opts.SecureMetrics, "metrics-secure", opts.SecureMetrics, "Serve metrics over HTTPS with authentication and authorisation.")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", opts.MetricsCertDir, "Directory with tls.crt and tls.key for the metrics server; empty generates a self-signed certificate.")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", opts.ProbeAddr, "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&opts.PprofAddr, "pprof-bind-address", "", `Address of Go's profiling endpoints (/debug/pprof/, unauthenticated: bind to localhost); empty disables them.`)
	fs.StringVar(&opts.Components, "components", opts.Components, `What this process runs: "all" (controllers and gateway), "controllers", or "gateway" (no controllers, no leader election).`)
	fs.BoolVar(&opts.LeaderElect, "leader-elect", opts.LeaderElect, "Elect a leader so that only one replica is active.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", opts.LeaderElectionNamespace, "Namespace of the leader-election lease; defaults to the manager's own.")
	fs.StringVar(&watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces to watch; empty watches all.")
	fs.StringVar(&opts.WatchLabelSelector, "watch-label-selector", "", `Run as one shard: reconcile only the McpServers and McpTools this label selector selects, e.g. "sharding.mcp.catalog.dev/key=shard1", or "!sharding.mcp.catalog.dev/key" for the instance that takes every unsharded object. Controllers only.`)
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", "", "Name of the leader-election lease; every shard needs its own. Empty: "+manager.LeaderElectionID+".")
	fs.BoolVar(&opts.EnableHTTP2, "enable-http2", opts.EnableHTTP2, "Allow HTTP/2 on the metrics server.")
	fs.DurationVar(&opts.GracefulShutdownTimeout, "graceful-shutdown-timeout", opts.GracefulShutdownTimeout, "How long running work may take to finish on shutdown.")
	fs.BoolVar(&opts.AllowPrivateNetworks, "allow-private-networks", opts.AllowPrivateNetworks, "Let every McpServer and token endpoint reach loopback and private addresses, with or without spec.allowPrivateNetwork (development and tests only).")
	var privateCIDRs, namespaceCIDRs, tokenProxy string
	fs.StringVar(&privateCIDRs, "allowed-private-cidrs", "", "Comma-separated private CIDRs an McpServer with spec.allowPrivateNetwork may reach, and private token endpoints may be in (e.g. 10.0.0.0/8,fd00::/8). Empty: none.")
	fs.StringVar(&namespaceCIDRs, "namespace-private-cidrs", "", `Further private CIDRs per namespace: "ns=cidr,cidr;ns2=cidr".`)
	fs.StringVar(&tokenProxy, "token-endpoint-proxy", "", "HTTP proxy URL for token exchanges; HTTP(S)_PROXY in the environment is never used.")

	fs.IntVar(&opts.MaxConcurrentServers, "max-concurrent-servers", opts.MaxConcurrentServers, "How many McpServers are imported or probed at once.")
	// What one namespace may take of what every namespace shares
	// (docs/adr/024-tenant-fairness.md). Zero: no cap, or the derived value.
	fs.IntVar(&opts.MaxConcurrentServersPerNamespace, "max-concurrent-servers-per-namespace", 0, "How many of --max-concurrent-servers one namespace's McpServers may hold at once; 0 means three quarters of them.")
	fs.Var(bytesFlag{&opts.CatalogBytesInFlight}, "catalog-bytes-in-flight", `Budget of catalog bytes all imports in flight may hold together, one namespace at most half (e.g. "64Mi"); 0 means a quarter of GOMEMLIMIT, or without it --max-concurrent-servers × 16Mi.`)
	fs.Var(bytesFlag{&opts.Caps.MaxCatalogBytes}, "max-catalog-bytes", `Cap on spec.import.maxCatalogBytes (e.g. "4Mi"); 0: no cap beyond half of --catalog-bytes-in-flight.`)
	// Imports when a server announces that its tools changed (docs/adr/028).
	fs.BoolVar(&opts.ToolListeners.Enabled, "listen-tool-changes", opts.ToolListeners.Enabled, "Keep a stream open to each Ready McpServer that announces tool list changes, and import when it does.")
	fs.IntVar(&opts.ToolListeners.Max, "max-tool-listeners", opts.ToolListeners.Max, "Most McpServers listened to at once.")
	fs.IntVar(&opts.ToolListeners.MaxPerNamespace, "max-tool-listeners-per-namespace", 0, "Most McpServers of one namespace listened to at once; 0 means a quarter of --max-tool-listeners.")
	fs.DurationVar(&opts.ToolListeners.Debounce, "tool-change-debounce", opts.ToolListeners.Debounce, "How long a tool list change waits for more before the one import they trigger.")
	fs.DurationVar(&opts.ToolListeners.MinInterval, "tool-change-min-interval", opts.ToolListeners.MinInterval, "Shortest gap between two imports one McpServer's change notifications trigger.")
	var maxTools int
	fs.IntVar(&maxTools, "max-tools", 0, "Cap on spec.import.maxTools; 0: no cap.")
	fs.DurationVar(&opts.Caps.MaxOperationTimeout, "max-operation-timeout", 0, "Cap on spec.operationTimeout; 0: no cap.")
	fs.DurationVar(&opts.Caps.MinHealthInterval, "min-health-interval", 0, "Shortest spec.healthCheck.interval used; 0: none beyond the API's 5s.")
	fs.Int64Var(&opts.NamespaceStorage.Tools, "max-tools-per-namespace", 0, "Most McpTools the imports of one namespace's McpServers may store; 0: no limit.")
	fs.Var(bytesFlag{&opts.NamespaceStorage.DefinitionBytes}, "max-definition-bytes-per-namespace", `Most bytes of tool definitions the imports of one namespace's McpServers may store (e.g. "64Mi"); 0: no limit.`)
	// client-go's default (20 requests a second, bursts of 30) is below what
	// an import of thousands of tools or a thousand probed servers needs.
	var apiQPS float64
	var apiBurst int
	fs.Float64Var(&apiQPS, "kube-api-qps", 50, "Requests per second the manager may send to the Kubernetes API server.")
	fs.IntVar(&apiBurst, "kube-api-burst", 100, "Burst of requests the manager may send to the Kubernetes API server.")

	fs.StringVar(&opts.GatewayAddr, "gateway-bind-address", opts.GatewayAddr, `Address of the MCP gateway for agents; empty disables it.`)
	fs.StringVar(&opts.GatewayCertDir, "gateway-cert-dir", opts.GatewayCertDir, "Directory with the gateway's tls.crt and tls.key (reloaded on change).")
	fs.BoolVar(&opts.GatewayInsecure, "gateway-insecure", opts.GatewayInsecure, "Serve the gateway over plain HTTP (development and tests only).")
	fs.StringVar(&opts.GatewayAudience, "gateway-audience", opts.GatewayAudience, "Audience agents' ServiceAccount tokens must be bound to.")
	fs.StringVar(&opts.GatewayApprovalPolicy, "gateway-approval-policy", "", `Name of the ValidatingAdmissionPolicy that keeps a caller from deciding its own McpCallApproval (the chart's <fullname>-call-approvals, config/default's mcp-catalog-call-approvals); while it, or a binding of it that denies, is missing, calls that need a person's approval are refused. Empty checks nothing (development only).`)
	fs.StringVar(&opts.GatewayApprovalKeySecret, "gateway-approval-key-secret", "", `Secret (namespace/name) with the approval signing keys "current" and "previous", shared by every gateway replica; empty generates a key per process (development only).`)
	fs.DurationVar(&opts.GatewayApprovalTTL, "gateway-approval-ttl", 0, "How long a call approval can be decided and used (default 15m).")
	fs.StringVar(&opts.GatewayApprovalURL, "gateway-approval-url", "", "URL shown to an agent's user for a call approval, with {namespace} and {name}; empty names the object on the API server.")
	var tokenCAFile string
	fs.StringVar(&tokenCAFile, "token-endpoint-ca-file", "", "PEM file of CAs to trust for delegation profiles' token endpoints instead of the system roots.")
	var auditPath string
	fs.StringVar(&auditPath, "gateway-audit-file", "-", `File the gateway appends audit records to (opened append-only, never rotated by the gateway); "-" is standard output.`)
	fs.StringVar(&auditPath, "gateway-audit-log", "-", `Deprecated name of --gateway-audit-file.`)
	fs.DurationVar(&opts.GatewayAuditTimeout, "gateway-audit-timeout", opts.GatewayAuditTimeout, "How long one audit write may take before the call it describes is refused; 0 means 5s.")
	fs.StringVar(&opts.TracingOTLPEndpoint, "tracing-otlp-endpoint", "", `OTLP/gRPC endpoint URL the gateway exports traces to (e.g. http://otel-collector.monitoring:4317); empty leaves tracing off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.`)
	fs.DurationVar(&opts.GatewayDenialWindow, "gateway-audit-denial-window", 0, "How long repeats of one refusal (same caller, tool and reason) are aggregated into one audit record; 0 means 1m.")
	fs.DurationVar(&opts.GatewayListTTL, "gateway-list-ttl", 0, "How long an agent may use a tools/list result without asking again (ttlMs); 0 means 30s.")
	fs.DurationVar(&opts.GatewayCredentialTTL, "gateway-credential-cache-ttl", 0, "How long the gateway keeps a credential Secret it read before reading it again (a rotation is used within it); 0 means 10s.")
	b := &opts.GatewayBudgets
	fs.Float64Var((*float64)(&b.ServiceAccountRate), "gateway-serviceaccount-rate", 0, "Requests a second one ServiceAccount may make to one gateway replica; 0 means 100.")
	fs.IntVar(&b.ServiceAccountBurst, "gateway-serviceaccount-burst", 0, "Burst of requests one ServiceAccount may make to one gateway replica; 0 means 200.")
	fs.IntVar(&b.ServiceAccountConcurrency, "gateway-serviceaccount-concurrency", 0, "Requests one ServiceAccount may have in flight at one gateway replica; 0 means 64.")
	fs.Float64Var((*float64)(&b.NamespaceRate), "gateway-namespace-rate", 0, "Requests a second the ServiceAccounts of one namespace together may make to one gateway replica; 0 means 400.")
	fs.IntVar(&b.NamespaceBurst, "gateway-namespace-burst", 0, "Burst of requests of one namespace at one gateway replica; 0 means 800.")
	fs.IntVar(&b.NamespaceConcurrency, "gateway-namespace-concurrency", 0, "Requests one namespace may have in flight at one gateway replica; 0 means 256.")
	opts.GatewayMaxRequestBytes = gateway.DefaultMaxRequestBytes
	fs.Var(bytesFlag{&opts.GatewayMaxRequestBytes}, "gateway-max-request-bytes", `Largest request body the gateway reads (e.g. "4Mi"); a larger one is refused with 413 before any of it is decoded.`)
	var reviewQPS float64
	fs.Float64Var(&reviewQPS, "gateway-review-qps", manager.DefaultGatewayReviewQPS, "Token and access reviews a second the gateway may send, on a client of its own.")
	fs.IntVar(&opts.GatewayReviewBurst, "gateway-review-burst", manager.DefaultGatewayReviewBurst, "Burst of token and access reviews the gateway may send.")
	fs.Var(bytesFlag{&opts.GatewayMaxRequestBytesInFlight}, "gateway-max-request-bytes-in-flight", `Request bytes one gateway replica holds at once, each namespace at most half (e.g. "64Mi"); 0 means a quarter of GOMEMLIMIT when set, else 64Mi.`)
	var saBytesRate, nsBytesRate, saBytesBurst, nsBytesBurst int64
	saBytesRate, saBytesBurst = int64(gateway.DefaultServiceAccountBytesRate), gateway.DefaultServiceAccountBytesBurst
	nsBytesRate, nsBytesBurst = int64(gateway.DefaultNamespaceBytesRate), gateway.DefaultNamespaceBytesBurst
	fs.Var(bytesFlag{&saBytesRate}, "gateway-serviceaccount-bytes-rate", "Bytes a second one ServiceAccount may be answered (tool lists, call results) by one gateway replica.")
	fs.Var(bytesFlag{&saBytesBurst}, "gateway-serviceaccount-bytes-burst", "Burst of bytes one ServiceAccount may be answered by one gateway replica.")
	fs.Var(bytesFlag{&nsBytesRate}, "gateway-namespace-bytes-rate", "Bytes a second the ServiceAccounts of one namespace together may be answered by one gateway replica.")
	fs.Var(bytesFlag{&nsBytesBurst}, "gateway-namespace-bytes-burst", "Burst of bytes one namespace may be answered by one gateway replica.")
	fs.BoolVar(&opts.GatewayStateless, "gateway-stateless", opts.GatewayStateless, "Serve initialize-era sessions without server memory, so that any gateway replica answers any request.")

	fs.StringVar(&opts.NotifyWebhookURL, "notify-webhook-url", "", "URL (https, or http to loopback) that receives a signed CloudEvent when a call waits for approval, when one is decided, and when a tool's definition drifts; empty sends none.")
	fs.StringVar(&opts.NotifyWebhookURLFile, "notify-webhook-url-file", "", "File holding the webhook URL instead of --notify-webhook-url (a mounted Secret), for a URL that is itself a credential; read at every delivery and only ever shown as scheme, host and port.")
	fs.StringVar(&opts.NotifyWebhookKeyFile, "notify-webhook-key-file", "", "File with the HMAC key that signs the notifications (a mounted Secret; read at every delivery).")
	fs.BoolVar(&opts.NotifyCallApprovals, "notify-call-approvals", opts.NotifyCallApprovals, "Notify about call approvals as well as drift; a shard's Deployment turns it off, since every shard sees every approval.")
	printVersion := fs.Bool("version", false, "Print the version and exit.")

	zopts := zap.Options{Development: false}
	zopts.BindFlags(fs)
	flag.Parse()

	if *printVersion {
		fmt.Println(version.Get())
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("setup")
	if maxTools < 0 || maxTools > math.MaxInt32 {
		log.Error(nil, "--max-tools is out of range")
		os.Exit(1)
	}
	opts.Caps.MaxTools = int32(maxTools)

	for _, ns := range strings.Split(watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			opts.WatchNamespaces = append(opts.WatchNamespaces, ns)
		}
	}

	var err error
	if opts.AllowedPrivateCIDRs, err = egress.ParseCIDRs(privateCIDRs); err != nil {
		log.Error(err, "parsing --allowed-private-cidrs")
		os.Exit(1)
	}
	if opts.NamespacePrivateCIDRs, err = egress.ParseNamespaceCIDRs(namespaceCIDRs); err != nil {
		log.Error(err, "parsing --namespace-private-cidrs")
		os.Exit(1)
	}
	if tokenProxy != "" {
		u, err := url.Parse(tokenProxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			log.Error(err, "--token-endpoint-proxy must be an http or https URL")
			os.Exit(1)
		}
		opts.TokenEndpointProxy = u
	}

	if auditPath != "-" {
		f, err := gateway.OpenAuditFile(auditPath)
		if err != nil {
			log.Error(err, "opening the gateway audit log")
			os.Exit(1)
		}
		defer f.Close()
		opts.GatewayAudit = f
	}

	if tokenCAFile != "" {
		pem, err := os.ReadFile(tokenCAFile)
		if err != nil {
			log.Error(err, "reading --token-endpoint-ca-file")
			os.Exit(1)
		}
		opts.TokenEndpointRootCAs = x509.NewCertPool()
		if !opts.TokenEndpointRootCAs.AppendCertsFromPEM(pem) {
			log.Error(nil, "--token-endpoint-ca-file holds no PEM certificate")
			os.Exit(1)
		}
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading the cluster configuration")
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst
	opts.GatewayReviewQPS = float32(reviewQPS)
	b.ServiceAccountBytesRate, b.ServiceAccountBytesBurst = rate.Limit(saBytesRate), int(saBytesBurst)
	b.NamespaceBytesRate, b.NamespaceBytesBurst = rate.Limit(nsBytesRate), int(nsBytesBurst)
	ctx := ctrl.SetupSignalHandler()
	if err := manager.Run(ctrl.LoggerInto(ctx, log), cfg, opts); err != nil {
		log.Error(err, "manager stopped")
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// bytesFlag reads a size as a Kubernetes quantity ("64Mi", "1G",
// "1048576"), as the chart's values are written.
type bytesFlag struct{ v *int64 }

func (f bytesFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return resource.NewQuantity(*f.v, resource.BinarySI).String()
}

func (f bytesFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return fmt.Errorf("%q is not a size in bytes", s)
	}
	*f.v = n
	return nil
}
