package chart

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSchemaRejectsBadValues: each bad value set must fail both helm
// template and helm lint, with a message that names the offending value.
func TestSchemaRejectsBadValues(t *testing.T) {
	cases := []struct {
		name   string
		values string
		// want appears in helm's message: the value's path.
		want string
	}{
		{"negative replicas", "replicaCount: -1", "/replicaCount"},
		{"replicas as a string", `replicaCount: "2"`, "/replicaCount"},
		{"unknown top-level key", "replicas: 2", "'replicas'"},
		{"misspelt nested key", "metrics:\n  serviceMonitor:\n    enable: true", "'enable'"},
		{"bad pull policy", "image:\n  pullPolicy: Sometimes", "/image/pullPolicy"},
		{"digest that is a tag", "image:\n  digest: latest", "/image/digest"},
		{"crds.enabled not a boolean", `crds: {enabled: "yes"}`, "/crds/enabled"},
		{"watchNamespaces as a string", "watchNamespaces: team-a", "/watchNamespaces"},
		{"namespace that is no DNS label", "watchNamespaces: [Team_A]", "/watchNamespaces/0"},
		{"port out of range", "metrics:\n  port: 70000", "/metrics/port"},
		{"unknown log level", "logging:\n  level: verbose", "/logging/level"},
		{"unknown log format", "logging:\n  format: xml", "/logging/format"},
		{"extra argument that is no flag", "extraArgs: [leader-elect]", "/extraArgs/0"},
		{"resources as a string", "resources: small", "/resources"},
		{"controllers' GOGC that would collect without pause", "gcPercent: 10", "/gcPercent"},
		{"controllers' GOGC as a string", `gcPercent: "50"`, "/gcPercent"},
		{"extra env without a name", "extraEnv: [{value: x}]", "/extraEnv/0"},
		{"extra volume mount without a path", "extraVolumeMounts: [{name: ca}]", "/extraVolumeMounts/0"},
		{"budget with one replica", "podDisruptionBudget:\n  enabled: true", "/replicaCount"},
		{"budget as a fraction", "replicaCount: 2\npodDisruptionBudget:\n  enabled: true\n  minAvailable: 0.5", "/podDisruptionBudget/minAvailable"},
		{"gateway port not a number", "gateway:\n  port: http", "/gateway/port"},
		{"gateway enabled without a TLS Secret", "gateway:\n  enabled: true", "/gateway/tls"},
		{"service monitor CA from two sources", "metrics:\n  serviceMonitor:\n    tls:\n      ca: {secret: {name: a}, configMap: {name: b}}", "/metrics/serviceMonitor/tls/ca"},
		{"old tlsConfig value", "metrics:\n  serviceMonitor:\n    tlsConfig: {insecureSkipVerify: true}", "'tlsConfig'"},
		{"private range without a length", "privateNetworks:\n  allowedCIDRs: [10.0.0.1]", "/privateNetworks/allowedCIDRs/0"},
		{"private ranges as a string", "privateNetworks:\n  allowedCIDRs: 10.0.0.0/8", "/privateNetworks/allowedCIDRs"},
		{"namespace range that is no CIDR", "privateNetworks:\n  namespaceCIDRs:\n    team-a: [everything]", "/privateNetworks/namespaceCIDRs/team-a/0"},
		{"token proxy that is no URL", "tokenEndpointProxy: proxy:3128", "/tokenEndpointProxy"},
		{"OAuth issuers without a resource", "gateway:\n  oauth:\n    issuers: [{url: https://idp.example.com}]", "/gateway/oauth/resource"},
		{"OAuth resource over http", "gateway:\n  oauth:\n    resource: http://mcp.example.com/mcp", "/gateway/oauth/resource"},
		{"OAuth issuer with a CEL expression", "gateway:\n  oauth:\n    resource: https://mcp.example.com/mcp\n    issuers: [{url: https://idp.example.com, claimMappings: {username: {expression: claims.sub}}}]", "'expression'"},
		{"OAuth groups in the system namespace", "gateway:\n  oauth:\n    resource: https://mcp.example.com/mcp\n    issuers: [{url: https://idp.example.com, claimMappings: {groups: {claim: groups, prefix: \"system:\"}}}]", "/gateway/oauth/issuers/0/claimMappings/groups/prefix"},
		{"tracing endpoint without a scheme", "gateway:\n  tracing:\n    otlpEndpoint: collector:4317", "/gateway/tracing/otlpEndpoint"},
		{"catalog budget that is no size", "tenancy:\n  catalogBytesInFlight: lots", "/tenancy/catalogBytesInFlight"},
		{"operation timeout cap without a unit", "tenancy:\n  caps:\n    maxOperationTimeout: \"30\"", "/tenancy/caps/maxOperationTimeout"},
		{"negative namespace tool limit", "tenancy:\n  perNamespace:\n    maxTools: -1", "/tenancy/perNamespace/maxTools"},
		{"webhook without its key Secret", "notifications:\n  webhook:\n    url: https://hooks.example.com/", "/notifications/webhook"},
		{"webhook over plain http", "notifications:\n  webhook:\n    url: http://hooks.example.com/\n    secretName: k", "/notifications/webhook/url"},
		{"webhook URL from a Secret without the Secret", "notifications:\n  webhook:\n    urlSecretKey: url", "/notifications/webhook"},
		{"webhook URL given twice", "notifications:\n  webhook:\n    url: https://hooks.example.com/\n    urlSecretKey: url\n    secretName: k", "/notifications/webhook"},
		{"gateway budget of no requests", "gateway:\n  budgets:\n    namespace:\n      concurrency: 0", "/gateway/budgets/namespace/concurrency"},
		{"gateway budget with a misspelt key", "gateway:\n  budgets:\n    serviceAccount:\n      rps: 5", "'rps'"},
		{"tracing env without a name", "gateway:\n  tracing:\n    env: [{value: x}]", "/gateway/tracing/env/0"},
		{"gateway pool without namespaces", "gateway:\n  pools: [{name: east, namespaces: []}]", "/gateway/pools/0/namespaces"},
		{"gateway pool name that is no DNS label", "gateway:\n  pools: [{name: East, namespaces: [team-a]}]", "/gateway/pools/0/name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vf := valuesFile(t, c.values)
			for _, cmd := range [][]string{
				append(templateArgs(t, "", floorKubeVersion), vf...),
				append([]string{"lint", chartDir, "--namespace", releaseNS}, vf...),
			} {
				out, stderr, err := helm(t, cmd...)
				if err == nil {
					t.Errorf("helm %s accepted %q", cmd[0], c.values)
					continue
				}
				if msg := out + stderr; !strings.Contains(msg, c.want) {
					t.Errorf("helm %s failed without naming %s:\n%s", cmd[0], c.want, msg)
				}
			}
		})
	}
}

