package kubectl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

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
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
		{dir: "samples", ns: "samples", kinds: []string{"McpServer", "McpTool", "McpDelegationProfile", "McpAccessPolicy", "Secret"}},
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
