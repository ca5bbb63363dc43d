// Package manager assembles the operator's controller-runtime manager: the
// scheme, metrics and health serving, leader election and the controllers.
// cmd/manager runs it in a cluster; cmd/devrun runs it next to a local
// control plane.
package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/internal/tenancy"
)

// The gateway's own client for reviews: 100 a second, bursts of 200, each
// namespace's callers taking at most their share of it
// (authz.DefaultNamespaceReviewRate).
const (
	DefaultGatewayReviewQPS   = 100
	DefaultGatewayReviewBurst = 200
)

// DefaultGatewayAudience is the audience agents request for their tokens
// (a projected ServiceAccount token with this audience).
const DefaultGatewayAudience = "mcp-catalog-gateway"

// LeaderElectionID names the lease the replicas of the manager compete for.
const LeaderElectionID = "mcp-catalog-operator.mcp.catalog.dev"

// Components name what one process of the binary runs.
const (
	// ComponentsAll runs the controllers and the gateway in one process, as
	// a development run does.
	ComponentsAll = "all"
	// ComponentsControllers runs the controllers only, under leader
	// election; the gateway runs as its own Deployment.
	ComponentsControllers = "controllers"
	// ComponentsGateway runs the gateway only: no controllers and no leader
	// election, so that every replica serves agents.
	ComponentsGateway = "gateway"
)

// ErrShardedGateway is returned for a shard (a watch label selector) that
// would also serve the gateway, which must see every object.
var ErrShardedGateway = errors.New("manager: a shard (--watch-label-selector) runs the controllers only; run the gateway as its own process (--components=controllers)")

// ErrBadSelector is returned for a watch label selector that does not
// parse.
var ErrBadSelector = errors.New("manager: invalid watch label selector")

// ErrUnknownComponents is returned for a Components value that is none of
// the above.
var ErrUnknownComponents = errors.New("manager: unknown components (want all, controllers or gateway)")

