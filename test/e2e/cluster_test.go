package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/manifests"
	"github.com/mcp-catalog/operator/test/poll"
)

const (
	repoRoot    = "../.."
	chartDir    = repoRoot + "/charts/mcp-catalog-operator"
	releaseName = "catalog"
	releaseNS   = "mcp-catalog-system"
)

// requireEnv returns an environment variable the test cannot run without,
// failing with how to set it: an e2e test that silently skips proves
// nothing.
func requireEnv(t *testing.T, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the e2e test through `make test`, or set %s=%s yourself", name, name, how)
	}
	return v
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(mcpv1alpha1.AddToScheme(s))
	return s
}

var quietControllerRuntime sync.Once

// startControlPlane starts kube-apiserver and etcd (envtest) with nothing
// installed: the chart provides the CRDs and RBAC.
func startControlPlane(t *testing.T) *rest.Config {
	t.Helper()
	// envtest logs through controller-runtime's global logger; its start
	// messages carry nothing a failure report needs (errors are returned).
	quietControllerRuntime.Do(func() { logf.SetLogger(logr.Discard()) })
	cfg := controlplane.Start(t, controlplane.Bare()).Config
	return cfg
}

// renderChart runs `helm template` for the release the test installs. The
// gateway is enabled as a production install would have it; that changes
// the Deployment only, which is not applied.
func renderChart(t *testing.T, helm string) []*unstructured.Unstructured {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, "template", releaseName, chartDir, "--namespace", releaseNS,
		"--set", "gateway.enabled=true", "--set", "gateway.tls.secretName=catalog-gateway-tls")
	// A configuration of its own: no user repositories or plugins.
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, errOut.String())
	}
	objs, err := manifests.Decode(out.Bytes())
	if err != nil {
		t.Fatalf("reading the rendered chart: %v", err)
	}
	return objs
}

// installedChart is what the test needs to know of the installed release.
type installedChart struct {
	// serviceAccount is the manager's ServiceAccount (in releaseNS).
	serviceAccount string
	// metricsReader is the ClusterRole scrapers are bound to.
	metricsReader string
}

// appliedKinds are the rendered kinds the test installs: the API and the
// permissions. The workload (Deployment, Services, ...) is replaced by the
// manager process the test runs itself.
var appliedKinds = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// installChart applies the chart's CRDs, ServiceAccount and RBAC as the
// cluster administrator, and nothing else.
func installChart(t *testing.T, cfg *rest.Config, admin client.Client, objs []*unstructured.Unstructured) installedChart {
	t.Helper()
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}); err != nil {
		t.Fatalf("creating the release namespace: %v", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	var ic installedChart
	var skipped []string
	for _, o := range objs {
		kind := o.GetKind()
		switch {
		case kind == "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
				t.Fatalf("rendered CRD %s: %v", o.GetName(), err)
			}
			crds = append(crds, crd)
			continue
		case !appliedKinds[kind]:
			skipped = append(skipped, kind+"/"+o.GetName())
			continue
		case kind == "ServiceAccount" && !strings.HasSuffix(o.GetName(), "-gateway"):
			// The gateway has its own; the test runs one process with both.
			ic.serviceAccount = o.GetName()
		case kind == "ClusterRole" && strings.HasSuffix(o.GetName(), "-metrics-reader"):
			ic.metricsReader = o.GetName()
		}
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("applying %s %s: %v", kind, o.GetName(), err)
		}
	}
	// The operator's kinds come from the chart, not from config/crd: a CRD
	// the chart forgot would fail the test here.
	var rendered []string
	for _, crd := range crds {
		rendered = append(rendered, crd.Spec.Names.Kind)
	}
	if want := generatedKinds(t); !slices.Equal(slices.Sorted(slices.Values(rendered)), want) {
		t.Fatalf("the chart rendered CRDs of %v, want those of config/crd/bases: %v", rendered, want)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds, MaxTime: time.Minute}); err != nil {
		t.Fatalf("installing the chart's CRDs: %v", err)
	}
	if ic.serviceAccount == "" || ic.metricsReader == "" {
		t.Fatalf("the chart rendered no ServiceAccount or no metrics-reader ClusterRole (%+v)", ic)
	}
	t.Logf("installed the chart's CRDs, ServiceAccount and RBAC; not applied: %s", strings.Join(skipped, ", "))
	return ic
}

// tokenFor returns a token of a ServiceAccount from the TokenRequest API,
// as the kubelet projects one into a pod. No audience means the API
// server's own.
func tokenFor(t *testing.T, cs kubernetes.Interface, ns, name string, audiences ...string) string {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// tokenConfig is a REST config for the API server that authenticates with
// a bearer token only.
func tokenConfig(cfg *rest.Config, token string) *rest.Config {
	return &rest.Config{Host: cfg.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// eventually calls f until it returns nil, failing with its last error
// after timeout. check, if not nil, runs first on every round and stops the
// wait at once (the manager died, say).
func eventually(t *testing.T, timeout time.Duration, what string, check func() error, f func() error) {
	t.Helper()
	poll.Until(t, timeout, what, func() error {
		if check != nil {
			if err := check(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		return f()
	})
}

// agentObjects are an agent of namespace ns: the ServiceAccount "agent",
// allowed by RBAC to call every McpTool of ns, and an access policy that
// admits it up to the Internal data class.
func agentObjects(ns string) []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-call"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools"}, Verbs: []string{"call"},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-call"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent-call"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "agent"}}},
		&mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"}, Spec: mcpv1alpha1.McpAccessPolicySpec{
			ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal,
		}},
	}
}

// generatedKinds are the kinds of the CRDs controller-gen writes
// (config/crd/bases), sorted.
func generatedKinds(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var kinds []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		kinds = append(kinds, crd.Spec.Names.Kind)
	}
	return slices.Sorted(slices.Values(kinds))
}
