package main

import (
	"bytes"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// client-go's default (20 requests a second, bursts of 30) is below what
// an import of thousands of tools or a thousand probed servers needs.
const (
	defaultKubeAPIQPS   = 50
	defaultKubeAPIBurst = 100
)

// commandLine is what the flags set: the manager's Options, and the few
// values that need more than a flag's parsing (lists, CIDRs, files) or go
// elsewhere (the REST config). Each concern binds its own flags, and every
// default is its package's constant, so that --help prints the default the
// manager uses and no usage repeats it.
type commandLine struct {
	opts manager.Options

	watchNamespaces                  string
	privateCIDRs, namespaceCIDRs     string
	tokenProxy, tokenCAFile          string
	oauthIssuersFile, oauthScopes    string
	guardrailKeyFile, failClosedFrom string
	consentSecretFile                string
	maxTools                         int
	apiQPS, reviewQPS                float64
	apiBurst                         int
	auditPath                        string
	version                          bool
}

// newCommandLine binds every flag of the manager onto fs.
func newCommandLine(fs *flag.FlagSet) *commandLine {
	c := &commandLine{opts: manager.DefaultOptions()}
	c.bindServing(fs)
	c.bindSharding(fs)
	c.bindEgress(fs)
	c.bindImports(fs)
	c.bindToolListeners(fs)
	c.bindSharing(fs)
	c.bindAPIClients(fs)
	c.bindGateway(fs)
	c.bindGatewayOAuth(fs)
	c.bindGatewayGuardrail(fs)
	c.bindGatewayApprovals(fs)
	c.bindGatewayAudit(fs)
	c.bindGatewayBudgets(fs)
	c.bindNotifications(fs)
	fs.BoolVar(&c.version, "version", false, "Print the version and exit.")
	return c
}

// bindServing: the process's own endpoints and lifetime.
func (c *commandLine) bindServing(fs *flag.FlagSet) {
	o := &c.opts
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the metrics endpoint; "0" disables it.`)
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", o.SecureMetrics, "Serve metrics over HTTPS with authentication and authorisation.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Directory with tls.crt and tls.key for the metrics server; empty generates a self-signed certificate.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Allow HTTP/2 on the metrics server.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, `Address of Go's profiling endpoints (/debug/pprof/, unauthenticated: bind to localhost); empty disables them.`)
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "How long running work may take to finish on shutdown.")
}