// Options configures the manager. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	// MetricsAddr is where metrics are served; "0" disables them.
	MetricsAddr string
	// SecureMetrics serves metrics over HTTPS behind authentication and
	// authorisation (TokenReview and SubjectAccessReview).
	SecureMetrics bool
	// MetricsCertDir holds tls.crt and tls.key for the metrics server; empty
	// means a self-signed certificate generated at start.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz.
	ProbeAddr string
	// PprofAddr serves Go's profiles (net/http/pprof); empty or "0"
	// disables them. It has no authentication: bind it to localhost and
	// reach it with kubectl port-forward.
	PprofAddr string
	// Components is what this process runs: ComponentsAll (the default when
	// empty), ComponentsControllers or ComponentsGateway.
	Components string
	// LeaderElect makes only one replica active at a time. It applies to the
	// controllers; a gateway-only process never elects.
	LeaderElect bool
	// LeaderElectionNamespace is where the lease lives; empty means the
	// namespace the manager runs in.
	LeaderElectionNamespace string
	// WatchNamespaces restricts the manager to these namespaces; empty means
	// all namespaces.
	WatchNamespaces []string
	// WatchLabelSelector, if set, makes this process one shard: its cache
	// holds, and its controllers reconcile, only the McpServers and McpTools
	// the selector selects, and it writes the status of only the
	// McpDelegationProfiles and McpAccessPolicies it selects
	// (docs/adr/019-sharding.md). A shard runs the controllers only; the
	// gateway needs every object.
	WatchLabelSelector string
	// LeaderElectionID names the lease; empty means LeaderElectionID. Each
	// shard needs its own, or only one shard would ever run.
	LeaderElectionID string
	// EnableHTTP2 allows HTTP/2 on the metrics server. It is off by default
	// because of the HTTP/2 rapid-reset and stream-cancellation CVEs.
	EnableHTTP2 bool
	// GracefulShutdownTimeout bounds how long running reconciles may take to
	// finish once the manager is asked to stop.
	GracefulShutdownTimeout time.Duration
	// AllowPrivateNetworks lets the MCP client and the token exchange dial
	// loopback and private addresses for every server. Meant for
	// development and tests.
	AllowPrivateNetworks bool
	// AllowedPrivateCIDRs are the private ranges an McpServer with
	// spec.allowPrivateNetwork may reach, and private token endpoints may be
	// in. Without them the tenant's flag reaches nothing private. Loopback
	// is reachable only if listed; link-local and metadata never are.
	AllowedPrivateCIDRs []netip.Prefix
	// NamespacePrivateCIDRs are further such ranges per namespace.
	NamespacePrivateCIDRs map[string][]netip.Prefix
	// TokenEndpointProxy, if set, is the HTTP proxy token exchanges go
	// through. HTTP(S)_PROXY in the environment is never used.
	TokenEndpointProxy *url.URL
	// MaxConcurrentServers bounds how many servers are imported or probed at
	// once; a hung server holds one slot for at most its own budget.
	MaxConcurrentServers int
	// MaxConcurrentServersPerNamespace bounds how many of those one
	// namespace's servers hold at once; 0 means three quarters of
	// MaxConcurrentServers (docs/adr/024-tenant-fairness.md).
	MaxConcurrentServersPerNamespace int
	// SharingTrust is whose labels an McpServer's sharing selector takes:
	// with a key prefix, only keys under it, which an admission policy on
	// namespaces reserves to administrators (docs/adr/046).
	SharingTrust governance.SelectorTrust
	// ToolListeners configures the streams kept open to McpServers that
	// announce changes of their tools (docs/adr/028).
	ToolListeners ToolListenerOptions
	// CatalogBytesInFlight is the budget of catalog bytes all imports in
	// flight may hold together (one namespace at most half); 0 means a
	// quarter of GOMEMLIMIT, or without one MaxConcurrentServers imports at
	// the default catalog ceiling.
	CatalogBytesInFlight int64
	// CatalogBudget, if set, is used instead of one of CatalogBytesInFlight
	// (tests read what it held).
	CatalogBudget *tenancy.Budget
	// Caps are the ceilings on what one McpServer's spec may ask for; a
	// zero field caps nothing.
	Caps tenancy.Caps
	// NamespaceStorage bounds the McpTools and definition bytes the
	// imports of one namespace's servers store; a zero field bounds
	// nothing.
	NamespaceStorage tenancy.StorageLimits
	// CredentialRetryInterval is how soon a server whose Secret is missing
	// is looked at again; 0 means the controller's default (15s). Secrets
	// are not watched (docs/adr/003-secret-access.md).
	CredentialRetryInterval time.Duration
	// HealthInterval, when set and positive for a server, is the
	// health-check interval the controller uses for it in place of its
	// spec.healthCheck.interval.
	// It is for tests, which would otherwise wait out the API's 5 s minimum
	// to see a probe happen or not; no flag sets it.
	HealthInterval func(*mcpv1alpha1.McpServer) time.Duration
	// SkipControllerNameValidation lets several managers run in one process,
	// one after the other, as tests that restart the manager need.
	SkipControllerNameValidation bool

	// GatewayAddr is where the gateway serves MCP to agents; empty disables
	// it.
	GatewayAddr string
	// GatewayCertDir holds the gateway's tls.crt and tls.key.
	GatewayCertDir string
	// GatewayInsecure allows the gateway to serve plain HTTP. Development
	// and tests only.
	GatewayInsecure bool
	// GatewayAudience is the audience agents' ServiceAccount tokens must be
	// bound to.
	GatewayAudience string
	// GatewayOAuth configures the OAuth access tokens of
	// administrator-configured OIDC issuers, for the gateway's identify
	// stage to accept beside ServiceAccount tokens (oauthresource.New).
	// The gateway does not read it yet (docs/gateway-oauth.md).
	GatewayOAuth oauthresource.Options
	// GatewayAudit receives the gateway's audit records; nil means standard
	// output.
	GatewayAudit io.Writer
	// GatewayAuditTimeout bounds each audit write; 0 means the gateway's
	// default.
	GatewayAuditTimeout time.Duration
	// GatewayStateless serves the initialize-era protocol without sessions
	// kept in memory, so that any replica answers any request
	// (docs/adr/015-gateway-deployment.md). A single process may keep
	// sessions.
	GatewayStateless bool
	// GatewayReady, if set, receives the gateway's bound address.
	GatewayReady chan<- string
	// GatewayApprovalKeySecret names the Secret (namespace/name, keys
	// "current" and optional "previous") every gateway replica signs
	// approval state and McpCallApprovals with. Empty generates a key per
	// process, which suits one process in development only.
	GatewayApprovalKeySecret string
	// GatewayApprovalPolicy names the ValidatingAdmissionPolicy that keeps
	// a caller from deciding its own McpCallApproval; while it or a
	// denying binding of it is missing, the gateway uses no approval.
	// Empty checks nothing (development).
	GatewayApprovalPolicy string
	// GatewayApprovalTTL is how long an McpCallApproval can be decided and
	// used; 0 means the gateway's default (15 minutes).
	GatewayApprovalTTL time.Duration
	// GatewayApprovalURL is the URL shown to an agent's user for an
	// approval, with {namespace} and {name} replaced; empty names the
	// object in the Kubernetes API.
	GatewayApprovalURL string
	// GatewayBudgets bound each ServiceAccount's and each namespace's
	// requests at a gateway replica; zero fields take the defaults.
	GatewayBudgets budget.Budgets
	// GatewayDenialWindow is how long repeats of one denial are aggregated
	// into one audit record; 0 means a minute.
	GatewayDenialWindow time.Duration
	// GatewayCredentialTTL is how long the gateway keeps a credential
	// Secret it read; 0 means 10s.
	GatewayCredentialTTL time.Duration
	// GatewayListTTL is the ttlMs of the gateway's list results; 0 means
	// the gateway's default.
	GatewayListTTL time.Duration
	// GatewayListChangeDebounce is the shortest time between two rounds
	// that tell agents of tool list changes; 0 means the gateway's
	// default.
	GatewayListChangeDebounce time.Duration
	// GatewayMaxRequestBytes bounds the body of a request to the gateway;
	// 0 means gateway.DefaultMaxRequestBytes.
	GatewayMaxRequestBytes int64
	// GatewayMaxTasksPerIdentity bounds the tasks one identity may have
	// open on a gateway replica; 0 means gateway.DefaultMaxTasksPerIdentity.
	GatewayMaxTasksPerIdentity int
	// GatewayPublicURL is the gateway's MCP endpoint as agents reach it;
	// when set the gateway also serves registry out (docs/registry.md).
	GatewayPublicURL string
	// GatewayGuardrail is the guardrail webhook the gateway asks about
	// every call and result (docs/gateway.md); an empty URL asks none.
	// GatewayGuardrailFailClosedFrom is the lowest data class refused while
	// it gives no answer (empty: Confidential).
	GatewayGuardrail               guardrail.Config
	GatewayGuardrailFailClosedFrom mcpv1alpha1.DataClass
	// GatewayCallbackURL is the gateway's /oauth/callback as people's
	// browsers reach it, the redirect URI of per-person servers' clients
	// (ADR 056); empty refuses calls of per-person servers.
	GatewayCallbackURL string
	// GatewayConsentSignIn is the gateway's client at the identity
	// provider where the browser that follows a consent link signs in as
	// the person (ADR 063); without a client ID no consent link is handed
	// out. Its issuer must be one of GatewayOAuth's; empty is the only one.
	GatewayConsentSignIn ConsentSignIn
	// GatewayPersonAuthRootCAs, when set, replace the system roots for
	// per-person servers' authorization servers (tests).
	GatewayPersonAuthRootCAs *x509.CertPool
	// GatewayMaxIdleConnections bounds the connections a gateway replica
	// keeps open idle; 0 means gateway.DefaultMaxIdleConnections.
	GatewayMaxIdleConnections int
	// GatewayMaxRequestBytesInFlight bounds the request bytes a gateway
	// replica holds at once; 0 means the gateway's default.
	GatewayMaxRequestBytesInFlight int64
	// GatewayReviewQPS and GatewayReviewBurst limit the TokenReviews and
	// SubjectAccessReviews the gateway sends, on a client of their own
	// (the manager's reads and writes do not wait behind them, nor they
	// behind the manager's); 0 means DefaultGatewayReviewQPS and
	// DefaultGatewayReviewBurst.
	GatewayReviewQPS   float32
	GatewayReviewBurst int
	// GatewayClock is the gateway's clock, and its credential cache's;
	// nil means the real clock. Tests set a fake one.
	GatewayClock clock.PassiveClock
	// GatewayNow, if set, is the gateway's clock as a func.
	//
	// Deprecated: set GatewayClock, which wins when both are set.
	GatewayNow func() time.Time
	// NotifyWebhookURL, if set, receives an event (a signed CloudEvent)
	// when a call starts waiting for approval, when a person decides one,
	// and when a tool's definition drifts from the approved one. The
	// controllers' leader sends them.
	NotifyWebhookURL string
	// NotifyWebhookURLFile holds the URL instead, for a URL that is a
	// credential (a mounted Secret key).
	NotifyWebhookURLFile string
	// NotifyWebhookKeyFile holds the HMAC key the events are signed with;
	// required with NotifyWebhookURL.
	NotifyWebhookKeyFile string
	// NotifyCallApprovals sends the events about call approvals as well
	// as drift. Every shard sees every approval, so only the default
	// instance of a sharded installation sends them.
	NotifyCallApprovals bool
	// TokenEndpointRootCAs, if set, replaces the system roots when
	// verifying delegation profiles' token endpoints.
	TokenEndpointRootCAs *x509.CertPool
	// TracingOTLPEndpoint, if set, exports the gateway's traces over
	// OTLP/gRPC to this URL (http:// for plaintext). Tracing is also on
	// when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// is set, and off, whatever else, with OTEL_SDK_DISABLED=true.
	TracingOTLPEndpoint string
	// TracerProvider, if set, is used instead of an OTLP pipeline (tests).
	TracerProvider trace.TracerProvider
}

