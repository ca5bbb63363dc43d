// Package chart tests the Helm chart in charts/mcp-catalog-operator: lint,
// rendering with several value sets, the values schema, the generated copies
// of the CRDs and RBAC rules, and a server-side dry-run of every rendered
// object against a real kube-apiserver (envtest).
//
// The tests run the helm binary named by $HELM; `make test` builds it from
// the Go module proxy (hack/helm.sh) and sets it.
package chart

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mcp-catalog/operator/test/manifests"
)

const (
	chartDir    = "../../charts/mcp-catalog-operator"
	releaseName = "catalog"
	releaseNS   = "mcp-catalog-system"
	// floorKubeVersion is the lowest Kubernetes the chart supports
	// (Chart.yaml kubeVersion); rendering against it proves nothing newer
	// is assumed.
	floorKubeVersion = "1.30.0"
)

// helmBinary returns $HELM, failing the test when it is not set: a chart
// test that silently skips proves nothing in CI.
func helmBinary(t *testing.T) string {
	t.Helper()
	h := os.Getenv("HELM")
	if h == "" {
		t.Fatal("HELM is not set: run the chart tests through `make test` (or `make test-chart`), " +
			"or set HELM=$(hack/helm.sh) yourself")
	}
	return h
}

// helm runs the helm binary with a configuration of its own (no user
// repositories or plugins) and returns its stdout and stderr.
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running helm: %v", err)
	}
	return out.String(), errOut.String(), err
}

// valuesFile writes a values document to a temporary file and returns the
// helm arguments that pass it; an empty document passes nothing.
func valuesFile(t *testing.T, values string) []string {
	t.Helper()
	if strings.TrimSpace(values) == "" {
		return nil
	}
	// Not t.TempDir: its path holds the test name, and helm splits --values
	// on commas.
	dir, err := os.MkdirTemp("", "chart-values-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(p, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--values", p}
}

