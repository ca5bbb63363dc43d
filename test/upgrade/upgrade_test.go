// Package upgrade proves that upgrading an installation of the first
// release, v0.1.0, to this tree loses nothing people decided, and that
// rolling back keeps it too (docs/upgrading.md, docs/adr/051).
//
// v0.1.0 is built from the commit whose CHANGELOG first names it, so the
// test needs the git history (a full clone); without it the test fails and
// says so. Its Helm chart is installed with the helm binary against a real
// kube-apiserver and etcd (envtest). There is no kubelet: the containers
// of the Deployments the chart installs run as local processes, with the
// arguments the Deployment gives them and the token of its
// ServiceAccount. The steps a person takes (the pin before the upgrade,
// helm upgrade, helm rollback) are those docs/upgrading.md gives, and the
// test checks the document still gives them.
//
// The test needs KUBEBUILDER_ASSETS and HELM; `make test` sets both.
package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
)

const (
	// The release as docs/install.md and docs/upgrading.md name it.
	releaseName = "mcp-catalog"
	releaseNS   = "mcp-catalog-system"
	// ns holds the catalog, the agent and its policy.
	ns              = "team"
	gatewayAudience = "mcp-catalog-gateway"
	upgradingDoc    = repoRoot + "/docs/upgrading.md"
)

// The commands docs/upgrading.md gives, run here word for word (from the
// repository's root, where charts/mcp-catalog-operator is the new chart).
var (
	upgradeCommand  = []string{"upgrade", releaseName, chartPath, "-n", releaseNS, "--reset-then-reuse-values"}
	rollbackCommand = []string{"rollback", releaseName, "-n", releaseNS}
)

// v010Kinds are the kinds the v0.1.0 chart installed. McpSharedServer and
// McpCallApproval came later: v0.1.0 asked for a call's approval within the
// MCP session (elicitation) and stored nothing, so there are no call
// approvals or shares to carry over from it.
var v010Kinds = []string{"McpAccessPolicy", "McpDelegationProfile", "McpServer", "McpTool"}

// McpTools are read as unstructured objects throughout: the v0.1.0
// schema has fields the current types lack, and the reverse.
var toolList = listOf("McpToolList")

func listOf(kind string) func() *unstructured.UnstructuredList {
	return func() *unstructured.UnstructuredList {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(mcpv1alpha1.GroupVersion.String())
		l.SetKind(kind)
		return l
	}
}

// decision is what a person decided about one tool under v0.1.0.
type decision struct {
	server, remote string
	enabled        bool
	// pinned: spec.approvedDefinitionHash set, as `kubectl mcp approve`
	// did; an enabled tool that is not pinned was approved, in v0.1.0, by
	// the definition seen when it was enabled.
	pinned bool
	// dataClass raises the tool's class above its server's.
	dataClass string
	// served: what an agent with the Internal ceiling is offered after
	// the upgrade.
	served bool
}

var decisions = []decision{
	{server: "alpha", remote: mcpserver.ToolEcho, enabled: true, pinned: true, served: true},
	{server: "alpha", remote: mcpserver.ToolNested, enabled: true, served: true},
	{server: "alpha", remote: mcpserver.ToolImageAndText, enabled: true, pinned: true, dataClass: "Confidential"},
	{server: "alpha", remote: mcpserver.ToolFail},
	{server: "vault", remote: mcpserver.ToolEcho, enabled: true, pinned: true},
	// gated's calls need a person's approval (the server's default).
	{server: "gated", remote: mcpserver.ToolEcho, enabled: true, pinned: true, served: true},
}

// suite is the state the steps share.
type suite struct {
	c          client.Client
	cs         kubernetes.Interface
	kubeconfig string
	helm       string
	work       string
	bins       func() managers
	alpha      *mcpserver.Server
	vault      *mcpserver.Server
	gated      *mcpserver.Server
	// tools are the McpTools, by spec (server/remote), as v0.1.0 left them
	// before the upgrade.
	tools map[string]*unstructured.Unstructured
	// others are the other objects of the catalog as v0.1.0 left them.
	others []*unstructured.Unstructured
}