// ToolListenerOptions configure the controllers' tool listeners.
type ToolListenerOptions struct {
	// Enabled turns the listeners on.
	Enabled bool
	// Max and MaxPerNamespace bound the streams open at once; 0 means 512
	// and a quarter of Max.
	Max, MaxPerNamespace int
	// Debounce is how long a change waits for more before the one import
	// they trigger; MinInterval the shortest gap between two imports one
	// server's notifications trigger. 0 means 2s and 30s.
	Debounce, MinInterval time.Duration
}

// DefaultOptions returns the options the manager binary starts from.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:             ":8443",
		SecureMetrics:           true,
		ProbeAddr:               ":8081",
		GracefulShutdownTimeout: 30 * time.Second,
		MaxConcurrentServers:    controller.DefaultMaxConcurrentServers,
		GatewayAudience:         DefaultGatewayAudience,
		GatewayOAuth:            oauthresource.DefaultOptions(),
		Components:              ComponentsAll,
		NotifyCallApprovals:     true,
		ToolListeners: ToolListenerOptions{
			Enabled:     true,
			Max:         controller.DefaultMaxListeners,
			Debounce:    controller.DefaultListenDebounce,
			MinInterval: controller.DefaultListenMinInterval,
		},
	}
}

// New builds the manager and registers the controllers and health checks.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	if cfg == nil {
		return nil, errors.New("manager: no REST config")
	}
	controllers, gw, err := components(opts.Components)
	if err != nil {
		return nil, err
	}
	var tlsOpts []func(*tls.Config)
	if !opts.EnableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{
		BindAddress:   opts.MetricsAddr,
		SecureServing: opts.SecureMetrics,
		CertDir:       opts.MetricsCertDir,
		TLSOpts:       tlsOpts,
	}
	if opts.SecureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	// The cache holds only what the controllers and the gateway read; a
	// process without the gateway does not hold tool definitions either,
	// and one with it only those of tools it can list (trimForGateway).
	cacheOpts := cache.Options{DefaultTransform: trimForGateway}
	if !gw || opts.GatewayAddr == "" {
		cacheOpts.DefaultTransform = controller.TrimForControllers
	}
	var shard labels.Selector
	if opts.WatchLabelSelector != "" {
		if shard, err = labels.Parse(opts.WatchLabelSelector); err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrBadSelector, opts.WatchLabelSelector, err)
		}
		if gw && opts.GatewayAddr != "" {
			return nil, ErrShardedGateway
		}
		// Profiles are cached whole: a shard's servers may use any of them.
		cacheOpts.ByObject = map[client.Object]cache.ByObject{
			&mcpv1alpha1.McpServer{}: {Label: shard},
			&mcpv1alpha1.McpTool{}:   {Label: shard},
		}
	}
	leaseID := LeaderElectionID
	if opts.LeaderElectionID != "" {
		leaseID = opts.LeaderElectionID
	}
	if len(opts.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = make(map[string]cache.Config, len(opts.WatchNamespaces))
		for _, ns := range opts.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}

	shutdown := opts.GracefulShutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsOpts,
		HealthProbeBindAddress: opts.ProbeAddr,
		PprofBindAddress:       opts.PprofAddr,
		// Only the controllers need one writer; a gateway-only replica
		// answers whether or not it would hold the lease.
		LeaderElection:                opts.LeaderElect && controllers,
		LeaderElectionID:              leaseID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		Cache:                         cacheOpts,
		Controller:                    config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding readiness check: %w", err)
	}
	w, err := newWire(mgr, opts)
	if err != nil {
		return nil, err
	}
	if controllers {
		if err := setupControllers(mgr, opts, w, shard); err != nil {
			return nil, err
		}
	}
	if gw && opts.GatewayAddr != "" {
		if err := setupGateway(mgr, opts, w); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// components reports whether a Components value runs the controllers and
// the gateway.
func components(c string) (controllers, gateway bool, err error) {
	switch c {
	case "", ComponentsAll:
		return true, true, nil
	case ComponentsControllers:
		return true, false, nil
	case ComponentsGateway:
		return false, true, nil
	}
	return false, false, fmt.Errorf("%w: %q", ErrUnknownComponents, c)
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := New(cfg, opts)
	if err != nil {
		return err
	}
	logging.FromContext(ctx, logging.Manager).Info("starting manager", "components", opts.Components, "leaderElection", opts.LeaderElect, "watchNamespaces", opts.WatchNamespaces)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// trimForGateway is the informers' transform in a process that serves the
// gateway: TrimForCache, and for an McpTool nobody can be offered
// (gateway.Listable: not enabled, not approved, not Ready) the definition
// texts dropped too, as a process without the gateway drops them. The
// gateway reads a definition only after that check, and a tool that
// becomes listable arrives whole in the watch event that says so.
func trimForGateway(in any) (any, error) {
	if t, ok := in.(*mcpv1alpha1.McpTool); ok && !gateway.Listable(t) {
		return controller.TrimForControllers(in)
	}
	return controller.TrimForCache(in)
}
