// Package kubectl checks how kubectl resolves this operator's resource names
// in a cluster that also has another project's kinds of the same plural
// (ToolHive and kagent both define an MCPServer whose plural is mcpservers),
// and that every command this project shows a person is unambiguous.
package kubectl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mcp-catalog/operator/test/controlplane"
)

const group = "mcp.catalog.dev"

// collidingCRD is a stand-in for another project's MCPServer kind: the same
// plural, singular and category, in its own group.
func collidingCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "mcpservers." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "mcpservers", Singular: "mcpserver", Kind: "MCPServer", ListKind: "MCPServerList",
				ShortNames: []string{"mcpserver"}, Categories: []string{"mcp"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

func TestNamesWithACollidingCRD(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test`, or set KUBEBUILDER_ASSETS=$(hack/envtest.sh)")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not on PATH; this test runs the real kubectl against a real API server")
	}
	plane := controlplane.Start(t, controlplane.WithCRDs(collidingCRD("toolhive.stacklok.dev")))
	kubeconfig, err := plane.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := plane.Client
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, o := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": group + "/v1alpha1", "kind": "McpServer",
			"metadata": map[string]any{"name": "ours", "namespace": "default"},
			"spec":     map[string]any{"url": "https://tickets.example.com/mcp", "dataClass": "Internal"}}},
		{Object: map[string]any{"apiVersion": "toolhive.stacklok.dev/v1alpha1", "kind": "MCPServer",
			"metadata": map[string]any{"name": "theirs", "namespace": "default"}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}

	get := func(resource string) string {
		t.Helper()
		// A fresh discovery cache each time, as a new user has.
		cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--cache-dir", t.TempDir(), "get", resource, "-n", "default", "-o", "name")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get %s: %v\n%s", resource, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	// A bare plural that two groups define goes to one of them, silently.
	// CRD groups all share one priority, so kubectl takes the group whose
	// name sorts first: whether that is ours depends only on the other
	// project's group name.
	if got := get("mcpservers"); got != "mcpserver."+group+"/ours" {
		t.Errorf("with toolhive.stacklok.dev beside us, kubectl get mcpservers printed %q, want ours", got)
	}
	if _, err := envtest.InstallCRDs(plane.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{collidingCRD("kagent.dev")}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kagent.dev/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": "kagents", "namespace": "default"}}}); err != nil {
		t.Fatal(err)
	}
	if got := get("mcpservers"); got != "mcpserver.kagent.dev/kagents" {
		t.Errorf("with kagent.dev beside us, kubectl get mcpservers printed %q, want kagent's", got)
	}

	for resource, want := range map[string]string{
		"mcpservers." + group:              "mcpserver." + group + "/ours",
		"mcpserver." + group:               "mcpserver." + group + "/ours",
		"mcpservers.v1alpha1." + group:     "mcpserver." + group + "/ours",
		"mcps":                             "mcpserver." + group + "/ours",
		"mcpservers.toolhive.stacklok.dev": "mcpserver.toolhive.stacklok.dev/theirs",
		// The category of our own name lists only our kinds.
		"mcp-catalog": "mcpserver." + group + "/ours",
	} {
		if got := get(resource); got != want {
			t.Errorf("kubectl get %s printed %q, want %q", resource, got, want)
		}
	}
	// The shared category lists both projects' objects.
	shared := get("mcp")
	if !strings.Contains(shared, "toolhive.stacklok.dev/theirs") || !strings.Contains(shared, "kagent.dev/kagents") || !strings.Contains(shared, group+"/ours") {
		t.Errorf("kubectl get mcp printed %q, want both projects' servers", shared)
	}
}

// ourResources are every name kubectl accepts for this operator's kinds
// without a group: plurals, singulars, short names and the shared category.
var ourResources = []string{
	"mcpservers", "mcpserver", "mcptools", "mcptool",
	"mcpdelegationprofiles", "mcpdelegationprofile", "mcpaccesspolicies", "mcpaccesspolicy",
	"mcpcallapprovals", "mcpcallapproval", "mcpsharedservers", "mcpsharedserver",
	"mcpreadmarks", "mcpreadmark",
	"mcps", "mcpt", "mcpdp", "mcpap", "mcpca", "mcpss", "mcprm", "mcp",
}

// TestShownCommandsAreQualified reads every document, sample, chart note and
// source file and fails on a kubectl command that names one of the
// operator's kinds without its group, which another project's CRD can
// capture.
func TestShownCommandsAreQualified(t *testing.T) {
	root := filepath.Join("..", "..")
	verbs := `(?:get|describe|edit|delete|wait|annotate|label|patch|explain|rollout|scale)`
	names := strings.Join(ourResources, "|")
	// kubectl [flags] VERB [flags] NAME[,NAME...] where a NAME is bare: not
	// followed by a dot (a group) or another name character.
	cmd := regexp.MustCompile(`kubectl\b[^\n|;&]*?\b` + verbs + `\b[^\n|;&]*?(?:^|[\s,])(` + names + `)(?:[\s,/"'\x60)]|$)`)
	var checked int
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "dist", ".local", "testbin":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".md", ".go", ".yaml", ".yml", ".txt", ".sh", ".tpl":
		default:
			return nil
		}
		if strings.HasSuffix(p, "names_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checked++
		// docs/naming.md shows what the bare names resolve to, in a table
		// whose rows start with a command in backquotes.
		showsBareNames := filepath.ToSlash(p) == "../../docs/naming.md"
		for i, line := range strings.Split(string(b), "\n") {
			if showsBareNames && strings.HasPrefix(line, "| `kubectl get ") {
				continue
			}
			if m := cmd.FindStringSubmatch(line); m != nil {
				t.Errorf("%s:%d: %q names %s without its group; write %s", p, i+1, strings.TrimSpace(line), m[1], qualified(m[1]))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d files read; the walk is broken", checked)
	}
}

// qualified is what a command should say instead of name.
func qualified(name string) string {
	switch name {
	case "mcps", "mcpserver", "mcpservers":
		return "mcpservers." + group
	case "mcpt", "mcptool", "mcptools":
		return "mcptools." + group
	case "mcpdp", "mcpdelegationprofile", "mcpdelegationprofiles":
		return "mcpdelegationprofiles." + group
	case "mcpap", "mcpaccesspolicy", "mcpaccesspolicies":
		return "mcpaccesspolicies." + group
	case "mcpca", "mcpcallapproval", "mcpcallapprovals":
		return "mcpcallapprovals." + group
	case "mcpss", "mcpsharedserver", "mcpsharedservers":
		return "mcpsharedservers." + group
	case "mcprm", "mcpreadmark", "mcpreadmarks":
		return "mcpreadmarks." + group
	default: // the shared category
		return "mcp-catalog, the category no other project shares"
	}
}
