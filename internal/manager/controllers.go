package manager

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/notify"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/internal/tenancy"
	"github.com/mcp-catalog/operator/internal/tokenexchange"
	"github.com/mcp-catalog/operator/internal/toolview"
	"github.com/mcp-catalog/operator/internal/upstream"
	"github.com/mcp-catalog/operator/internal/version"
)

// EventSource is the reporting controller named on the operator's Events.
const EventSource = "mcp-catalog-operator"

// Version is the operator's version, stamped at build time (see package
// version). It is the clientInfo.version the operator's MCP client sends and
// the gateway's serverInfo.version.
var Version = version.Get()

// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpaccesspolicies;mcpsharedservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpcallapprovals,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpcallapprovals/status,verbs=update
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpreadmarks,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// wire is what the controllers and the gateway share: one MCP client and
// one door to the wire for imports, probes and tool calls alike.
type wire struct {
	mcp       *mcp.Client
	endpoints *upstream.Endpoints
}

func newWire(mgr ctrl.Manager, opts Options) (*wire, error) {
	policy := egress.Policy{
		AllowAllPrivate: opts.AllowPrivateNetworks,
		PrivateCIDRs:    opts.AllowedPrivateCIDRs,
		NamespaceCIDRs:  opts.NamespacePrivateCIDRs,
	}
	te, err := tokenexchange.New(tokenexchange.Options{RootCAs: opts.TokenEndpointRootCAs, Egress: policy, Proxy: opts.TokenEndpointProxy})
	if err != nil {
		return nil, fmt.Errorf("setting up token exchange: %w", err)
	}
	// Secrets are read directly from the API server (they are never
	// cached), profiles from the cache.
	return &wire{
		mcp: mcp.New(mcp.Options{Egress: policy, ClientVersion: Version}),
		endpoints: &upstream.Endpoints{Credentials: &credentials.Resolver{
			Secrets:   mgr.GetAPIReader(),
			Profiles:  mgr.GetClient(),
			Exchanger: te,
		}},
	}, nil
}

// setupControllers registers the reconcilers with the manager.
func setupControllers(mgr ctrl.Manager, opts Options, w *wire, shard labels.Selector) error {
	metrics.SetStateReader(mgr.GetCache())
	if err := controller.RegisterIndexes(context.Background(), mgr); err != nil {
		return err
	}
	// One cache of the tools' compiled rules for both controllers that
	// write tool status, so that a namespace's rules count once against
	// its bound.
	views := &toolview.Cache{}
	servers := &controller.McpServerReconciler{
		Views:         views,
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Upstream:      w.endpoints,
		MCP:           w.mcp,
		Recorder:      mgr.GetEventRecorder(EventSource),
		MaxConcurrent: opts.MaxConcurrentServers,

		MaxConcurrentPerNamespace: opts.MaxConcurrentServersPerNamespace,
		Caps:                      opts.Caps,
		CatalogBudget:             opts.CatalogBudget,
		Storage:                   opts.NamespaceStorage,
		CredentialRetryInterval:   opts.CredentialRetryInterval,
		HealthInterval:            opts.HealthInterval,
		SharingTrust:              opts.SharingTrust,
	}
	if l := opts.ToolListeners; l.Enabled {
		servers.Listeners = &controller.ToolListeners{MCP: w.mcp, Max: l.Max, MaxPerNamespace: l.MaxPerNamespace,
			Debounce: l.Debounce, MinInterval: l.MinInterval, Selector: shard}
	}
	if servers.CatalogBudget == nil && opts.CatalogBytesInFlight > 0 {
		servers.CatalogBudget = tenancy.NewBudget(opts.CatalogBytesInFlight)
	}
	if err := servers.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the McpServer controller: %w", err)
	}
	profiles := &controller.McpDelegationProfileReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CredentialRetryInterval: opts.CredentialRetryInterval, Selector: shard}
	if err := profiles.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the McpDelegationProfile controller: %w", err)
	}
	policies := &controller.McpAccessPolicyReconciler{Client: mgr.GetClient(), Selector: shard}
	if err := policies.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the McpAccessPolicy controller: %w", err)
	}
	shared := &controller.McpSharedServerReconciler{Client: mgr.GetClient(), Selector: shard, Trust: opts.SharingTrust}
	if err := shared.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the McpSharedServer controller: %w", err)
	}
	tools := &controller.McpToolReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Views: views}
	if err := tools.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the McpTool controller: %w", err)
	}
	if err := controller.SetupFeatureControllers(mgr, shard); err != nil {
		return fmt.Errorf("setting up the McpPrompt and McpResource controllers: %w", err)
	}
	return setupNotifications(mgr, opts)
}

