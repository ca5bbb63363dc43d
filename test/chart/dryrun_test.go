package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mcp-catalog/operator/test/controlplane"
)

const fieldOwner = client.FieldOwner("mcp-catalog-chart-test")

// serviceMonitorStub is the least of prometheus-operator's ServiceMonitor
// CRD that lets the API server accept one: the kind, with any content.
func serviceMonitorStub() *apiextensionsv1.CustomResourceDefinition {
	return monitoringStub("servicemonitor", "ServiceMonitor")
}

// prometheusRuleStub is the same for PrometheusRule.
func prometheusRuleStub() *apiextensionsv1.CustomResourceDefinition {
	return monitoringStub("prometheusrule", "PrometheusRule")
}

func monitoringStub(singular, kind string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: singular + "s.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: singular + "s", Singular: singular, Kind: kind, ListKind: kind + "List",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:                   "object",
					XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// dryRunApply server-side applies obj with dryRun=All: the API server runs
// defaulting, validation (schema, CEL, field names) and admission, and
// persists nothing.
func dryRunApply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.DryRunAll, fieldOwner, client.ForceOwnership)
}

// TestServerSideDryRun applies every object each value set renders to a
// real kube-apiserver with a server-side dry-run. The chart's CRDs are
// created for real first, as Helm would, and a stub ServiceMonitor CRD
// stands in for prometheus-operator.
func TestServerSideDryRun(t *testing.T) {
	helmBinary(t)
	env := startAPIServer(t)
	cfg := env.Config
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// Render for the server we apply to; its version also has to satisfy
	// the chart's kubeVersion.
	serverVersion := strings.TrimPrefix(info.GitVersion, "v")

	// Install the chart's CRDs for real (Helm creates them before anything
	// that might use them) and the ServiceMonitor stub, and wait until the
	// API server serves them. The CRDs carry the release's ownership
	// annotations, as if an earlier install had created them, so that helm
	// install below may adopt them.
	crds := []*apiextensionsv1.CustomResourceDefinition{serviceMonitorStub(), prometheusRuleStub()}
	for _, u := range byKind(render(t, "", serverVersion), "CustomResourceDefinition") {
		crd := convert[apiextensionsv1.CustomResourceDefinition](t, u)
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "meta.helm.sh/release-name", releaseName)
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "meta.helm.sh/release-namespace", releaseNS)
		crds = append(crds, crd)
	}
	if len(crds) < 2 {
		t.Fatal("the default values render no CRDs")
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatalf("installing the chart's CRDs: %v", err)
	}

	t.Run("invalid objects are rejected", func(t *testing.T) {
		// Shows that dryRunApply reports what the API server refuses, both a
		// field the schema does not know (a typo in a template) and a value
		// validation rejects.
		deployment := func(mutate func(spec map[string]any)) *unstructured.Unstructured {
			spec := map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"a": "b"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"a": "b"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
				},
			}
			mutate(spec)
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "probe", "namespace": "default"},
				"spec":     spec,
			}}
		}
		if err := dryRunApply(ctx, c, deployment(func(map[string]any) {})); err != nil {
			t.Fatalf("the valid control object was rejected: %v", err)
		}
		for what, mutate := range map[string]func(map[string]any){
			"unknown field":     func(s map[string]any) { s["replica"] = int64(2) },
			"negative replicas": func(s map[string]any) { s["replicas"] = int64(-1) },
		} {
			if err := dryRunApply(ctx, c, deployment(mutate)); err == nil {
				t.Errorf("%s: the API server accepted it", what)
			}
		}
	})

	t.Run("helm install against the server and its notes", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
			t.Fatal(err)
		}
		ensureNamespaces(ctx, t, c, releaseNS, "team-a", "team-b")
		for _, nc := range []struct {
			name, values string
			want, not    []string
		}{
			{
				name: "defaults",
				want: []string{"watches McpServers in every namespace", "crds.keep=true", "metrics-reader"},
				not:  []string{"WARNING"},
			},
			{
				name:   "namespaced with gateway and private networks",
				values: "crds:\n  enabled: false\nwatchNamespaces: [team-a, team-b]\ngateway:\n  enabled: true\n  tls:\n    secretName: gw-tls\nallowPrivateNetworks: true\n",
				want:   []string{"only these namespaces: team-a, team-b", "installed no CRDs", "MCP gateway for agents is served over TLS", "WARNING: allowPrivateNetworks=true"},
				not:    []string{"every namespace"},
			},
		} {
			t.Run(nc.name, func(t *testing.T) {
				args := []string{"install", releaseName, chartDir, "--namespace", releaseNS, "--kubeconfig", kubeconfig, "--dry-run=server"}
				out, stderr, err := helm(t, append(args, valuesFile(t, nc.values)...)...)
				if err != nil {
					t.Fatalf("helm install --dry-run=server failed: %v\n%s", err, stderr)
				}
				_, notes, ok := strings.Cut(out, "\nNOTES:\n")
				if !ok {
					t.Fatalf("helm printed no notes:\n%s", out)
				}
				for _, w := range nc.want {
					if !strings.Contains(notes, w) {
						t.Errorf("notes lack %q:\n%s", w, notes)
					}
				}
				for _, w := range nc.not {
					if strings.Contains(notes, w) {
						t.Errorf("notes contain %q:\n%s", w, notes)
					}
				}
			})
		}
	})

	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ensureNamespaces(ctx, t, c, append([]string{releaseNS}, vs.namespaces...)...)
			objs := render(t, vs.values, serverVersion)
			for _, o := range objs {
				if err := dryRunApply(ctx, c, o); err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), nsName(o), err)
				}
			}
			// Nothing was persisted: the Deployment still does not exist.
			var got unstructured.Unstructured
			got.SetAPIVersion("apps/v1")
			got.SetKind("Deployment")
			err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: fullname}, &got)
			if !apierrors.IsNotFound(err) {
				t.Errorf("after a dry-run the Deployment exists or cannot be read: %v", err)
			}
		})
	}
}

func ensureNamespaces(ctx context.Context, t *testing.T, c client.Client, names ...string) {
	t.Helper()
	for _, ns := range names {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
}

func nsName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return fmt.Sprintf("%s/%s", o.GetNamespace(), o.GetName())
}

// startAPIServer starts a kube-apiserver and etcd for one test, without
// CRDs (the chart installs them), and stops them when it ends.
func startAPIServer(t *testing.T) *envtest.Environment {
	t.Helper()
	return controlplane.Start(t, controlplane.Bare()).Env
}