// bindSharding: what this process runs, over which objects, and its lease
// (docs/adr/019-sharding.md).
func (c *commandLine) bindSharding(fs *flag.FlagSet) {
	o := &c.opts
	fs.StringVar(&o.Components, "components", o.Components, fmt.Sprintf(`What this process runs: %q (controllers and gateway), %q, or %q (no controllers, no leader election).`,
		manager.ComponentsAll, manager.ComponentsControllers, manager.ComponentsGateway))
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so that only one replica is active.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader-election lease; defaults to the manager's own.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", manager.LeaderElectionID, "Name of the leader-election lease; every shard needs its own.")
	fs.StringVar(&c.watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces to watch; empty watches all.")
	fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", o.WatchLabelSelector, `Run as one shard: reconcile only the McpServers and McpTools this label selector selects, e.g. "sharding.mcp.catalog.dev/key=shard1", or "!sharding.mcp.catalog.dev/key" for the instance that takes every unsharded object. Controllers only.`)
}

// bindEgress: where McpServers and token endpoints may be reached, and
// through what.
func (c *commandLine) bindEgress(fs *flag.FlagSet) {
	fs.BoolVar(&c.opts.AllowPrivateNetworks, "allow-private-networks", c.opts.AllowPrivateNetworks, "Let every McpServer and token endpoint reach loopback and private addresses, with or without spec.allowPrivateNetwork (development and tests only).")
	fs.StringVar(&c.privateCIDRs, "allowed-private-cidrs", "", "Comma-separated private CIDRs an McpServer with spec.allowPrivateNetwork may reach, and private token endpoints may be in (e.g. 10.0.0.0/8,fd00::/8). Empty: none.")
	fs.StringVar(&c.namespaceCIDRs, "namespace-private-cidrs", "", `Further private CIDRs per namespace: "ns=cidr,cidr;ns2=cidr".`)
	fs.StringVar(&c.tokenProxy, "token-endpoint-proxy", "", "HTTP proxy URL for token exchanges; HTTP(S)_PROXY in the environment is never used.")
	fs.StringVar(&c.tokenCAFile, "token-endpoint-ca-file", "", "PEM file of CAs to trust for delegation profiles' token endpoints instead of the system roots.")
}

// bindImports: what imports and probes may take, of the process and of
// one namespace (docs/adr/024-tenant-fairness.md). A zero cap caps
// nothing; a zero share is derived from the total it is a share of.
func (c *commandLine) bindImports(fs *flag.FlagSet) {
	o := &c.opts
	fs.IntVar(&o.MaxConcurrentServers, "max-concurrent-servers", o.MaxConcurrentServers, "How many McpServers are imported or probed at once.")
	fs.IntVar(&o.MaxConcurrentServersPerNamespace, "max-concurrent-servers-per-namespace", o.MaxConcurrentServersPerNamespace, "How many of --max-concurrent-servers one namespace's McpServers may hold at once; 0 means three quarters of them.")
	fs.Var(bytesVar(&o.CatalogBytesInFlight), "catalog-bytes-in-flight", fmt.Sprintf(`Budget of catalog bytes all imports in flight may hold together, one namespace at most half (e.g. "64Mi"); 0 means a quarter of GOMEMLIMIT, or without it --max-concurrent-servers × %s.`, byteSize(mcp.DefaultMaxCatalogBytes)))
	fs.Var(bytesVar(&o.Caps.MaxCatalogBytes), "max-catalog-bytes", `Cap on spec.import.maxCatalogBytes (e.g. "4Mi"); 0: no cap beyond half of --catalog-bytes-in-flight.`)
	fs.IntVar(&c.maxTools, "max-tools", 0, "Cap on spec.import.maxTools; 0: no cap.")
	fs.DurationVar(&o.Caps.MaxOperationTimeout, "max-operation-timeout", o.Caps.MaxOperationTimeout, "Cap on spec.operationTimeout; 0: no cap.")
	fs.DurationVar(&o.Caps.MinHealthInterval, "min-health-interval", o.Caps.MinHealthInterval, "Shortest spec.healthCheck.interval used; 0: none beyond the API's 5s.")
	fs.Int64Var(&o.NamespaceStorage.Tools, "max-tools-per-namespace", o.NamespaceStorage.Tools, "Most McpTools the imports of one namespace's McpServers may store; 0: no limit.")
	fs.Var(bytesVar(&o.NamespaceStorage.DefinitionBytes), "max-definition-bytes-per-namespace", `Most bytes of tool definitions the imports of one namespace's McpServers may store (e.g. "64Mi"); 0: no limit.`)
	fs.Int64Var(&o.NamespaceStorage.PromptsAndResources, "max-prompts-and-resources-per-namespace", o.NamespaceStorage.PromptsAndResources, "Most McpPrompts and McpResources the imports of one namespace's McpServers may store; 0: no limit.")
}

// bindToolListeners: imports when a server announces that its tools
// changed (docs/adr/028).
func (c *commandLine) bindToolListeners(fs *flag.FlagSet) {
	l := &c.opts.ToolListeners
	fs.BoolVar(&l.Enabled, "listen-tool-changes", l.Enabled, "Keep a stream open to each Ready McpServer that announces tool list changes, and import when it does.")
	fs.IntVar(&l.Max, "max-tool-listeners", l.Max, "Most McpServers listened to at once.")
	fs.IntVar(&l.MaxPerNamespace, "max-tool-listeners-per-namespace", l.MaxPerNamespace, "Most McpServers of one namespace listened to at once; 0 means a quarter of --max-tool-listeners.")
	fs.DurationVar(&l.Debounce, "tool-change-debounce", l.Debounce, "How long a tool list change waits for more before the one import they trigger.")
	fs.DurationVar(&l.MinInterval, "tool-change-min-interval", l.MinInterval, "Shortest gap between two imports one McpServer's change notifications trigger.")
}

// bindSharing: whose word a sharing selector takes
// (docs/adr/046-selector-trust.md).
func (c *commandLine) bindSharing(fs *flag.FlagSet) {
	fs.StringVar(&c.opts.SharingTrust.KeyPrefix, "sharing-selector-key-prefix", c.opts.SharingTrust.KeyPrefix, `Label key prefix every McpServer's spec.sharing.namespaceSelector must use (e.g. "sharing.mcp.catalog.dev/"), which the namespace admission policy reserves to administrators; a selector with another key grants no namespace. Empty trusts every key, and so whoever may label a namespace.`)
}

// bindAPIClients: the rates of the manager's client of the Kubernetes API
// and of the gateway's own client for reviews, so that neither waits
// behind the other.
func (c *commandLine) bindAPIClients(fs *flag.FlagSet) {
	fs.Float64Var(&c.apiQPS, "kube-api-qps", defaultKubeAPIQPS, "Requests per second the manager may send to the Kubernetes API server.")
	fs.IntVar(&c.apiBurst, "kube-api-burst", defaultKubeAPIBurst, "Burst of requests the manager may send to the Kubernetes API server.")
	fs.Float64Var(&c.reviewQPS, "gateway-review-qps", manager.DefaultGatewayReviewQPS, "Token and access reviews a second the gateway may send, on a client of its own.")
	fs.IntVar(&c.opts.GatewayReviewBurst, "gateway-review-burst", manager.DefaultGatewayReviewBurst, "Burst of token and access reviews the gateway may send.")
}

// bindGateway: the gateway's endpoint and what one request may hold.
func (c *commandLine) bindGateway(fs *flag.FlagSet) {
	o := &c.opts
	fs.StringVar(&o.GatewayAddr, "gateway-bind-address", o.GatewayAddr, `Address of the MCP gateway for agents; empty disables it.`)
	fs.StringVar(&o.GatewayCertDir, "gateway-cert-dir", o.GatewayCertDir, "Directory with the gateway's tls.crt and tls.key (reloaded on change).")
	fs.BoolVar(&o.GatewayInsecure, "gateway-insecure", o.GatewayInsecure, "Serve the gateway over plain HTTP (development and tests only).")
	fs.StringVar(&o.GatewayAudience, "gateway-audience", o.GatewayAudience, "Audience agents' ServiceAccount tokens must be bound to.")
	fs.BoolVar(&o.GatewayStateless, "gateway-stateless", o.GatewayStateless, "Serve initialize-era sessions without server memory, so that any gateway replica answers any request.")
	o.GatewayMaxRequestBytes = gateway.DefaultMaxRequestBytes
	fs.Var(bytesVar(&o.GatewayMaxRequestBytes), "gateway-max-request-bytes", `Largest request body the gateway reads (e.g. "4Mi"); a larger one is refused with 413 before any of it is decoded.`)
	fs.Var(bytesVar(&o.GatewayMaxRequestBytesInFlight), "gateway-max-request-bytes-in-flight", `Request bytes one gateway replica holds at once, each namespace at most half (e.g. "64Mi"); 0 means a quarter of GOMEMLIMIT when set, else `+fmt.Sprint(resource.NewQuantity(budget.DefaultMaxRequestBytesInFlight, resource.BinarySI))+`.`)
	fs.StringVar(&o.GatewayCallbackURL, "gateway-callback-url", o.GatewayCallbackURL, "The gateway's /oauth/callback as people's browsers reach it (e.g. https://mcp.example.com/oauth/callback): the redirect URI registered for per-person McpServers (spec.auth.perPerson); empty refuses their calls.")
	fs.StringVar(&o.GatewayPublicURL, "gateway-public-url", o.GatewayPublicURL, "The gateway's MCP endpoint as agents reach it (e.g. https://mcp.example.com/mcp); when set, each caller's catalog is also served as a read-only MCP Registry at /v0.1/ (docs/registry.md).")
	fs.IntVar(&o.GatewayMaxTasksPerIdentity, "gateway-max-tasks-per-identity", gateway.DefaultMaxTasksPerIdentity, "Tasks one ServiceAccount, or one person in a namespace, may have open on one gateway replica; past it a call asking for a task is refused (TasksLimited).")
	fs.IntVar(&o.GatewayMaxIdleConnections, "gateway-max-idle-connections", gateway.DefaultMaxIdleConnections, "Connections one gateway replica keeps open idle between requests; past it the one idle longest is closed (its client opens a new one).")
	fs.DurationVar(&o.GatewayListTTL, "gateway-list-ttl", gateway.DefaultListTTL, "How long an agent may use a tools/list result without asking again (ttlMs).")
	fs.DurationVar(&o.GatewayCredentialTTL, "gateway-credential-cache-ttl", credentials.DefaultCacheTTL, "How long the gateway keeps a credential Secret it read before reading it again (a rotation is used within it).")
}

// bindGatewayOAuth: OAuth access tokens of administrator-configured OIDC
// issuers, beside ServiceAccount tokens (docs/gateway-oauth.md).
func (c *commandLine) bindGatewayOAuth(fs *flag.FlagSet) {
	o := &c.opts.GatewayOAuth
	fs.StringVar(&o.Resource, "gateway-oauth-resource", o.Resource, "Canonical URI of the gateway's MCP endpoint (RFC 8707), e.g. https://mcp.example.com/mcp: OAuth access tokens must be issued for it, and the gateway's protected resource metadata names it. Empty accepts no OAuth access token.")
	fs.StringVar(&c.oauthIssuersFile, "gateway-oauth-issuers-file", "", "YAML file listing the OIDC issuers whose access tokens the gateway accepts, with their audiences and claim mappings (docs/gateway-oauth.md).")
	fs.StringVar(&c.oauthScopes, "gateway-oauth-scopes", "", "Comma-separated scopes the gateway advertises in its protected resource metadata and its 401 challenge.")
	fs.DurationVar(&o.ClockSkew, "gateway-oauth-clock-skew", o.ClockSkew, "Leeway given to an access token's exp, nbf and iat against the gateway's clock.")
	fs.IntVar(&o.TokenCacheSize, "gateway-oauth-token-cache-size", o.TokenCacheSize, "Validated access tokens one gateway replica remembers, each until it expires.")
	s := &c.opts.GatewayConsentSignIn
	fs.StringVar(&s.ClientID, "gateway-consent-signin-client-id", "", "Client ID the gateway has at the OIDC issuer people sign in at, whose redirect URI is --gateway-callback-url: the browser that follows a per-person consent link signs in with it as the person the link is for before anything goes to the server's authorization server. Empty hands out no consent link (per-person calls are refused).")
	fs.StringVar(&c.consentSecretFile, "gateway-consent-signin-client-secret-file", "", "File holding that client's secret; empty is a public client (PKCE alone).")
	fs.StringVar(&s.Issuer, "gateway-consent-signin-issuer", "", "Issuer URL (one of --gateway-oauth-issuers-file) that client is registered at; empty is the only issuer there.")
	fs.DurationVar(&o.KeyRefreshInterval, "gateway-oauth-key-refresh-interval", o.KeyRefreshInterval, "Shortest time between two fetches of one issuer's keys, or two attempts at its discovery: a token naming an unknown key waits for it.")
}

// bindGatewayGuardrail: the administrator's guardrail webhook, asked
// about every call and result (docs/gateway.md).
func (c *commandLine) bindGatewayGuardrail(fs *flag.FlagSet) {
	o := &c.opts.GatewayGuardrail
	fs.StringVar(&o.URL, "gateway-guardrail-url", o.URL, "URL of a guardrail webhook the gateway asks about every tool call before it is sent and every result before the agent reads it; empty asks none.")
	fs.StringVar(&c.guardrailKeyFile, "gateway-guardrail-key-file", "", "File holding the key (at least 32 bytes) that signs every request to the guardrail webhook (header "+guardrail.SignatureHeader+").")
	fs.DurationVar(&o.Timeout, "gateway-guardrail-timeout", guardrail.DefaultTimeout, "How long the gateway waits for the guardrail webhook's answer.")
	fs.Float64Var(&o.Rate, "gateway-guardrail-rate", guardrail.DefaultRate, "Guardrail checks per second each namespace may cause; past its burst, a check is treated as unanswered.")
	fs.IntVar(&o.Burst, "gateway-guardrail-burst", guardrail.DefaultBurst, "Burst of each namespace's guardrail checks.")
	fs.StringVar(&c.failClosedFrom, "gateway-guardrail-fail-closed-from", string(mcpv1alpha1.DataClassConfidential), "Lowest data class whose calls and results are refused while the guardrail gives no answer (Public, Internal, Confidential or Restricted); below it they go on without it.")
}

// guardrail completes the guardrail's options: its key and the class from
// which it fails closed.
func (c *commandLine) guardrail(o *manager.Options) error {
	class := mcpv1alpha1.DataClass(c.failClosedFrom)
	if !class.Valid() {
		return fmt.Errorf("--gateway-guardrail-fail-closed-from is %q, none of Public, Internal, Confidential, Restricted", c.failClosedFrom)
	}
	o.GatewayGuardrailFailClosedFrom = class
	if o.GatewayGuardrail.URL == "" {
		return nil
	}
	if c.guardrailKeyFile == "" {
		return errors.New("--gateway-guardrail-url needs --gateway-guardrail-key-file: every request to the guardrail is signed")
	}
	key, err := os.ReadFile(c.guardrailKeyFile)
	if err != nil {
		return fmt.Errorf("reading --gateway-guardrail-key-file: %w", err)
	}
	o.GatewayGuardrail.Key = bytes.TrimSpace(key)
	if len(o.GatewayGuardrail.Key) < guardrail.MinKeyLength {
		return fmt.Errorf("--gateway-guardrail-key-file holds %d bytes; the key needs at least %d", len(o.GatewayGuardrail.Key), guardrail.MinKeyLength)
	}
	return nil
}

// bindGatewayApprovals: calls that wait for a person's approval.
func (c *commandLine) bindGatewayApprovals(fs *flag.FlagSet) {
	o := &c.opts
	fs.StringVar(&o.GatewayApprovalPolicy, "gateway-approval-policy", o.GatewayApprovalPolicy, `Name of the ValidatingAdmissionPolicy that keeps a caller from deciding its own McpCallApproval (the chart's <fullname>-call-approvals, config/default's mcp-catalog-call-approvals); while it, or a binding of it that denies, is missing, calls that need a person's approval are refused. Empty checks nothing (development only).`)
	fs.StringVar(&o.GatewayApprovalKeySecret, "gateway-approval-key-secret", o.GatewayApprovalKeySecret, `Secret (namespace/name) with the approval signing keys "current" and "previous", shared by every gateway replica and read by the controllers, which notify only about approvals sealed with them; empty generates a key per gateway process and notifies about no approval (development only).`)
	fs.DurationVar(&o.GatewayApprovalTTL, "gateway-approval-ttl", gateway.DefaultApprovalTTL, "How long a call approval can be decided and used.")
	fs.StringVar(&o.GatewayApprovalURL, "gateway-approval-url", o.GatewayApprovalURL, "URL shown to an agent's user for a call approval, with {namespace} and {name}; empty names the object on the API server.")
}

// bindGatewayAudit: where the gateway's audit records and traces go.
func (c *commandLine) bindGatewayAudit(fs *flag.FlagSet) {
	o := &c.opts
	fs.StringVar(&c.auditPath, "gateway-audit-file", "-", `File the gateway appends audit records to (opened append-only, never rotated by the gateway); "-" is standard output.`)
	fs.StringVar(&c.auditPath, "gateway-audit-log", "-", `Deprecated name of --gateway-audit-file.`)
	fs.DurationVar(&o.GatewayAuditTimeout, "gateway-audit-timeout", audit.DefaultAuditTimeout, "How long one audit write may take before the call it describes is refused.")
	fs.DurationVar(&o.GatewayDenialWindow, "gateway-audit-denial-window", audit.DefaultDenialWindow, "How long repeats of one refusal (same caller, tool and reason) are aggregated into one audit record.")
	fs.StringVar(&o.TracingOTLPEndpoint, "tracing-otlp-endpoint", o.TracingOTLPEndpoint, `OTLP/gRPC endpoint URL the gateway exports traces to (e.g. http://otel-collector.monitoring:4317); empty leaves tracing off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.`)
}

// bindGatewayBudgets: what one ServiceAccount and one namespace may take
// of a gateway replica, in requests and in bytes answered.
func (c *commandLine) bindGatewayBudgets(fs *flag.FlagSet) {
	b := &c.opts.GatewayBudgets
	fs.Float64Var((*float64)(&b.ServiceAccountRate), "gateway-serviceaccount-rate", float64(budget.DefaultServiceAccountRate), "Requests a second one ServiceAccount may make to one gateway replica.")
	fs.IntVar(&b.ServiceAccountBurst, "gateway-serviceaccount-burst", budget.DefaultServiceAccountBurst, "Burst of requests one ServiceAccount may make to one gateway replica.")
	fs.IntVar(&b.ServiceAccountConcurrency, "gateway-serviceaccount-concurrency", budget.DefaultServiceAccountConcurrency, "Requests one ServiceAccount may have in flight at one gateway replica.")
	fs.Float64Var((*float64)(&b.NamespaceRate), "gateway-namespace-rate", float64(budget.DefaultNamespaceRate), "Requests a second the ServiceAccounts of one namespace together may make to one gateway replica.")
	fs.IntVar(&b.NamespaceBurst, "gateway-namespace-burst", budget.DefaultNamespaceBurst, "Burst of requests of one namespace at one gateway replica.")
	fs.IntVar(&b.NamespaceConcurrency, "gateway-namespace-concurrency", budget.DefaultNamespaceConcurrency, "Requests one namespace may have in flight at one gateway replica.")
	b.ServiceAccountBytesRate, b.ServiceAccountBytesBurst = budget.DefaultServiceAccountBytesRate, budget.DefaultServiceAccountBytesBurst
	b.NamespaceBytesRate, b.NamespaceBytesBurst = budget.DefaultNamespaceBytesRate, budget.DefaultNamespaceBytesBurst
	fs.Var(bytesVar(&b.ServiceAccountBytesRate), "gateway-serviceaccount-bytes-rate", "Bytes a second one ServiceAccount may be answered (tool lists, call results) by one gateway replica.")
	fs.Var(bytesVar(&b.ServiceAccountBytesBurst), "gateway-serviceaccount-bytes-burst", "Burst of bytes one ServiceAccount may be answered by one gateway replica.")
	fs.Var(bytesVar(&b.NamespaceBytesRate), "gateway-namespace-bytes-rate", "Bytes a second the ServiceAccounts of one namespace together may be answered by one gateway replica.")
	fs.Var(bytesVar(&b.NamespaceBytesBurst), "gateway-namespace-bytes-burst", "Burst of bytes one namespace may be answered by one gateway replica.")
}

// bindNotifications: the webhook told of approvals and drift.
func (c *commandLine) bindNotifications(fs *flag.FlagSet) {
	o := &c.opts
	fs.StringVar(&o.NotifyWebhookURL, "notify-webhook-url", o.NotifyWebhookURL, "URL (https, or http to loopback) that receives a signed CloudEvent when a call waits for approval, when one is decided, and when a tool's definition drifts; empty sends none.")
	fs.StringVar(&o.NotifyWebhookURLFile, "notify-webhook-url-file", o.NotifyWebhookURLFile, "File holding the webhook URL instead of --notify-webhook-url (a mounted Secret), for a URL that is itself a credential; read at every delivery and only ever shown as scheme, host and port.")
	fs.StringVar(&o.NotifyWebhookKeyFile, "notify-webhook-key-file", o.NotifyWebhookKeyFile, "File with the HMAC key that signs the notifications (a mounted Secret; read at every delivery).")
	fs.BoolVar(&o.NotifyCallApprovals, "notify-call-approvals", o.NotifyCallApprovals, "Notify about call approvals as well as drift; a shard's Deployment turns it off, since every shard sees every approval.")
}

// options completes the Options from the parsed flags: what a flag's own
// parsing cannot check is checked here, and an error names its flag. The
// audit file is main's to open, since it must stay open.
func (c *commandLine) options() (manager.Options, error) {
	o := c.opts
	if c.maxTools < 0 || c.maxTools > math.MaxInt32 {
		return o, errors.New("--max-tools is out of range")
	}
	o.Caps.MaxTools = int32(c.maxTools)
	o.GatewayReviewQPS = float32(c.reviewQPS)
	for _, ns := range strings.Split(c.watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.WatchNamespaces = append(o.WatchNamespaces, ns)
		}
	}
	var err error
	if o.AllowedPrivateCIDRs, err = egress.ParseCIDRs(c.privateCIDRs); err != nil {
		return o, fmt.Errorf("parsing --allowed-private-cidrs: %w", err)
	}
	if o.NamespacePrivateCIDRs, err = egress.ParseNamespaceCIDRs(c.namespaceCIDRs); err != nil {
		return o, fmt.Errorf("parsing --namespace-private-cidrs: %w", err)
	}
	if c.tokenProxy != "" {
		u, err := url.Parse(c.tokenProxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, errors.New("--token-endpoint-proxy must be an http or https URL")
		}
		o.TokenEndpointProxy = u
	}
	if c.tokenCAFile != "" {
		pem, err := os.ReadFile(c.tokenCAFile)
		if err != nil {
			return o, fmt.Errorf("reading --token-endpoint-ca-file: %w", err)
		}
		o.TokenEndpointRootCAs = x509.NewCertPool()
		if !o.TokenEndpointRootCAs.AppendCertsFromPEM(pem) {
			return o, errors.New("--token-endpoint-ca-file holds no PEM certificate")
		}
	}
	if err := c.oauth(&o); err != nil {
		return o, err
	}
	if c.consentSecretFile != "" {
		v, err := os.ReadFile(c.consentSecretFile)
		if err != nil {
			return o, fmt.Errorf("reading --gateway-consent-signin-client-secret-file: %w", err)
		}
		o.GatewayConsentSignIn.ClientSecret = strings.TrimSpace(string(v))
	}
	if err := c.guardrail(&o); err != nil {
		return o, err
	}
	return o, nil
}