// setupNotifications watches McpCallApprovals, for the metrics of calls
// waiting for a person, and adds the webhook when one is configured.
func setupNotifications(mgr ctrl.Manager, opts Options) error {
	// Registered now, so that a missing permission shows at start.
	if _, err := mgr.GetCache().GetInformer(context.Background(), &mcpv1alpha1.McpCallApproval{}); err != nil {
		return fmt.Errorf("watching McpCallApprovals: %w", err)
	}
	if opts.NotifyWebhookURL == "" && opts.NotifyWebhookURLFile == "" {
		return nil
	}
	hook, err := notify.NewWebhook(notify.WebhookOptions{URL: opts.NotifyWebhookURL, URLFile: opts.NotifyWebhookURLFile, KeyFile: opts.NotifyWebhookKeyFile})
	if err != nil {
		return err
	}
	if err := mgr.Add(hook); err != nil {
		return fmt.Errorf("adding the notification webhook: %w", err)
	}
	watcher := &notify.Watcher{Cache: mgr.GetCache(), Notifier: hook, CallApprovals: opts.NotifyCallApprovals}
	keys, err := approvalKeys(mgr, opts, clock.RealClock{})
	if err != nil {
		return err
	}
	if keys != nil {
		watcher.Seals = sealKeys{keys}
	}
	if err := mgr.Add(watcher); err != nil {
		return fmt.Errorf("adding the notification watcher: %w", err)
	}
	return nil
}

// approvalKeys reads the keys the gateway seals approvals with from the
// Secret opts names (GatewayApprovalKeySecret), or is nil when none is
// named (a development gateway keeps a key of its own).
func approvalKeys(mgr ctrl.Manager, opts Options, clk clock.PassiveClock) (approvals.KeySource, error) {
	if opts.GatewayApprovalKeySecret == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(opts.GatewayApprovalKeySecret, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("%w: the approval key Secret must be given as namespace/name", approvals.ErrBadKeySecret)
	}
	return &approvals.SecretKeys{Reader: mgr.GetAPIReader(), Secret: types.NamespacedName{Namespace: ns, Name: name}, Clock: clk}, nil
}

// sealKeys gives the notifications the gateway's approval keys, to tell
// the approvals the gateway wrote from any other.
type sealKeys struct{ approvals.KeySource }

func (k sealKeys) SealKeys(ctx context.Context, fresh bool) ([]byte, []byte, error) {
	ks, err := k.Keys(ctx, fresh)
	return ks.Current, ks.Previous, err
}