// TestBudgetGuardWithoutSchema: the template itself refuses a
// PodDisruptionBudget with one replica, for installs that skip the schema.
func TestBudgetGuardWithoutSchema(t *testing.T) {
	_, stderr, err := helm(t, templateArgs(t, "podDisruptionBudget:\n  enabled: true", floorKubeVersion, "--skip-schema-validation")...)
	if err == nil {
		t.Fatal("a PodDisruptionBudget with one replica rendered")
	}
	if !strings.Contains(stderr, "podDisruptionBudget.enabled needs replicaCount") {
		t.Errorf("the guard's message is missing:\n%s", stderr)
	}
	// And two replicas pass the same guard.
	if _, stderr, err := helm(t, templateArgs(t, "replicaCount: 2\npodDisruptionBudget:\n  enabled: true", floorKubeVersion, "--skip-schema-validation")...); err != nil {
		t.Errorf("two replicas with a budget failed: %v\n%s", err, stderr)
	}
}

// TestServiceMonitorTLSGuard: with HTTPS metrics, a ServiceMonitor either
// verifies the certificate against a CA or skips verification because the
// values say so explicitly; never both, never neither.
func TestServiceMonitorTLSGuard(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"metrics:\n  serviceMonitor:\n    enabled: true", "set ca (the CA that signed"},
		{"metrics:\n  serviceMonitor:\n    enabled: true\n    tls: {ca: {secret: {name: ca}}, insecureSkipVerify: true}", "not both"},
	} {
		_, stderr, err := helm(t, templateArgs(t, c.values, floorKubeVersion)...)
		if err == nil {
			t.Errorf("rendered %q", c.values)
			continue
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%q failed without %q:\n%s", c.values, c.want, stderr)
		}
	}
	for _, ok := range []string{
		"metrics:\n  serviceMonitor:\n    enabled: true\n    tls: {insecureSkipVerify: true}",
		"metrics:\n  serviceMonitor:\n    enabled: true\n    tls: {ca: {secret: {name: ca}}}",
		"metrics:\n  secure: false\n  serviceMonitor:\n    enabled: true",
	} {
		if _, stderr, err := helm(t, templateArgs(t, ok, floorKubeVersion)...); err != nil {
			t.Errorf("%q did not render: %v\n%s", ok, err, stderr)
		}
	}
}

