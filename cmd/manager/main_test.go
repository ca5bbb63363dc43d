package main

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// parse runs args through the flags main binds.
func parse(t *testing.T, args ...string) (*commandLine, manager.Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := newCommandLine(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	opts, err := c.options()
	return c, opts, err
}

// oldDefaults is what main produced for an empty command line before the
// flags took their defaults from the packages' constants, written out.
// Several fields were 0, which their packages read as a default.
func oldDefaults() manager.Options {
	return manager.Options{
		MetricsAddr:             ":8443",
		SecureMetrics:           true,
		ProbeAddr:               ":8081",
		GracefulShutdownTimeout: 30 * time.Second,
		Components:              "all",
		MaxConcurrentServers:    16,
		ToolListeners: manager.ToolListenerOptions{
			Enabled:     true,
			Max:         512,
			Debounce:    2 * time.Second,
			MinInterval: 30 * time.Second,
		},
		GatewayAudience:        "mcp-catalog-gateway",
		GatewayMaxRequestBytes: 1 << 20,
		GatewayReviewQPS:       100,
		GatewayReviewBurst:     200,
		NotifyCallApprovals:    true,
		// egress.ParseNamespaceCIDRs("") is an empty map, not nil.
		NamespacePrivateCIDRs: map[string][]netip.Prefix{},
		GatewayBudgets: budget.Budgets{
			ServiceAccountBytesRate:  32 << 20,
			ServiceAccountBytesBurst: 128 << 20,
			NamespaceBytesRate:       64 << 20,
			NamespaceBytesBurst:      256 << 20,
		},
	}
}

// asRead is o as its packages read it: each zero that means a default
// replaced by that default, as the code cited does. Zeros that mean "no
// cap" or a share derived from another value are left alone; old and new
// leave them 0 alike.
func asRead(o manager.Options) manager.Options {
	or := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	or(&o.GatewayApprovalTTL, gateway.DefaultApprovalTTL)    // gateway/approval.go
	or(&o.GatewayAuditTimeout, audit.DefaultAuditTimeout)    // audit.NewJSONLinesTimeout
	or(&o.GatewayDenialWindow, audit.DefaultDenialWindow)    // audit.NewDenials
	or(&o.GatewayListTTL, gateway.DefaultListTTL)            // gateway.listTTL
	or(&o.GatewayCredentialTTL, credentials.DefaultCacheTTL) // credentials.CachedReader.store
	if o.GatewayMaxIdleConnections <= 0 {                    // gateway.newIdleConns
		o.GatewayMaxIdleConnections = gateway.DefaultMaxIdleConnections
	}
	if o.GatewayMaxTasksPerIdentity <= 0 { // gateway.maxTasks
		o.GatewayMaxTasksPerIdentity = gateway.DefaultMaxTasksPerIdentity
	}
	g := &o.GatewayGuardrail // guardrail.New
	or(&g.Timeout, guardrail.DefaultTimeout)
	if g.Rate <= 0 {
		g.Rate = guardrail.DefaultRate
	}
	if g.Burst <= 0 {
		g.Burst = guardrail.DefaultBurst
	}
	if !o.GatewayGuardrailFailClosedFrom.Valid() { // gateway.failsClosed
		o.GatewayGuardrailFailClosedFrom = mcpv1alpha1.DataClassConfidential
	}
	if o.LeaderElectionID == "" { // manager.New
		o.LeaderElectionID = manager.LeaderElectionID
	}
	if o.GatewayReviewQPS <= 0 { // manager's setupGateway
		o.GatewayReviewQPS = manager.DefaultGatewayReviewQPS
	}
	if o.GatewayReviewBurst <= 0 {
		o.GatewayReviewBurst = manager.DefaultGatewayReviewBurst
	}
	// oauthresource.New: field by field.
	a := &o.GatewayOAuth
	or(&a.ClockSkew, oauthresource.DefaultClockSkew)
	or(&a.KeyRefreshInterval, oauthresource.DefaultKeyRefreshInterval)
	or(&a.FetchTimeout, oauthresource.DefaultFetchTimeout)
	if a.TokenCacheSize <= 0 {
		a.TokenCacheSize = oauthresource.DefaultTokenCacheSize
	}
	// budget.Budgets.withDefaults: field by field.
	b := &o.GatewayBudgets
	if b.ServiceAccountRate <= 0 {
		b.ServiceAccountRate = budget.DefaultServiceAccountRate
	}
	if b.ServiceAccountBurst <= 0 {
		b.ServiceAccountBurst = budget.DefaultServiceAccountBurst
	}
	if b.ServiceAccountConcurrency <= 0 {
		b.ServiceAccountConcurrency = budget.DefaultServiceAccountConcurrency
	}
	if b.NamespaceRate <= 0 {
		b.NamespaceRate = budget.DefaultNamespaceRate
	}
	if b.NamespaceBurst <= 0 {
		b.NamespaceBurst = budget.DefaultNamespaceBurst
	}
	if b.NamespaceConcurrency <= 0 {
		b.NamespaceConcurrency = budget.DefaultNamespaceConcurrency
	}
	if b.ServiceAccountBytesRate <= 0 {
		b.ServiceAccountBytesRate = budget.DefaultServiceAccountBytesRate
	}
	if b.ServiceAccountBytesBurst <= 0 {
		b.ServiceAccountBytesBurst = budget.DefaultServiceAccountBytesBurst
	}
	if b.NamespaceBytesRate <= 0 {
		b.NamespaceBytesRate = budget.DefaultNamespaceBytesRate
	}
	if b.NamespaceBytesBurst <= 0 {
		b.NamespaceBytesBurst = budget.DefaultNamespaceBytesBurst
	}
	return o
}

// TestOptionsAsBefore: for an empty command line and for flags set, the
// Options mean what the old main's meant, and with no flag set every
// default the packages would fill in is already there, for --help to show.
func TestOptionsAsBefore(t *testing.T) {
	set := oldDefaults()
	set.Components = "controllers"
	set.LeaderElectionID = "shard1"
	set.WatchNamespaces = []string{"a", "b", "c"}
	set.AllowedPrivateCIDRs = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	set.NamespacePrivateCIDRs = map[string][]netip.Prefix{"ns": {netip.MustParsePrefix("10.1.0.0/16")}}
	set.TokenEndpointProxy = &url.URL{Scheme: "http", Host: "proxy:3128"}
	set.CatalogBytesInFlight = 64 << 20
	set.Caps.MaxTools = 12
	set.Caps.MinHealthInterval = time.Minute
	set.ToolListeners.Enabled = false
	set.ToolListeners.MaxPerNamespace = 3
	set.GatewayApprovalTTL = 5 * time.Minute
	set.GatewayReviewQPS = 7.5
	set.GatewayBudgets.ServiceAccountRate = 7
	set.GatewayBudgets.NamespaceBurst = 9
	set.GatewayBudgets.ServiceAccountBytesRate = 1 << 20
	set.GatewayMaxRequestBytesInFlight = 8 << 20

	for _, tc := range []struct {
		name string
		args []string
		old  manager.Options
	}{
		{"no flags", nil, oldDefaults()},
		{"flags set", []string{
			"--components=controllers", "--leader-election-id=shard1", "--watch-namespaces=a, b,,c",
			"--allowed-private-cidrs=10.0.0.0/8", "--namespace-private-cidrs=ns=10.1.0.0/16",
			"--token-endpoint-proxy=http://proxy:3128", "--catalog-bytes-in-flight=64Mi", "--max-tools=12",
			"--min-health-interval=1m", "--listen-tool-changes=false", "--max-tool-listeners-per-namespace=3",
			"--gateway-approval-ttl=5m", "--gateway-review-qps=7.5", "--gateway-serviceaccount-rate=7",
			"--gateway-namespace-burst=9", "--gateway-serviceaccount-bytes-rate=1Mi",
			"--gateway-max-request-bytes-in-flight=8Mi",
		}, set},
		// 0 still means the package's default, as it did.
		{"zeros given", []string{"--gateway-approval-ttl=0", "--gateway-serviceaccount-rate=0", "--gateway-list-ttl=0s", "--leader-election-id="}, oldDefaults()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if want := asRead(tc.old); !reflect.DeepEqual(asRead(got), want) {
				t.Errorf("Options differ from the old main's\n got: %+v\nwant: %+v", asRead(got), want)
			}
			if tc.args == nil && !reflect.DeepEqual(got, asRead(got)) {
				t.Errorf("a default is left 0 for its package to fill in; --help cannot show it\n got: %+v\nwant: %+v", got, asRead(got))
			}
		})
	}
}