func TestUpgradeFromV010(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "$(make -s envtest)")
	s := &suite{helm: requireEnv(t, "HELM", "$(make -s helm)"), work: t.TempDir()}
	commit := v010(t)
	checkDocs(t)
	oldTree := filepath.Join(s.work, "v0.1.0")
	extract(t, commit, oldTree)
	s.bins = startBuilds(t, oldTree, s.work)

	logf.SetLogger(logr.Discard())
	cp := controlplane.Start(t, controlplane.Bare())
	var err error
	if s.c, err = client.New(cp.Config, client.Options{Scheme: newScheme()}); err != nil {
		t.Fatal(err)
	}
	if s.cs, err = kubernetes.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	if s.kubeconfig, err = cp.Kubeconfig(s.work); err != nil {
		t.Fatal(err)
	}

	// The release as a v0.1.0 user installed it, with the gateway, and
	// with private networks allowed because the test's MCP servers listen
	// on loopback.
	helm(t, s.helm, s.kubeconfig, repoRoot, "install", releaseName, filepath.Join(oldTree, chartPath),
		"-n", releaseNS, "--create-namespace",
		"--set", "allowPrivateNetworks=true", "--set", "gateway.enabled=true", "--set", "gateway.tls.secretName=mcp-catalog-gateway-tls")
	s.checkCRDs(t, v010Kinds)
	bins := s.bins()

	old := runContainer(t, s.c, s.cs, cp.Config, bins.old, "manager", "v0.1.0-controllers", s.work)
	s.seed(t, old)
	s.decide(t, old)
	s.awaitProfile(t, old)
	pinImplicitApprovals(t, s.c)
	old.stop(t)
	s.snapshot(t)
	fetches := s.catalogFetches()

	helm(t, s.helm, s.kubeconfig, repoRoot, upgradeCommand...)
	s.checkCRDs(t, currentKinds(t))
	controllers := runContainer(t, s.c, s.cs, cp.Config, bins.current, "manager", "current-controllers", s.work)
	gateway := runContainer(t, s.c, s.cs, cp.Config, bins.current, "gateway", "current-gateway", s.work)
	s.awaitCurrent(t, controllers)
	s.nothingLost(t, "after the upgrade")
	s.gatewayDecides(t, gateway)
	// Nor did they fetch any catalog: the next import is the catalog's
	// interval's (an hour) or a server's announcement's.
	if now := s.catalogFetches(); !maps.Equal(now, fetches) {
		t.Errorf("the upstreams answered tools/list %v times before the upgrade and %v times after it: the current controllers imported again", fetches, now)
	}

	// A decision only the current version can express, to see what a
	// rollback does with it.
	s.review(t, controllers)

	gateway.stop(t)
	controllers.stop(t)
	helm(t, s.helm, s.kubeconfig, repoRoot, rollbackCommand...)
	s.checkRolledBack(t)
	again := runContainer(t, s.c, s.cs, cp.Config, bins.old, "manager", "v0.1.0-controllers-after-rollback", s.work)
	s.awaitV010(t, again)
	// v0.1.0's schema has no spec.reviewedText: the API server prunes it
	// from what it reads, and so from what v0.1.0 writes back.
	s.forgetReview(t, "after the rollback")
	s.nothingLost(t, "after the rollback")

	// Upgrading again does not bring the reviewed text back: v0.1.0
	// wrote the tool without it. Everything v0.1.0 knew is still there.
	again.stop(t)
	helm(t, s.helm, s.kubeconfig, repoRoot, upgradeCommand...)
	controllers = runContainer(t, s.c, s.cs, cp.Config, bins.current, "manager", "current-controllers-again", s.work)
	s.awaitCurrent(t, controllers)
	s.forgetReview(t, "after upgrading again")
	s.nothingLost(t, "after upgrading again")
	s.approvalKept(t, "after upgrading again")
}

// reviewedTool is the tool given a reviewed text after the upgrade.
var reviewedTool = decisions[0]

const reviewedDescription = "Returns the text it is given, unchanged."