// templateArgs are the helm template arguments for values at kubeVersion.
func templateArgs(t *testing.T, values, kubeVersion string, extra ...string) []string {
	args := []string{"template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}
	args = append(args, valuesFile(t, values)...)
	return append(args, extra...)
}

// render runs helm template and returns the rendered objects.
func render(t *testing.T, values, kubeVersion string) []*unstructured.Unstructured {
	t.Helper()
	out, stderr, err := helm(t, templateArgs(t, values, kubeVersion)...)
	if err != nil {
		t.Fatalf("helm template failed: %v\n%s", err, stderr)
	}
	return parseManifests(t, out)
}

// parseManifests splits a multi-document YAML stream into objects, dropping
// documents that hold only comments.
func parseManifests(t *testing.T, rendered string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Decode([]byte(rendered))
	if err != nil {
		t.Fatalf("reading rendered manifests: %v", err)
	}
	if len(objs) == 0 {
		t.Fatal("helm template rendered no objects")
	}
	return objs
}

// readYAMLFile parses one YAML document from a file into a generic map.
func readYAMLFile(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// byKind returns the rendered objects of one kind.
func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the rendered object of kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// valueSet is one set of values the chart must render, lint, and apply.
type valueSet struct {
	name   string
	values string
	// namespaces the set needs to exist besides the release namespace.
	namespaces []string
	// check asserts what this set must render; the invariants every set
	// must meet are in checkInvariants.
	check func(t *testing.T, objs []*unstructured.Unstructured)
}

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var valueSets = []valueSet{
	{
		name:   "defaults",
		values: "",
		check:  checkDefaults,
	},
	{
		name: "sharded",
		values: `
sharding:
  shards: [east, west]
notifications:
  webhook:
    url: https://hooks.example.com/mcp
    secretName: mcp-notify
`,
		check: checkSharded,
	},
	{
		name: "webhook-url-from-a-secret",
		values: `
notifications:
  webhook:
    urlSecretKey: url
    secretName: mcp-notify
`,
		check: checkWebhookURLFromSecret,
	},
	{
		name: "tenancy",
		values: `
tenancy:
  maxConcurrentServersPerNamespace: 4
  catalogBytesInFlight: 96Mi
  caps:
    maxCatalogBytes: 4Mi
    maxTools: 500
    maxOperationTimeout: 30s
    minHealthInterval: 30s
  perNamespace:
    maxTools: 5000
    maxDefinitionBytes: 64Mi
    maxPromptsAndResources: 2000
toolListeners:
  enabled: false
  max: 64
  maxPerNamespace: 8
  debounce: 5s
  minInterval: 1m
`,
		check: checkTenancy,
	},
	{
		name: "watch-namespaces-without-crds",
		values: `
crds:
  enabled: false
watchNamespaces: [team-a, team-b]
logging:
  level: 2
  format: console
serviceAccount:
  name: catalog-manager
  annotations:
    example.com/owner: platform
`,
		namespaces: []string{"team-a", "team-b"},
		check:      checkWatchNamespaces,
	},
	{
		name: "monitored-highly-available",
		values: `
replicaCount: 2
metrics:
  serviceMonitor:
    enabled: true
    labels:
      release: prometheus
    tls:
      ca:
        configMap: {name: metrics-ca}
  prometheusRule:
    enabled: true
    labels:
      release: prometheus
  grafanaDashboard:
    enabled: true
networkPolicy:
  enabled: true
  metricsFrom:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: monitoring
  egress:
    - ports:
        - port: 443
          protocol: TCP
    - ports:
        - port: 53
          protocol: UDP
podDisruptionBudget:
  enabled: true
imagePullSecrets:
  - name: registry-credentials
nodeSelector:
  kubernetes.io/os: linux
tolerations:
  - key: dedicated
    operator: Equal
    value: platform
    effect: NoSchedule
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              app.kubernetes.io/name: mcp-catalog-operator
podAnnotations:
  example.com/scrape: "true"
priorityClassName: platform-critical
`,
		check: checkMonitored,
	},
	{
		name: "pinned-digest-gateway-crds-not-kept",
		values: `
crds:
  keep: false
image:
  repository: registry.example.com/platform/mcp-catalog-operator
  tag: v9.9.9
  digest: ` + testDigest + `
  pullPolicy: Always
gateway:
  enabled: true
  port: 9444
  audience: agents.example.com
  listTTL: 2m
  tls:
    secretName: gateway-serving-cert
  budgets:
    serviceAccount:
      rate: 2.5
      burst: 5000000
      concurrency: 8
  guardrail:
    url: https://guard.example.com/check
    secretName: guardrail-key
    failClosedFrom: Internal
    ratePerNamespace: 12.5
  tracing:
    otlpEndpoint: http://otel-collector.monitoring:4317
    env:
      - name: OTEL_TRACES_SAMPLER
        value: parentbased_traceidratio
metrics:
  certSecretName: metrics-serving-cert
extraArgs:
  - --graceful-shutdown-timeout=20s
`,
		check: checkPinnedGateway,
	},
	{
		name: "gateway-watch-namespaces-autoscaled",
		values: `
watchNamespaces: [team-a, team-b]
gateway:
  enabled: true
  tls:
    secretName: gateway-serving-cert
  autoscaling:
    enabled: true
    minReplicas: 3
    maxReplicas: 7
networkPolicy:
  enabled: true
`,
		namespaces: []string{"team-a", "team-b"},
		check:      checkGatewayScoped,
	},
	{
		name:   "gateway-oauth",
		values: oauthValues,
		check:  checkGatewayOAuth,
	},
	{
		name:       "gateway-pools",
		values:     poolsValues,
		namespaces: []string{"team-a", "team-b", "platform"},
		check:      checkGatewayPools,
	},
	{
		name: "private-ca-for-the-manager",
		values: `
metrics:
  certSecretName: metrics-serving-cert
extraVolumes:
  - name: corporate-ca
    configMap:
      name: corporate-ca
extraVolumeMounts:
  - name: corporate-ca
    mountPath: /etc/ssl/corporate
    readOnly: true
extraEnv:
  - name: SSL_CERT_DIR
    value: /etc/ssl/corporate
`,
		check: checkPrivateCA,
	},
	{
		name: "metrics-off-single-instance",
		values: `
metrics:
  enabled: false
leaderElection:
  enabled: false
networkPolicy:
  enabled: true
`,
		check: checkMetricsOff,
	},
	{
		name: "admin-egress",
		values: `
privateNetworks:
  allowedCIDRs: [10.0.0.0/8, fd00::/8]
  namespaceCIDRs:
    team-b: [192.168.10.0/24]
    team-a: [172.20.0.0/16, 127.0.0.1/32]
tokenEndpointProxy: http://proxy.internal:3128
resources:
  limits:
    memory: 512Mi
`,
		check: checkEgress,
	},
}