func TestEverythingElseAsBefore(t *testing.T) {
	c, _, _ := parse(t)
	if c.apiQPS != 50 || c.apiBurst != 100 || c.auditPath != "-" || c.version {
		t.Errorf("defaults: kube-api-qps %v, kube-api-burst %d, audit %q, version %v", c.apiQPS, c.apiBurst, c.auditPath, c.version)
	}
	c, _, _ = parse(t, "--kube-api-qps=5", "--kube-api-burst=6", "--gateway-audit-log=/var/log/audit", "--version")
	if c.apiQPS != 5 || c.apiBurst != 6 || c.auditPath != "/var/log/audit" || !c.version {
		t.Errorf("set: kube-api-qps %v, kube-api-burst %d, audit %q, version %v", c.apiQPS, c.apiBurst, c.auditPath, c.version)
	}
	for _, args := range [][]string{
		{"--max-tools=-1"},
		{"--max-tools=2147483648"},
		{"--allowed-private-cidrs=10.0.0.0"},
		{"--namespace-private-cidrs=ns"},
		{"--token-endpoint-proxy=socks5://proxy:1080"},
		{"--token-endpoint-ca-file=" + t.TempDir() + "/missing.pem"},
	} {
		if _, _, err := parse(t, args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestGatewayOAuthFlags(t *testing.T) {
	file := t.TempDir() + "/issuers.yaml"
	if err := os.WriteFile(file, []byte("issuers:\n- url: https://idp.example.test\n  claimMappings:\n    groups: {claim: groups, prefix: \"idp:\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, o, err := parse(t, "--gateway-oauth-resource=https://mcp.example.test/mcp", "--gateway-oauth-issuers-file="+file,
		"--gateway-oauth-scopes=mcp.tools, mcp.approvals", "--gateway-oauth-clock-skew=30s", "--gateway-oauth-token-cache-size=10")
	if err != nil {
		t.Fatal(err)
	}
	g := o.GatewayOAuth
	if g.Resource != "https://mcp.example.test/mcp" || len(g.Issuers) != 1 || g.Issuers[0].URL != "https://idp.example.test" ||
		*g.Issuers[0].ClaimMappings.Groups.Prefix != "idp:" || !reflect.DeepEqual(g.Scopes, []string{"mcp.tools", "mcp.approvals"}) ||
		g.ClockSkew != 30*time.Second || g.TokenCacheSize != 10 || g.KeyRefreshInterval != oauthresource.DefaultKeyRefreshInterval {
		t.Errorf("%+v", g)
	}
	if v, err := oauthresource.New(g); err != nil || v == nil {
		t.Errorf("the gateway's constructor: %v, %v", v, err)
	}
	bad := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("issuers:\n- url: https://idp.example.test\n  claimMappings:\n    username: {expression: claims.sub}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--gateway-oauth-resource=https://mcp.example.test/mcp"},
		{"--gateway-oauth-issuers-file=" + file},
		{"--gateway-oauth-resource=https://mcp.example.test/mcp", "--gateway-oauth-issuers-file=" + bad},
		{"--gateway-oauth-resource=https://mcp.example.test/mcp", "--gateway-oauth-issuers-file=" + file + ".missing"},
		{"--gateway-oauth-resource=mcp.example.test", "--gateway-oauth-issuers-file=" + file},
	} {
		if _, _, err := parse(t, args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// number is a number in a usage, with its unit if any: "15m", "100",
// "64Mi". Digits inside a word ("shard1") are not one.
var number = regexp.MustCompile(`\b\d+(?:\.\d+)?[A-Za-z]*\b`)

// zeroMeansNumber is the habit this test ends: a zero default whose usage
// says which number 0 stands for ("0 means 100").
var zeroMeansNumber = regexp.MustCompile(`\b0(?: means|:) \d`)

// TestNoUsageRestatesItsDefault: --help prints each default from its
// constant, so a usage that repeats it would drift from it. A zero default
// is the exception: --help prints none, so its usage says what 0 does,
// which must not be a number in disguise.
func TestNoUsageRestatesItsDefault(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	newCommandLine(fs)
	fs.VisitAll(func(f *flag.Flag) {
		zero := sameValue(f.DefValue, "0")
		if zero && zeroMeansNumber.MatchString(f.Usage) {
			t.Errorf("--%s: the usage says which number 0 means; make that number the default", f.Name)
		}
		for _, n := range number.FindAllString(f.Usage, -1) {
			if !(zero && n == "0") && sameValue(f.DefValue, n) {
				t.Errorf("--%s: the usage repeats the default %s: %q", f.Name, f.DefValue, f.Usage)
			}
		}
	})
}

// sameValue reports whether a default as --help prints it and a number
// in a usage are one value, as a number, a duration or a size.
func sameValue(def, n string) bool {
	if a, err := strconv.ParseFloat(def, 64); err == nil {
		if b, err := strconv.ParseFloat(n, 64); err == nil {
			return a == b
		}
	}
	if a, err := time.ParseDuration(def); err == nil {
		if b, err := time.ParseDuration(n); err == nil {
			return a == b
		}
	}
	if a, err := resource.ParseQuantity(def); err == nil {
		if b, err := resource.ParseQuantity(n); err == nil {
			return a.Cmp(b) == 0
		}
	}
	return false
}

func TestSameValue(t *testing.T) {
	for _, tc := range []struct {
		def, n string
		want   bool
	}{
		{"15m0s", "15m", true}, {"100", "100", true}, {"1Mi", "1Mi", true}, {"0s", "0", true},
		{"15m0s", "5m", false}, {"100", "1000", false}, {"32Mi", "64Mi", false}, {"", "0", false}, {"true", "1", false},
	} {
		if got := sameValue(tc.def, tc.n); got != tc.want {
			t.Errorf("sameValue(%q, %q) = %v", tc.def, tc.n, got)
		}
	}
}

// TestMainAssembles keeps main to assembly: configuration belongs to the
// binders in flags.go.
func TestMainAssembles(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "main" {
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > 60 {
				t.Errorf("main() is %d lines; at most 60", n)
			}
		}
	}
}

func TestConsentSignInFlags(t *testing.T) {
	secret := t.TempDir() + "/client-secret"
	if err := os.WriteFile(secret, []byte("s3cret-of-the-client\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, o, err := parse(t, "--gateway-consent-signin-client-id=mcp-gateway", "--gateway-consent-signin-issuer=https://idp.example.test",
		"--gateway-consent-signin-client-secret-file="+secret)
	if err != nil {
		t.Fatal(err)
	}
	if s := o.GatewayConsentSignIn; s.ClientID != "mcp-gateway" || s.Issuer != "https://idp.example.test" || s.ClientSecret != "s3cret-of-the-client" {
		t.Errorf("%+v", s)
	}
	if _, _, err := parse(t, "--gateway-consent-signin-client-id=mcp-gateway", "--gateway-consent-signin-client-secret-file="+secret+".missing"); err == nil {
		t.Error("a missing secret file is accepted")
	}
}