// TestManagerAcceptsRenderedArgs runs the real manager binary with the
// arguments each value set renders, followed by -h: Go's flag package exits
// 0 on -h only when every earlier flag is defined and its value parses, and
// 2 otherwise. A flag the chart passes but the manager lacks would crash
// the pod at start; this catches it.
func TestManagerAcceptsRenderedArgs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/manager")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	run := func(args []string) (int, string) {
		out, err := exec.Command(bin, append(args, "-h")...).CombinedOutput()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &exitErr):
			return exitErr.ExitCode(), string(out)
		default:
			t.Fatalf("running the manager: %v", err)
			return -1, ""
		}
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := render(t, vs.values, floorKubeVersion)
			_, c := manager(t, objs)
			if code, out := run(c.Args); code != 0 {
				lines := strings.SplitN(out, "\n", 2)
				t.Errorf("the manager rejects the chart's arguments %q (exit %d): %s", c.Args, code, lines[0])
			}
			_, gcs := gatewayDeployments(t, objs)
			for _, gc := range gcs {
				if code, out := run(gc.Args); code != 0 {
					lines := strings.SplitN(out, "\n", 2)
					t.Errorf("the binary rejects the gateway's arguments %q (exit %d): %s", gc.Args, code, lines[0])
				}
			}
		})
	}
	t.Run("an unknown flag is caught", func(t *testing.T) {
		if code, _ := run([]string{"--no-such-flag=1"}); code == 0 {
			t.Error("the manager accepted an undefined flag; this test could not catch one")
		}
	})
}

// TestReadmeDocumentsEveryValue: every value the schema defines has a row
// in the chart README's values table, and every row names a value the
// schema defines. Objects whose schema lists their properties are
// documented key by key; free-form objects and lists as one row.
func TestReadmeDocumentsEveryValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	var keys []string
	var walk func(prefix string, s map[string]any)
	walk = func(prefix string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			ps, _ := p.(map[string]any)
			if _, nested := ps["properties"]; nested {
				walk(prefix+name+".", ps)
				continue
			}
			keys = append(keys, prefix+name)
		}
	}
	walk("", schema)
	slices.Sort(keys)

	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(documented)
	for _, k := range keys {
		if _, ok := slices.BinarySearch(documented, k); !ok {
			t.Errorf("value %s is not in the README's values table", k)
		}
	}
	for _, k := range documented {
		if _, ok := slices.BinarySearch(keys, k); !ok {
			t.Errorf("the README documents %s, which the schema does not define", k)
		}
	}
	if len(keys) < 20 {
		t.Errorf("only %d values found in the schema; the walk is broken", len(keys))
	}
}