// review gives a tool a reviewed description, as kubectl mcp review
// does, and waits for the current controllers to serve it.
func (s *suite) review(t *testing.T, p *proc) {
	t.Helper()
	tl := s.tool(t, reviewedTool.server, reviewedTool.remote)
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": tl.GetResourceVersion()},
		"spec":     map[string]any{"reviewedText": map[string]any{"description": reviewedDescription}},
	})
	if err := s.c.Patch(context.Background(), tl, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatalf("reviewing %s: %v", tl.GetName(), err)
	}
	until(t, p, "the current controllers observe the reviewed text", func() error {
		tl := s.tool(t, reviewedTool.server, reviewedTool.remote)
		c := condition(*tl, "Ready")
		if c == nil || c["status"] != "True" || fmt.Sprint(c["observedGeneration"]) != fmt.Sprint(tl.GetGeneration()) {
			return fmt.Errorf("Ready = %v at generation %d", c, tl.GetGeneration())
		}
		return nil
	})
	// The review is a write of the spec: the rest is compared with what
	// v0.1.0 left, this tool with what it is now.
	s.tools[reviewedTool.server+"/"+reviewedTool.remote] = s.tool(t, reviewedTool.server, reviewedTool.remote)
}

// forgetReview checks the reviewed tool has no reviewed text any more,
// and drops it from the snapshot, which the rest is compared with.
func (s *suite) forgetReview(t *testing.T, when string) {
	t.Helper()
	tl := s.tool(t, reviewedTool.server, reviewedTool.remote)
	if _, found, _ := unstructured.NestedFieldNoCopy(tl.Object, "spec", "reviewedText"); found {
		t.Errorf("%s McpTool %s still has spec.reviewedText: docs/upgrading.md says a rollback drops it", when, tl.GetName())
	}
	unstructured.RemoveNestedField(s.tools[reviewedTool.server+"/"+reviewedTool.remote].Object, "spec", "reviewedText")
}

// requireEnv returns an environment variable the test cannot run
// without, failing with how to set it: a test that silently skips proves
// nothing.
func requireEnv(t *testing.T, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the test through `make test`, or set %s=%s yourself", name, name, how)
	}
	return v
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(mcpv1alpha1.AddToScheme(s))
	return s
}

func requestToken(cs kubernetes.Interface, ns, name string, audiences ...string) (string, error) {
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// checkDocs fails when docs/upgrading.md no longer gives the commands
// the test runs: the document is the procedure, and the test its proof.
func checkDocs(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(upgradingDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{upgradeCommand, rollbackCommand} {
		if line := "helm " + strings.Join(cmd, " "); !strings.Contains(string(b), line) {
			t.Errorf("%s does not give the command the test runs: %s", upgradingDoc, line)
		}
	}
	if !strings.Contains(string(b), "enabledDefinitionHash") {
		t.Errorf("%s does not give the pin of v0.1.0's implicit approvals (status.enabledDefinitionHash) the test runs", upgradingDoc)
	}
}

// checkCRDs checks the installed CRDs are the kinds named, each serving
// and storing v1alpha1 only, and having stored nothing else.
// currentKinds are the kinds of the current CRDs (config/crd/bases).
func currentKinds(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no current CRDs found: %v", err)
	}
	var kinds []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, decodeCRD(t, p, b).Spec.Names.Kind)
	}
	return kinds
}

func (s *suite) checkCRDs(t *testing.T, kinds []string) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := s.c.List(context.Background(), &crds); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, crd := range crds.Items {
		if crd.Spec.Group != mcpv1alpha1.GroupVersion.Group {
			continue
		}
		got = append(got, crd.Spec.Names.Kind)
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" || !crd.Spec.Versions[0].Storage ||
			!slices.Equal(crd.Status.StoredVersions, []string{"v1alpha1"}) {
			t.Errorf("CRD %s: versions %+v, stored %v; want v1alpha1 served and stored, and nothing else ever stored",
				crd.Name, crd.Spec.Versions, crd.Status.StoredVersions)
		}
	}
	sort.Strings(got)
	kinds = slices.Sorted(slices.Values(kinds))
	if !slices.Equal(got, kinds) {
		t.Fatalf("installed kinds %v, want %v", got, kinds)
	}
}