// setupGateway adds the gateway to the manager. It runs on every replica,
// leader or not.
func setupGateway(mgr ctrl.Manager, opts Options, w *wire) error {
	gatewayClock := opts.gatewayClock()
	// A list reads only the tools that can be listed, by this index.
	if err := gateway.IndexTools(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing the gateway's tools: %w", err)
	}
	// The gateway reads these kinds from the cache. Registering their
	// informers now makes a missing permission show in the log at start,
	// not as a stalled agent later.
	for _, obj := range []client.Object{&mcpv1alpha1.McpAccessPolicy{}, &mcpv1alpha1.McpTool{}, &mcpv1alpha1.McpServer{}, &mcpv1alpha1.McpDelegationProfile{},
		&mcpv1alpha1.McpSharedServer{}, &mcpv1alpha1.McpReadMark{}, &corev1.Namespace{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("registering the gateway's informers: %w", err)
		}
	}
	auditTo := opts.GatewayAudit
	if auditTo == nil {
		auditTo = os.Stdout
	}
	// Approvals are read and written straight at the API server: a
	// decision must count the moment it is made, and using an approval
	// needs its current resourceVersion.
	approvalsClient, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("setting up the approvals client: %w", err)
	}
	keys, err := approvalKeys(mgr, opts, gatewayClock)
	if err != nil {
		return err
	}
	// Reviews go through a client of their own, with its own rate: a flood
	// of callers waits for reviews, not the controllers for the API
	// server, and the other way round.
	reviewCfg := rest.CopyConfig(mgr.GetConfig())
	reviewCfg.RateLimiter = nil
	reviewCfg.QPS, reviewCfg.Burst = opts.GatewayReviewQPS, opts.GatewayReviewBurst
	if reviewCfg.QPS <= 0 {
		reviewCfg.QPS = DefaultGatewayReviewQPS
	}
	if reviewCfg.Burst <= 0 {
		reviewCfg.Burst = DefaultGatewayReviewBurst
	}
	sars, err := authorizationv1client.NewForConfig(reviewCfg)
	if err != nil {
		return fmt.Errorf("building the SubjectAccessReview client: %w", err)
	}
	reviews, err := client.New(reviewCfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("building the TokenReview client: %w", err)
	}
	tp, err := gatewayTracer(mgr, opts)
	if err != nil {
		return err
	}
	oauthOpts := opts.GatewayOAuth
	oauthOpts.Log = mgr.GetLogger().WithName(logging.Gateway).WithName("oauth")
	if oauthOpts.Clock == nil {
		oauthOpts.Clock = gatewayClock
	}
	// Nil when no resource is configured: ServiceAccount tokens only.
	oauth, err := oauthresource.New(oauthOpts)
	if err != nil {
		return fmt.Errorf("configuring the gateway's OAuth access tokens: %w", err)
	}
	// Nil when no URL is configured: no guardrail.
	guard, err := guardrail.New(opts.GatewayGuardrail)
	if err != nil {
		return fmt.Errorf("configuring the gateway's guardrail: %w", err)
	}
	personAuth, err := newPersonAuth(approvalsClient, keys, opts, gatewayClock)
	if err != nil {
		return err
	}
	gw, err := gateway.New(gateway.Options{
		Reader:    mgr.GetClient(),
		Informers: mgr.GetCache(),
		Authn:     &authn.TokenReviewAuthenticator{Client: reviews, Audience: opts.GatewayAudience},
		OAuth:     oauth,
		Authz:     &authz.SubjectAccessReviewAuthorizer{Client: sars},
		Upstreams: gatewayEndpoints(w.endpoints, opts.GatewayCredentialTTL, gatewayClock),
		MCP:       w.mcp,
		Audit:     audit.NewJSONLinesTimeout(auditTo, opts.GatewayAuditTimeout),
		Recorder:  mgr.GetEventRecorder(EventSource),
		Version:   Version,

		ApprovalKeys:   keys,
		Approvals:      approvalsClient,
		Marks:          approvalsClient,
		ApprovalPolicy: opts.GatewayApprovalPolicy,
		ApprovalTTL:    opts.GatewayApprovalTTL,
		ApprovalURL:    approvalURL(opts.GatewayApprovalURL, mgr.GetConfig().Host),
		Clock:          gatewayClock,
		Stateless:      opts.GatewayStateless,
		Budgets:        opts.GatewayBudgets,
		DenialWindow:   opts.GatewayDenialWindow,
		ListTTL:        opts.GatewayListTTL,
		ServableIndex:  true,

		MaxRequestBytes:         opts.GatewayMaxRequestBytes,
		MaxRequestBytesInFlight: opts.GatewayMaxRequestBytesInFlight,
		MaxTasksPerIdentity:     opts.GatewayMaxTasksPerIdentity,
		PublicURL:               opts.GatewayPublicURL,
		PersonAuth:              personAuth,
		SharingTrust:            opts.SharingTrust,
		Guardrail:               guard,
		GuardrailFailClosedFrom: opts.GatewayGuardrailFailClosedFrom,
		// The cache holds these namespaces only: a caller of another is
		// refused before any read (a gateway pool).
		Namespaces: opts.WatchNamespaces,

		TracerProvider: tp,
	})
	if err != nil {
		return fmt.Errorf("building the gateway: %w", err)
	}
	if err := mgr.Add(&approvals.Sweeper{Client: approvalsClient, Namespaces: opts.WatchNamespaces, Clock: gatewayClock}); err != nil {
		return fmt.Errorf("adding the approval sweeper: %w", err)
	}
	if err := mgr.Add(&gateway.DenialFlusher{Gateway: gw}); err != nil {
		return fmt.Errorf("adding the denial flusher: %w", err)
	}
	if err := mgr.Add(&gateway.ToolListNotifier{Gateway: gw, Cache: mgr.GetCache(), Debounce: opts.GatewayListChangeDebounce}); err != nil {
		return fmt.Errorf("adding the tool list notifier: %w", err)
	}
	if err := mgr.Add(&gateway.Listener{Addr: opts.GatewayAddr, Handler: gw.Handler(), CertDir: opts.GatewayCertDir, Insecure: opts.GatewayInsecure, Ready: opts.GatewayReady, MaxIdleConnections: opts.GatewayMaxIdleConnections}); err != nil {
		return fmt.Errorf("adding the gateway: %w", err)
	}
	return nil
}

// gatewayEndpoints are the controllers' endpoints with the credential
// Secrets (and CA bundles) kept for a short TTL: every tool call resolves
// its server's credential, and without the cache each would read it from
// the API server through the one client every tenant's calls share. The
// controllers still read them at every operation.
func gatewayEndpoints(e *upstream.Endpoints, ttl time.Duration, clk clock.PassiveClock) *upstream.Endpoints {
	res := *e.Credentials
	res.Secrets = &credentials.CachedReader{Reader: res.Secrets, TTL: ttl, Clock: clk}
	return &upstream.Endpoints{Credentials: &res}
}

// gatewayClock is GatewayClock, else GatewayNow, else the real clock.
func (o Options) gatewayClock() clock.PassiveClock {
	switch {
	case o.GatewayClock != nil:
		return o.GatewayClock
	case o.GatewayNow != nil:
		return nowFunc(o.GatewayNow)
	}
	return clock.RealClock{}
}

// nowFunc is the clock GatewayNow reads, until GatewayNow goes.
type nowFunc func() time.Time

func (f nowFunc) Now() time.Time                  { return f() }
func (f nowFunc) Since(t time.Time) time.Duration { return f().Sub(t) }

// approvalURL builds the URL of an approval from a template with
// {namespace} and {name}; without one, it is the object's path on the API
// server the manager talks to.
func approvalURL(template, apiServer string) func(ns, name string) string {
	if template == "" {
		template = strings.TrimSuffix(apiServer, "/") + "/apis/" + mcpv1alpha1.GroupVersion.String() + "/namespaces/{namespace}/mcpcallapprovals/{name}"
	}
	return func(ns, name string) string {
		return strings.NewReplacer("{namespace}", url.PathEscape(ns), "{name}", url.PathEscape(name)).Replace(template)
	}
}
