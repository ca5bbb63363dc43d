package kubectl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/manifests"
)

// TestKustomizationsApply renders config/default (the install without Helm)
// and config/samples with kubectl's own kustomize and applies what they
// render to a real API server as a server-side dry-run, the way
// `kubectl apply --server-side -k` would.
func TestKustomizationsApply(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test`, or set KUBEBUILDER_ASSETS=$(hack/envtest.sh)")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not on PATH; this test renders with kubectl's kustomize")
	}
	// Bare: the default kustomization installs the CRDs itself.
	plane := controlplane.Start(t, controlplane.Bare())
	cfg, c := plane.Config, plane.Client
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for _, tc := range []struct {
		dir   string
		ns    string
		kinds []string
	}{
		// First, so that its CRDs exist for the samples.
		{dir: "default", kinds: []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"}},
		// The gateway's own Deployment, next to the controllers.
		{dir: "gateway", kinds: []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "PodDisruptionBudget"}},
		{dir: "samples", ns: "samples", kinds: []string{"McpServer", "McpTool", "McpPrompt", "McpResource", "McpDelegationProfile", "McpAccessPolicy", "Secret"}},
		// The demo agent make run applies.
		{dir: "samples/demo-agent", ns: "demo", kinds: []string{"ServiceAccount", "Role", "RoleBinding", "McpAccessPolicy"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			out, err := exec.Command(kubectl, "kustomize", filepath.Join("..", "..", "config", tc.dir)).Output()
			if err != nil {
				t.Fatalf("kubectl kustomize config/%s: %v", tc.dir, err)
			}
			objs, err := manifests.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			kinds := manifests.Kinds(objs)
			for _, k := range tc.kinds {
				if kinds[k] == 0 {
					t.Errorf("config/%s renders no %s (kinds: %v)", tc.dir, k, kinds)
				}
			}
			if tc.ns != "" {
				if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, err := range manifests.Apply(ctx, cfg, c, objs, tc.ns, "mcp-catalog-kustomize-test") {
				t.Error(err)
			}
		})
	}
}

// TestPolicyBindingNamesThePolicyAfterKustomize renders config/default and
// checks that the admission policy's binding names the policy as
// rendered: the namePrefix renames both. kustomize learnt this reference
// itself only in v5.5 (kubectl 1.32); config/policy declares it, so that
// the kustomize of kubectl 1.30 and 1.31 renames the reference too instead
// of leaving a binding that binds nothing, and this test fails if that
// declaration goes.
func TestPolicyBindingNamesThePolicyAfterKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not on PATH; this test renders with kubectl's kustomize")
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join("..", "..", "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	objs, err := manifests.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	var policies, bound []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ValidatingAdmissionPolicy":
			policies = append(policies, o.GetName())
		case "ValidatingAdmissionPolicyBinding":
			name, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
			bound = append(bound, name)
		}
	}
	slices.Sort(policies)
	slices.Sort(bound)
	if len(policies) != 2 || !slices.Equal(bound, policies) {
		t.Fatalf("config/default renders the policies %v and bindings naming %v; want the call-approvals and sharing-labels policies, each bound once", policies, bound)
	}

	// The declaration itself, which older kustomize versions depend on.
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "kustomizeconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		NameReference []struct {
			Kind       string `json:"kind"`
			FieldSpecs []struct {
				Path string `json:"path"`
				Kind string `json:"kind"`
			} `json:"fieldSpecs"`
		} `json:"nameReference"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	declared := false
	for _, r := range cfg.NameReference {
		for _, f := range r.FieldSpecs {
			declared = declared || r.Kind == "ValidatingAdmissionPolicy" && f.Kind == "ValidatingAdmissionPolicyBinding" && f.Path == "spec/policyName"
		}
	}
	k, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !declared || !strings.Contains(string(k), "kustomizeconfig.yaml") {
		t.Fatal("config/policy does not declare that a binding's spec/policyName names a ValidatingAdmissionPolicy; kubectl 1.30 and 1.31 would render a binding that binds nothing")
	}
}