// seed creates the catalog as v0.1.0's API took it, written as YAML so
// that no field of the current types slips in, and waits for v0.1.0's
// controllers to import it.
func (s *suite) seed(t *testing.T, old *proc) {
	t.Helper()
	s.alpha = mcpserver.Start(t, mcpserver.Options{Name: "upgrade-alpha"})
	s.vault = mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.MCPGo, Name: "upgrade-vault"})
	s.gated = mcpserver.Start(t, mcpserver.Options{Name: "upgrade-gated"})
	docs := []string{
		`{apiVersion: v1, kind: Namespace, metadata: {name: ` + ns + `}}`,
		`{apiVersion: mcp.catalog.dev/v1alpha1, kind: McpServer, metadata: {name: alpha, namespace: ` + ns + `},
		  spec: {url: "` + s.alpha.URL + `", dataClass: Internal, approvalRequired: false}}`,
		`{apiVersion: mcp.catalog.dev/v1alpha1, kind: McpServer, metadata: {name: vault, namespace: ` + ns + `},
		  spec: {url: "` + s.vault.URL + `", dataClass: Confidential, approvalRequired: false}}`,
		`{apiVersion: mcp.catalog.dev/v1alpha1, kind: McpServer, metadata: {name: gated, namespace: ` + ns + `},
		  spec: {url: "` + s.gated.URL + `", dataClass: Internal}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: agent, namespace: ` + ns + `}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: agent-call, namespace: ` + ns + `},
		  rules: [{apiGroups: [mcp.catalog.dev], resources: [mcptools], verbs: [call]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: agent-call, namespace: ` + ns + `},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: agent-call},
		  subjects: [{kind: ServiceAccount, name: agent, namespace: ` + ns + `}]}`,
		`{apiVersion: mcp.catalog.dev/v1alpha1, kind: McpAccessPolicy, metadata: {name: agents, namespace: ` + ns + `},
		  spec: {serviceAccounts: [agent], maxDataClass: Internal}}`,
		// A delegation profile and its explicit map of actors, a decision
		// of its own; no server uses it, and nothing calls its endpoint.
		`{apiVersion: v1, kind: Secret, metadata: {name: idp-client, namespace: ` + ns + `, labels: {mcp.catalog.dev/credential: "true"}},
		  stringData: {secret: client-secret, subject: subject-token}}`,
		`{apiVersion: mcp.catalog.dev/v1alpha1, kind: McpDelegationProfile, metadata: {name: idp, namespace: ` + ns + `},
		  spec: {tokenEndpoint: "https://idp.example.com/token", clientID: catalog, allowedAudiences: [tickets],
		    clientSecretRef: {name: idp-client, key: secret},
		    actors: [{identity: "system:serviceaccount:` + ns + `:agent", enabled: true, subjectTokenSecretRef: {name: idp-client, key: subject}}]}}`,
	}
	for _, d := range docs {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &o.Object); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if err := s.c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	want := len(s.alpha.ToolNames()) + len(s.vault.ToolNames()) + len(s.gated.ToolNames())
	until(t, old, "v0.1.0 imports both catalogs", func() error {
		l := toolList()
		if err := s.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		withHash := 0
		for _, tl := range l.Items {
			if str(tl, "status", "definitionHash") != "" {
				withHash++
			}
		}
		if withHash != want {
			return fmt.Errorf("%d of %d McpTools imported with a definition hash", withHash, want)
		}
		return nil
	})
}

// until polls f, ending at once if the process died.
func until(t *testing.T, p *proc, what string, f func() error) {
	t.Helper()
	poll.Until(t, 2*time.Minute, what, func() error {
		if err := p.alive(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return f()
	})
}

// tool returns the McpTool of a server's remote tool, found by its spec
// (the naming rule is the current code's, and is not what is tested).
func (s *suite) tool(t *testing.T, server, remote string) *unstructured.Unstructured {
	t.Helper()
	l := toolList()
	if err := s.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		if str(l.Items[i], "spec", "serverRef", "name") == server && str(l.Items[i], "spec", "remoteName") == remote {
			return &l.Items[i]
		}
	}
	t.Fatalf("no McpTool of %s/%s", server, remote)
	return nil
}

func str(o unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(o.Object, path...)
	return v
}

// condition returns a status condition of an unstructured object.
func condition(o unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// decide records the decisions as v0.1.0's API allowed them, with merge
// patches as kubectl (and v0.1.0's `kubectl mcp enable` and `approve`)
// write them, and waits for v0.1.0 to serve what is enabled and approved.
func (s *suite) decide(t *testing.T, old *proc) {
	t.Helper()
	ctx := context.Background()
	for _, d := range decisions {
		if !d.enabled {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			tl := s.tool(t, d.server, d.remote)
			spec := map[string]any{"enabled": true}
			if d.pinned {
				spec["approvedDefinitionHash"] = str(*tl, "status", "definitionHash")
			}
			if d.dataClass != "" {
				spec["dataClass"] = d.dataClass
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": tl.GetResourceVersion()}, "spec": spec})
			return s.c.Patch(ctx, tl, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-patch"))
		})
		if err != nil {
			t.Fatalf("deciding %s/%s: %v", d.server, d.remote, err)
		}
	}
	for _, d := range decisions {
		until(t, old, fmt.Sprintf("v0.1.0 decides %s/%s", d.server, d.remote), func() error {
			tl := s.tool(t, d.server, d.remote)
			c := condition(*tl, "Ready")
			if c == nil || fmt.Sprint(c["observedGeneration"]) != fmt.Sprint(tl.GetGeneration()) {
				return fmt.Errorf("Ready = %v at generation %d", c, tl.GetGeneration())
			}
			if want := map[bool]string{true: "True", false: "False"}[d.enabled]; c["status"] != want {
				return fmt.Errorf("Ready = %v, want %s", c, want)
			}
			if d.enabled && !d.pinned && str(*tl, "status", "enabledDefinitionHash") != str(*tl, "status", "definitionHash") {
				return fmt.Errorf("status.enabledDefinitionHash %q, want the definition seen when enabled", str(*tl, "status", "enabledDefinitionHash"))
			}
			return nil
		})
	}
}

// awaitProfile waits for v0.1.0 to find the delegation profile Ready, so
// that the upgrade is compared against a Ready profile.
func (s *suite) awaitProfile(t *testing.T, old *proc) {
	t.Helper()
	until(t, old, "v0.1.0 finds the delegation profile Ready", func() error {
		p := &unstructured.Unstructured{}
		p.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpDelegationProfile"))
		if err := s.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "idp"}, p); err != nil {
			return err
		}
		if c := condition(*p, "Ready"); c == nil || c["status"] != "True" {
			return fmt.Errorf("Ready = %v", c)
		}
		return nil
	})
}

// pinImplicitApprovals is the step docs/upgrading.md gives before
// upgrading from v0.1.0: a tool enabled without
// spec.approvedDefinitionHash was approved by status.enabledDefinitionHash,
// which later versions neither keep nor honour (docs/adr/013); the person
// upgrading writes that hash into the spec, where approvals live now. It
// is the kubectl loop of the document, done through the same API: the
// hash as a merge patch, guarded by the resource version.
func pinImplicitApprovals(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	l := toolList()
	if err := c.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, tl := range l.Items {
		enabled, _, _ := unstructured.NestedBool(tl.Object, "spec", "enabled")
		h := str(tl, "status", "enabledDefinitionHash")
		if !enabled || h == "" || str(tl, "spec", "approvedDefinitionHash") != "" {
			continue
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": tl.GetResourceVersion()},
			"spec":     map[string]any{"approvedDefinitionHash": h},
		})
		if err := c.Patch(ctx, &tl, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-patch")); err != nil {
			t.Fatalf("pinning %s/%s: %v", tl.GetNamespace(), tl.GetName(), err)
		}
	}
}

// snapshot records the catalog as v0.1.0 left it, once its controllers
// stopped.
func (s *suite) snapshot(t *testing.T) {
	t.Helper()
	s.tools = map[string]*unstructured.Unstructured{}
	l := toolList()
	if err := s.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		tl := &l.Items[i]
		s.tools[str(*tl, "spec", "serverRef", "name")+"/"+str(*tl, "spec", "remoteName")] = tl
	}
	s.others = nil
	for _, kind := range []string{"McpServerList", "McpAccessPolicyList", "McpDelegationProfileList"} {
		l := listOf(kind)()
		if err := s.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			s.others = append(s.others, &l.Items[i])
		}
	}
}

// awaitCurrent waits until the current controllers have reconciled every
// tool, policy and server: each leaves a mark v0.1.0's did not (an
// McpTool's owner reference to its server removed, docs/adr/013; a
// Ready condition on the access policy; the servers' tool counts).
func (s *suite) awaitCurrent(t *testing.T, p *proc) {
	t.Helper()
	ctx := context.Background()
	until(t, p, "the current controllers reconcile every McpTool", func() error {
		l := toolList()
		if err := s.c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, tl := range l.Items {
			if len(tl.GetOwnerReferences()) > 0 {
				return fmt.Errorf("McpTool %s still has owner references %v", tl.GetName(), tl.GetOwnerReferences())
			}
		}
		return nil
	})
	until(t, p, "the current controllers reconcile the access policy", func() error {
		ap := &mcpv1alpha1.McpAccessPolicy{}
		if err := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "agents"}, ap); err != nil {
			return err
		}
		for _, c := range ap.Status.Conditions {
			if c.Type == mcpv1alpha1.ConditionReady && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ap.Generation {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", ap.Status.Conditions)
	})
	// A server whose status is current gets no write, so the count of
	// the McpServer controller's reconciles is what says it looked at
	// each.
	until(t, p, "the current controllers reconcile the servers", func() error {
		n, err := p.reconciles("mcpserver")
		if err != nil {
			return err
		}
		if n < len(s.servers()) {
			return fmt.Errorf("%d McpServer reconciles succeeded, want at least %d", n, len(s.servers()))
		}
		return nil
	})
}

// servers are the upstream MCP servers, by McpServer name.
func (s *suite) servers() map[string]*mcpserver.Server {
	return map[string]*mcpserver.Server{"alpha": s.alpha, "vault": s.vault, "gated": s.gated}
}

// catalogFetches counts the tools/list requests each upstream answered.
func (s *suite) catalogFetches() map[string]int {
	m := map[string]int{}
	for name, srv := range s.servers() {
		m[name] = srv.Stats().Methods["tools/list"]
	}
	return m
}

// nothingLost compares the catalog with what v0.1.0 left. Nothing is
// lost: the same McpTools (same UIDs: none deleted and created again),
// each spec as it was (the same generation, and every field v0.1.0 knew
// with the same value), the same definition hash (no import replaced a
// definition). Nothing is re-gated: every tool enabled and approved is
// Ready=True with the condition's lastTransitionTime it had under
// v0.1.0, so it never turned False in between, and every other tool is
// not Ready. What the controllers may legitimately write is status, and
// metadata of their own (the owner references they remove).
func (s *suite) nothingLost(t *testing.T, when string) {
	t.Helper()
	l := toolList()
	if err := s.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != len(s.tools) {
		t.Errorf("%s there are %d McpTools, v0.1.0 left %d", when, len(l.Items), len(s.tools))
	}
	for _, now := range l.Items {
		key := str(now, "spec", "serverRef", "name") + "/" + str(now, "spec", "remoteName")
		was, ok := s.tools[key]
		if !ok {
			t.Errorf("%s McpTool %s (%s) is new", when, now.GetName(), key)
			continue
		}
		if now.GetUID() != was.GetUID() || now.GetName() != was.GetName() {
			t.Errorf("%s McpTool %s is %s (uid %s), v0.1.0 left %s (uid %s): deleted and created again", when, key, now.GetName(), now.GetUID(), was.GetName(), was.GetUID())
		}
		if now.GetGeneration() != was.GetGeneration() {
			t.Errorf("%s McpTool %s is at generation %d, v0.1.0 left %d: its spec was written", when, key, now.GetGeneration(), was.GetGeneration())
		}
		if path, ok := kept(was.Object["spec"], now.Object["spec"], "spec"); !ok {
			t.Errorf("%s McpTool %s %s is not what v0.1.0 left:\nnow %v\nwas %v", when, key, path, now.Object["spec"], was.Object["spec"])
		}
		if h := str(now, "status", "definitionHash"); h != str(*was, "status", "definitionHash") {
			t.Errorf("%s McpTool %s status.definitionHash = %s, v0.1.0 left %s", when, key, h, str(*was, "status", "definitionHash"))
		}
		wasReady, nowReady := condition(*was, "Ready"), condition(now, "Ready")
		switch {
		case nowReady == nil || wasReady == nil:
			t.Errorf("%s McpTool %s Ready = %v, v0.1.0 left %v", when, key, nowReady, wasReady)
		case nowReady["status"] != wasReady["status"]:
			t.Errorf("%s McpTool %s Ready = %v, v0.1.0 left %v", when, key, nowReady, wasReady)
		case wasReady["status"] == "True" && nowReady["lastTransitionTime"] != wasReady["lastTransitionTime"]:
			t.Errorf("%s McpTool %s Ready became True again at %v (v0.1.0 had it True since %v): it was re-gated in between",
				when, key, nowReady["lastTransitionTime"], wasReady["lastTransitionTime"])
		}
	}
	for _, was := range s.others {
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(was.GroupVersionKind())
		if err := s.c.Get(context.Background(), client.ObjectKeyFromObject(was), now); err != nil {
			t.Errorf("%s %s %s: %v", when, was.GetKind(), was.GetName(), err)
			continue
		}
		if now.GetUID() != was.GetUID() || now.GetGeneration() != was.GetGeneration() {
			t.Errorf("%s %s %s: uid %s generation %d, v0.1.0 left uid %s generation %d", when, was.GetKind(), was.GetName(),
				now.GetUID(), now.GetGeneration(), was.GetUID(), was.GetGeneration())
		}
		if path, ok := kept(was.Object["spec"], now.Object["spec"], "spec"); !ok {
			t.Errorf("%s %s %s %s is not what v0.1.0 left:\nnow %v\nwas %v", when, was.GetKind(), was.GetName(), path, now.Object["spec"], was.Object["spec"])
		}
		if w := condition(*was, "Ready"); w != nil {
			if n := condition(*now, "Ready"); n == nil || n["status"] != w["status"] {
				t.Errorf("%s %s %s Ready = %v, v0.1.0 left %v", when, was.GetKind(), was.GetName(), n, w)
			}
		}
	}
}

// kept reports whether now keeps every field of was with its value, and
// the first path where it does not. Fields only now has are the defaults
// of fields v0.1.0 did not know, which the API server fills in when it
// reads an object stored before them; they change nothing anyone
// decided.
func kept(was, now any, path string) (string, bool) {
	wm, ok := was.(map[string]any)
	if !ok {
		return path, reflect.DeepEqual(was, now)
	}
	nm, ok := now.(map[string]any)
	if !ok {
		return path, false
	}
	for _, k := range slices.Sorted(maps.Keys(wm)) {
		if p, ok := kept(wm[k], nm[k], path+"."+k); !ok {
			return p, false
		}
	}
	return "", true
}

// gatewayDecides asks the current gateway as the agent: it is offered the
// enabled, approved tools within its policy's ceiling and nothing else,
// and a call of one runs while a call above the ceiling is refused.
func (s *suite) gatewayDecides(t *testing.T, gw *proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok := token(t, s.cs, ns, "agent", gatewayAudience)
	c := sdk.NewClient(&sdk.Implementation{Name: "upgrade-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + gw.gateway + "/mcp", HTTPClient: &http.Client{Transport: bearer(tok)}}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway as the agent: %v\nthe gateway's log ends with:\n%s", err, tail(gw.logPath, 20))
	}
	defer cs.Close()
	var want []string
	for _, d := range decisions {
		if d.served {
			want = append(want, toolname.LocalName(d.server, d.remote))
		}
	}
	sort.Strings(want)
	var listed []string
	// The gateway's cache may still be filling when it first answers.
	poll.Until(t, time.Minute, "the gateway offers the agent its tools", func() error {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		listed = listed[:0]
		for _, tl := range res.Tools {
			listed = append(listed, tl.Name)
		}
		sort.Strings(listed)
		if !slices.Equal(listed, want) {
			return fmt.Errorf("offered %v, want %v", listed, want)
		}
		return nil
	})
	echo := toolname.LocalName("alpha", mcpserver.ToolEcho)
	out, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: echo, Arguments: map[string]any{"text": "after the upgrade"}})
	if err != nil || out.IsError || text(out) != "after the upgrade" {
		t.Errorf("calling %s: %v %+v", echo, err, out)
	}
	above := toolname.LocalName("vault", mcpserver.ToolEcho)
	out, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: above, Arguments: map[string]any{"text": "x"}})
	if err != nil || !out.IsError || !strings.Contains(text(out), "ceiling") {
		t.Errorf("calling %s above the policy's ceiling: %v %q, want a refusal naming the ceiling", above, err, text(out))
	}
	if n := s.vault.Calls(mcpserver.ToolEcho); n != 0 {
		t.Errorf("a call above the ceiling reached vault %d times", n)
	}

	// gated's calls needed a person's approval under v0.1.0 (asked within
	// the session) and still do: the call waits in an McpCallApproval and
	// does not reach the server.
	gated := toolname.LocalName("gated", mcpserver.ToolEcho)
	out, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: gated, Arguments: map[string]any{"text": "x"}})
	if err != nil || !out.IsError {
		t.Errorf("calling %s, which needs approval: %v %q, want the call held", gated, err, text(out))
	}
	if n := s.gated.Calls(mcpserver.ToolEcho); n != 0 {
		t.Errorf("a call that needs approval reached gated %d times", n)
	}
	var approvals mcpv1alpha1.McpCallApprovalList
	if err := s.c.List(ctx, &approvals, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(approvals.Items) != 1 || approvals.Items[0].Spec.LocalName != gated {
		t.Errorf("McpCallApprovals %+v, want one for the call of %s", approvals.Items, gated)
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkRolledBack checks what helm rollback did to the API: the four
// v0.1.0 CRDs are v0.1.0's again, and the later ones stay, with their
// objects, because the chart marks its CRDs to be kept
// (helm.sh/resource-policy: keep).
func (s *suite) checkRolledBack(t *testing.T) {
	t.Helper()
	s.checkCRDs(t, currentKinds(t))
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Name: "mcptools.mcp.catalog.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties
	if _, ok := status["enabledDefinitionHash"]; !ok {
		t.Errorf("after helm rollback the McpTool CRD has no status.enabledDefinitionHash: it is not v0.1.0's")
	}
	if _, ok := status["approvedDefinition"]; ok {
		t.Errorf("after helm rollback the McpTool CRD still has status.approvedDefinition: it is not v0.1.0's")
	}
	if err := s.c.Get(context.Background(), client.ObjectKey{Name: "mcpsharedservers.mcp.catalog.dev"}, crd); apierrors.IsNotFound(err) {
		t.Errorf("helm rollback deleted the McpSharedServer CRD")
	}
	s.approvalKept(t, "after the rollback")
}

// approvalKept checks the call approval the current gateway created is
// still there.
func (s *suite) approvalKept(t *testing.T, when string) {
	t.Helper()
	var approvals mcpv1alpha1.McpCallApprovalList
	if err := s.c.List(context.Background(), &approvals, client.InNamespace(ns)); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if len(approvals.Items) != 1 {
		t.Errorf("%s there are %d McpCallApprovals, want the one the gateway created", when, len(approvals.Items))
	}
}

// awaitV010 waits until v0.1.0's controllers, back after the rollback,
// have reconciled every enabled tool: they mark each with
// status.enabledDefinitionHash, which the current controllers do not
// keep.
func (s *suite) awaitV010(t *testing.T, p *proc) {
	t.Helper()
	for _, d := range decisions {
		if !d.enabled {
			continue
		}
		until(t, p, fmt.Sprintf("v0.1.0 reconciles %s/%s after the rollback", d.server, d.remote), func() error {
			tl := s.tool(t, d.server, d.remote)
			if str(*tl, "status", "enabledDefinitionHash") == "" {
				return fmt.Errorf("no status.enabledDefinitionHash yet")
			}
			return nil
		})
	}
}