// oauth completes the gateway's OAuth options: the scopes and the issuers
// file, then checks them as the gateway will.
func (c *commandLine) oauth(o *manager.Options) error {
	for _, s := range strings.Split(c.oauthScopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.GatewayOAuth.Scopes = append(o.GatewayOAuth.Scopes, s)
		}
	}
	if c.oauthIssuersFile != "" {
		data, err := os.ReadFile(c.oauthIssuersFile)
		if err != nil {
			return fmt.Errorf("reading --gateway-oauth-issuers-file: %w", err)
		}
		if o.GatewayOAuth.Issuers, err = oauthresource.ParseIssuers(data); err != nil {
			return fmt.Errorf("--gateway-oauth-issuers-file: %w", err)
		}
	}
	if err := o.GatewayOAuth.Validate(); err != nil {
		return fmt.Errorf("--gateway-oauth-resource and --gateway-oauth-issuers-file: %w", err)
	}
	return nil
}

// byteCount is what a size flag may set: rate.Limit and int as well as
// int64.
type byteCount interface{ ~int | ~int64 | ~float64 }

// bytesFlag reads a size as a Kubernetes quantity ("64Mi", "1G",
// "1048576"), as the chart's values are written.
type bytesFlag[T byteCount] struct{ v *T }

func bytesVar[T byteCount](v *T) bytesFlag[T] { return bytesFlag[T]{v} }

func (f bytesFlag[T]) String() string {
	if f.v == nil {
		return "0"
	}
	return byteSize(int64(*f.v))
}

func (f bytesFlag[T]) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return fmt.Errorf("%q is not a size in bytes", s)
	}
	*f.v = T(n)
	return nil
}

// byteSize writes n as --help and the chart write sizes.
func byteSize(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }
