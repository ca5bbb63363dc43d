// Package e2e runs the operator the way a cluster runs it, and checks the
// outcome from outside.
//
// The real binaries are built from this tree. A local control plane
// (envtest: kube-apiserver and etcd, with RBAC enforced) gets the Helm
// chart's CRDs, ServiceAccount and RBAC, rendered by `helm template`; the
// manager then runs as a separate process authenticated as the chart's
// ServiceAccount with a TokenRequest token, so a permission the chart
// forgot shows up as an outcome that never happens (and as "forbidden" in
// the manager's log). Upstream MCP servers are in-process servers written
// with the official go-sdk and mcp-go (test/mcpserver); the agent calling
// the gateway uses the go-sdk client.
//
// The test needs KUBEBUILDER_ASSETS and HELM; `make test` sets both.
package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testproc"
)

const (
	// ns holds the small servers, the agent and its policy.
	ns = "e2e"
	// bulkNS holds the large catalog the manager is killed in the middle of.
	bulkNS = "e2e-bulk"
	// leaseName is the manager's leader-election lease
	// (internal/manager.LeaderElectionID), written out so that renaming it,
	// which breaks upgrades with two leaders, fails a test.
	leaseName = "mcp-catalog-operator.mcp.catalog.dev"
	// gatewayAudience is the audience the chart and docs tell agents to
	// request; written out for the same reason.
	gatewayAudience = "mcp-catalog-gateway"
	// bulkTools is the size of the large catalog, with a small page size,
	// so that applying it takes seconds and the kill lands in the middle.
	bulkTools    = 3000
	bulkPageSize = 50
)

// suite is the state the steps share.
type suite struct {
	cfg       *rest.Config
	admin     client.Client
	clientset kubernetes.Interface
	chart     installedChart
	bins      binaries
	mc        managerConfig
	// adminKubeconfig is what kubectl-mcp runs with: a cluster
	// administrator, as a platform engineer would.
	adminKubeconfig string
	managerToken    string
	managers        []*managerProc
	// secret is the upstream bearer token of McpServer alpha: it must reach
	// the upstream and appear nowhere else.
	secret               string
	alpha, vault, bulk   *mcpserver.Server
	cliOutputs           []string
	firstHolder          string
	metricsBody          string
	gatewayOK, gatewayNo string // result texts of the gateway calls
	// root is TestEndToEnd's own t, which the steps' resources live on.
	root *testing.T
}

// outlive is a step's t whose cleanups run when the whole test ends: a
// server or manager one step starts serves the steps after it.
type outlive struct {
	*testing.T
	root *testing.T
}

func (o outlive) Cleanup(f func()) { o.root.Cleanup(f) }

func (s *suite) outlive(t *testing.T) outlive { return outlive{T: t, root: s.root} }

func (s *suite) manager() *managerProc { return s.managers[len(s.managers)-1] }

// step logs the start of a phase, so a failure's place in the story and
// each phase's duration are visible in -v output.
func step(t *testing.T, start time.Time, name string) {
	t.Helper()
	t.Logf("=== %s (at %s)", name, time.Since(start).Round(100*time.Millisecond))
}

func TestEndToEnd(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "$(hack/envtest.sh)")
	helm := requireEnv(t, "HELM", "$(hack/helm.sh)")
	start := time.Now()
	work := t.TempDir()

	// The build takes most of the time; the control plane starts meanwhile.
	build := startBuild(t, filepath.Join(work, "bin"))

	s := &suite{secret: randomSecret(t), root: t}
	// Registered before anything starts, so it runs after every manager
	// was killed, and also when a step failed: a refused permission is
	// then usually the reason, and this says which.
	t.Cleanup(func() { s.nothingForbidden(t) })
	s.cfg = startControlPlane(t)
	var err error
	if s.admin, err = client.New(s.cfg, client.Options{Scheme: newScheme()}); err != nil {
		t.Fatal(err)
	}
	if s.clientset, err = kubernetes.NewForConfig(s.cfg); err != nil {
		t.Fatal(err)
	}

	// Each step builds on the ones before it, so the story stops at the
	// first step that fails and names it.
	run := func(name string, f func(t *testing.T)) {
		t.Helper()
		step(t, start, name)
		if !t.Run(name, f) {
			t.Fatalf("step %q failed; the steps after it were not run", name)
		}
	}
	run("the chart's CRDs and RBAC install", func(t *testing.T) {
		s.chart = installChart(t, s.cfg, s.admin, renderChart(t, helm))
		s.managerToken = tokenFor(t, s.clientset, releaseNS, s.chart.serviceAccount)
		s.mc = managerConfig{kubeconfig: filepath.Join(work, "manager.kubeconfig"), auditLog: filepath.Join(work, "audit.jsonl"), dir: work}
		testproc.WriteKubeconfig(t, s.mc.kubeconfig, s.cfg, s.managerToken)
		s.adminKubeconfig = filepath.Join(work, "admin.kubeconfig")
		testproc.WriteKubeconfig(t, s.adminKubeconfig, s.cfg, "")
		createNamespace(t, s.admin, ns)
		createNamespace(t, s.admin, bulkNS)
	})

	s.bins = build()
	s.mc.binary = s.bins.manager

	run("the manager leads as the chart's ServiceAccount", s.startManager)
	run("servers are imported and probed", s.importAndProbe)
	run("kubectl-mcp import --all exits 0, or 1 when one server refuses", s.importAll)
	run("the chart's ServiceAccount gets Secrets by name and never lists or watches them", s.secretAccess)
	run("a SIGKILLed import converges after a restart", s.killDuringImport)
	run("an agent calls a tool through the gateway and the ceiling refuses another", s.gatewayCall)
	run("metrics are served to the metrics reader only", s.scrapeMetrics)
	run("the upstream credential appears nowhere the operator writes", s.noLeaks)
	step(t, start, "done")
}

func randomSecret(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "e2eUpstream" + hex.EncodeToString(b)
}

// startManager starts a run of the manager and waits until it is healthy
// and holds the lease. A run after the first must take the lease over from
// the previous holder, which proves the new process leads.
func (s *suite) startManager(t *testing.T) {
	t.Helper()
	m := startManager(s.outlive(t), s.mc, len(s.managers)+1)
	s.managers = append(s.managers, m)
	m.waitHealthy(t)
	previous := s.firstHolder
	var holder string
	// A killed leader's lease expires after its duration (15s) before the
	// next run can take it.
	eventually(t, 60*time.Second, "the manager holds the leader-election lease in "+releaseNS, m.alive, func() error {
		l := &coordinationv1.Lease{}
		if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: releaseNS, Name: leaseName}, l); err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || *l.Spec.HolderIdentity == previous {
			return fmt.Errorf("lease held by %q", ptr.Deref(l.Spec.HolderIdentity, ""))
		}
		holder = *l.Spec.HolderIdentity
		return nil
	})
	if s.firstHolder == "" {
		s.firstHolder = holder
	}
	t.Logf("manager run %d leads as %s", len(s.managers), holder)
}

// importAndProbe declares two servers and checks their catalogs were
// imported and that an explicit probe reaches them.
func (s *suite) importAndProbe(t *testing.T) {
	ctx := context.Background()
	s.alpha = mcpserver.Start(s.outlive(t), mcpserver.Options{Name: "e2e-alpha", Tools: 3, RequireBearer: s.secret})
	// vault is served by the other library, and is Confidential: above
	// the agent's ceiling later on.
	s.vault = mcpserver.Start(s.outlive(t), mcpserver.Options{Flavor: mcpserver.MCPGo, Name: "e2e-vault"})
	mustCreate(t, s.admin,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha-token", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}}, Data: map[string][]byte{"token": []byte(s.secret)}},
		&mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha"}, Spec: mcpv1alpha1.McpServerSpec{
			URL: s.alpha.URL, DataClass: mcpv1alpha1.DataClassInternal, ApprovalRequired: ptr.To(false),
			AllowCredentialOverHTTP: true,
			Auth: &mcpv1alpha1.McpServerAuth{Bearer: &mcpv1alpha1.BearerAuth{
				SecretRef: mcpv1alpha1.SecretKeySelector{Name: "alpha-token", Key: "token"},
			}},
		}},
		&mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"}, Spec: mcpv1alpha1.McpServerSpec{
			URL: s.vault.URL, DataClass: mcpv1alpha1.DataClassConfidential, ApprovalRequired: ptr.To(false),
		}},
	)
	alpha := s.waitCatalog(t, ns, "alpha", s.alpha.ToolNames())
	s.waitCatalog(t, ns, "vault", s.vault.ToolNames())

	// The import was a contact: it records reachability and what the
	// server said about itself.
	if c := meta.FindStatusCondition(alpha.Status.Conditions, mcpv1alpha1.ConditionReachable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("alpha Reachable = %+v, want True", c)
	}
	if c := meta.FindStatusCondition(alpha.Status.Conditions, mcpv1alpha1.ConditionCredentialsResolved); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("alpha CredentialsResolved = %+v, want True", c)
	}
	if alpha.Status.LastContactTime == nil || alpha.Status.ServerInfo == nil || alpha.Status.ServerInfo.Name != "e2e-alpha" {
		t.Errorf("alpha lastContactTime %v, serverInfo %+v: want both, name e2e-alpha", alpha.Status.LastContactTime, alpha.Status.ServerInfo)
	}
	// The Secret's value reached the upstream, and only as the bearer
	// token: the leak check at the end is not vacuous.
	if st := s.alpha.Stats(); st.LastCredential != "Bearer "+s.secret || st.Rejected != 0 {
		t.Errorf("alpha upstream saw credential %q with %d rejections; want the Secret's token and none", st.LastCredential, st.Rejected)
	}

	// An explicit probe: kubectl-mcp test asks for one and waits for it.
	before := s.alpha.Requests()
	res := s.cli(t, "test", "alpha", "vault", "-n", ns, "-o", "json")
	if res.code != 0 {
		t.Fatalf("kubectl-mcp test alpha vault: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, r := range decodeResults(t, res.stdout) {
		if r.Result != "Succeeded" || r.Latency == "" {
			t.Errorf("kubectl-mcp test: %s = %+v, want Succeeded with a latency", r.Metadata.Name, r)
		}
	}
	if s.alpha.Requests() <= before {
		t.Errorf("kubectl-mcp test succeeded but alpha's upstream received no request")
	}
	srv := &mcpv1alpha1.McpServer{}
	if err := s.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "alpha"}, srv); err != nil {
		t.Fatal(err)
	}
	if srv.Status.LastHandledProbeAt == "" || srv.Status.LastContactTime == nil || srv.Status.LastContactLatency == nil ||
		!meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReachable) {
		t.Errorf("after the probe alpha's status is %+v; want Reachable True, the probe handled, contact time and latency", srv.Status)
	}
}

// waitCatalog waits until the server's catalog is imported for its current
// generation and checks the McpTools match what the upstream offers.
func (s *suite) waitCatalog(t *testing.T, namespace, name string, offered []string) *mcpv1alpha1.McpServer {
	t.Helper()
	srv := &mcpv1alpha1.McpServer{}
	eventually(t, 60*time.Second, "McpServer "+namespace+"/"+name+" CatalogSynced", s.manager().alive, func() error {
		if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, srv); err != nil {
			return err
		}
		c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != srv.Generation {
			return fmt.Errorf("CatalogSynced = %+v", c)
		}
		if srv.Status.Tools == nil || int(srv.Status.Tools.Imported) != len(offered) {
			return fmt.Errorf("status.tools = %+v, want %d imported", srv.Status.Tools, len(offered))
		}
		return nil
	})
	s.checkTools(t, srv, offered)
	return srv
}

// checkTools checks the McpTools of a server: one per offered tool, named
// by the naming rule, with no owner (the garbage collector must never take
// a tool with its server) and an imported definition.
func (s *suite) checkTools(t *testing.T, srv *mcpv1alpha1.McpServer, offered []string) {
	t.Helper()
	var list mcpv1alpha1.McpToolList
	if err := s.admin.List(context.Background(), &list, client.InNamespace(srv.Namespace), client.MatchingLabels{mcpv1alpha1.LabelServer: srv.Name}); err != nil {
		t.Fatal(err)
	}
	var remote []string
	bad := 0
	for i := range list.Items {
		tl := &list.Items[i]
		remote = append(remote, tl.Spec.RemoteName)
		want, err := toolname.ObjectName(srv.Name, tl.Spec.RemoteName)
		owners := tl.OwnerReferences
		if err != nil || tl.Name != want || len(owners) != 0 || tl.Status.DefinitionHash == "" ||
			!meta.IsStatusConditionTrue(tl.Status.Conditions, mcpv1alpha1.ConditionImported) {
			if bad++; bad <= 5 {
				t.Errorf("McpTool %s/%s: name want %q, owners %+v, definitionHash %q, conditions %+v", tl.Namespace, tl.Name, want, owners, tl.Status.DefinitionHash, tl.Status.Conditions)
			}
		}
	}
	sort.Strings(remote)
	if !slices.Equal(remote, offered) {
		if len(remote) != len(offered) {
			t.Fatalf("%d McpTools of %s, want %d (one per offered tool)", len(remote), srv.Name, len(offered))
		}
		t.Fatalf("McpTools of %s are for %v, want %v", srv.Name, remote, offered)
	}
	if bad > 0 {
		t.Fatalf("%d of %d McpTools of %s are not fully imported", bad, len(list.Items), srv.Name)
	}
}

// requestResult is one item of kubectl-mcp import/test -o json: an
// ImportResult or TestResult named after its McpServer.
type requestResult struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Result  string `json:"result"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Tools   *int32 `json:"tools"`
	Latency string `json:"latency"`
}

func decodeResults(t *testing.T, out string) map[string]requestResult {
	t.Helper()
	var list struct {
		Kind  string          `json:"kind"`
		Items []requestResult `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" {
		t.Fatalf("kubectl-mcp -o json printed no List: %v\n%s", err, out)
	}
	m := map[string]requestResult{}
	for _, r := range list.Items {
		m[r.Metadata.Name] = r
	}
	return m
}

func (s *suite) cli(t *testing.T, args ...string) cliResult {
	t.Helper()
	res := runCLI(t, s.bins.kubectlMCP, s.adminKubeconfig, args...)
	s.cliOutputs = append(s.cliOutputs, res.stdout, res.stderr)
	return res
}

// importAll checks kubectl-mcp import --all: exit 0 when every server
// imports, exit 1 when one refuses, and the others still import then.
func (s *suite) importAll(t *testing.T) {
	lists := func() int { return s.alpha.Stats().Methods["tools/list"] }
	before := lists()
	res := s.cli(t, "import", "--all", "-n", ns, "-o", "json", "--timeout", "60s")
	if res.code != 0 {
		t.Fatalf("kubectl-mcp import --all with every server good: exit %d, want 0\n%s%s", res.code, res.stdout, res.stderr)
	}
	got := decodeResults(t, res.stdout)
	s.expectImported(t, got, "alpha", len(s.alpha.ToolNames()))
	s.expectImported(t, got, "vault", len(s.vault.ToolNames()))
	if len(got) != 2 {
		t.Errorf("import --all acted on %d servers, want 2: %+v", len(got), got)
	}
	if lists() <= before {
		t.Errorf("import --all reported success, but alpha's upstream was not asked for its tools again")
	}

	// A server on a port nothing listens on refuses every connection.
	closed := testproc.FreeAddr(t)
	mustCreate(t, s.admin, &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}, Spec: mcpv1alpha1.McpServerSpec{
		URL: "http://" + closed + "/mcp", DataClass: mcpv1alpha1.DataClassPublic,
	}})
	before = lists()
	res = s.cli(t, "import", "--all", "-n", ns, "-o", "json", "--timeout", "60s")
	if res.code != 1 {
		t.Fatalf("kubectl-mcp import --all with one server refusing: exit %d, want 1\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, "1 of 3 servers did not import") {
		t.Errorf("import --all stderr does not say which share failed:\n%s", res.stderr)
	}
	got = decodeResults(t, res.stdout)
	s.expectImported(t, got, "alpha", len(s.alpha.ToolNames()))
	s.expectImported(t, got, "vault", len(s.vault.ToolNames()))
	if b := got["broken"]; b.Result != "Failed" || b.Reason != mcpv1alpha1.ReasonUnreachable {
		t.Errorf("import --all: broken = %+v, want Failed with reason %s", b, mcpv1alpha1.ReasonUnreachable)
	}
	if lists() <= before {
		t.Errorf("the good server was not imported again next to the failing one")
	}
	n, err := s.countTools(ns, "broken")
	if err != nil || n != 0 {
		t.Errorf("broken has %d McpTools (%v), want none", n, err)
	}
}

func (s *suite) expectImported(t *testing.T, got map[string]requestResult, name string, tools int) {
	t.Helper()
	r, ok := got[name]
	if !ok || r.Result != "Succeeded" || r.Tools == nil || int(*r.Tools) != tools {
		t.Errorf("import --all: %s = %+v, want Succeeded with %d tools", name, r, tools)
	}
}

// countTools counts McpTools without reading them: a list of one item
// carries the number of the rest. With a server name, only that server's
// (a label-selected list has no remaining count, so it is read whole).
func (s *suite) countTools(namespace, server string) (int, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind("McpToolList"))
	opts := []client.ListOption{client.InNamespace(namespace)}
	if server != "" {
		opts = append(opts, client.MatchingLabels{mcpv1alpha1.LabelServer: server})
	} else {
		opts = append(opts, client.Limit(1))
	}
	if err := s.admin.List(context.Background(), l, opts...); err != nil {
		return 0, err
	}
	n := len(l.Items)
	if l.RemainingItemCount != nil {
		n += int(*l.RemainingItemCount)
	}
	return n, nil
}

// secretAccess checks, as the chart's ServiceAccount itself, that it may
// read a Secret by name but never list or watch them: credentials are read
// one at a time and never cached cluster-wide.
func (s *suite) secretAccess(t *testing.T) {
	ctx := context.Background()
	sa, err := kubernetes.NewForConfig(tokenConfig(s.cfg, s.managerToken))
	if err != nil {
		t.Fatal(err)
	}
	who, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + releaseNS + ":" + s.chart.serviceAccount; who.Status.UserInfo.Username != want {
		t.Fatalf("the manager's token is %q, want %q", who.Status.UserInfo.Username, want)
	}
	for _, c := range []struct {
		verb, namespace string
		allowed         bool
	}{
		{"get", ns, true},
		{"list", ns, false},
		{"list", "", false},
		{"watch", ns, false},
		{"watch", "", false},
	} {
		r, err := sa.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.namespace, Verb: c.verb, Resource: "secrets"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.allowed {
			t.Errorf("the chart's ServiceAccount may %s secrets in namespace %q: %t, want %t", c.verb, c.namespace, r.Status.Allowed, c.allowed)
		}
	}
}

// killDuringImport kills the manager with SIGKILL while it applies a large
// catalog, restarts it, and checks the catalog converges to exactly one
// complete McpTool per offered tool.
func (s *suite) killDuringImport(t *testing.T) {
	ctx := context.Background()
	s.bulk = mcpserver.Start(s.outlive(t), mcpserver.Options{Name: "e2e-bulk", Tools: bulkTools, PageSize: bulkPageSize, Stateless: true})
	offered := s.bulk.ToolNames()
	want := len(offered)
	mustCreate(t, s.admin, &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: bulkNS, Name: "bulk"}, Spec: mcpv1alpha1.McpServerSpec{
		URL: s.bulk.URL, DataClass: mcpv1alpha1.DataClassPublic,
		OperationTimeout: &metav1.Duration{Duration: time.Minute},
		Import:           mcpv1alpha1.ImportSettings{MaxTools: int32(want + 100), MaxPages: int32(want/bulkPageSize + 10)},
	}})

	m := s.manager()
	importStart := time.Now()
	var seen int
	// Checked often: the kill must land mid-apply.
	poll.UntilEvery(t, 90*time.Second, 50*time.Millisecond, fmt.Sprintf("a tenth of the %d McpTools applied", want), func() error {
		if err := m.alive(); err != nil {
			t.Fatal(err)
		}
		n, err := s.countTools(bulkNS, "")
		if err != nil {
			t.Fatal(err)
		}
		if n >= want {
			t.Fatalf("all %d McpTools were applied before the test could kill the manager; the catalog is too small to interrupt", n)
		}
		// Some, but well short of all: the kill lands mid-apply.
		if n < want/10 {
			return fmt.Errorf("only %d after %s", n, time.Since(importStart))
		}
		seen = n
		return nil
	})
	m.kill()
	atKill, err := s.countTools(bulkNS, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the manager %s into the import, with %d McpTools seen and %d present after the kill, of %d",
		time.Since(importStart).Round(100*time.Millisecond), seen, atKill, want)
	if atKill <= 0 || atKill >= want {
		t.Fatalf("%d of %d McpTools exist after the kill; the kill did not land mid-import", atKill, want)
	}
	srv := &mcpv1alpha1.McpServer{}
	if err := s.admin.Get(ctx, types.NamespacedName{Namespace: bulkNS, Name: "bulk"}, srv); err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced) {
		t.Fatalf("bulk says CatalogSynced True with %d of %d McpTools", atKill, want)
	}

	restart := time.Now()
	s.startManager(t)
	eventually(t, 3*time.Minute, "the large catalog converging after the restart", s.manager().alive, func() error {
		if err := s.admin.Get(ctx, types.NamespacedName{Namespace: bulkNS, Name: "bulk"}, srv); err != nil {
			return err
		}
		c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != srv.Generation {
			return fmt.Errorf("CatalogSynced = %+v", c)
		}
		if srv.Status.Tools == nil || int(srv.Status.Tools.Imported) != want || srv.Status.Tools.Skipped != 0 {
			return fmt.Errorf("status.tools = %+v, want %d imported and none skipped", srv.Status.Tools, want)
		}
		return nil
	})
	t.Logf("converged %s after the restart", time.Since(restart).Round(100*time.Millisecond))
	// No duplicates and nothing half-written: the tools created before the
	// kill whose status was never written have it now.
	s.checkTools(t, srv, offered)
	if n, err := s.countTools(bulkNS, ""); err != nil || n != want {
		t.Fatalf("%d McpTools in %s (%v), want exactly %d", n, bulkNS, err, want)
	}
}

// gatewayCall has an agent call an enabled tool through the gateway with
// the official go-sdk client, and checks the ceiling refuses a tool above
// it without contacting its server.
func (s *suite) gatewayCall(t *testing.T) {
	ctx := context.Background()
	mustCreate(t, s.admin, agentObjects(ns)...)
	alphaEcho := objectName(t, "alpha", mcpserver.ToolEcho)
	vaultEcho := objectName(t, "vault", mcpserver.ToolEcho)
	res := s.cli(t, "enable", "alpha/"+mcpserver.ToolEcho, "vault/"+mcpserver.ToolEcho, "-n", ns)
	if res.code != 0 || !strings.Contains(res.stdout, "mcptool/"+alphaEcho+" enabled") || !strings.Contains(res.stdout, "mcptool/"+vaultEcho+" enabled") {
		t.Fatalf("kubectl-mcp enable: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	// Enabling approves nothing; a person approves the imported definition
	// by setting its hash, as kubectl patch does. The controllers may still be writing the tool's status after the
	// enable: a conflict is tried again on the object as it is now, as a
	// person would.
	for _, name := range []string{alphaEcho, vaultEcho} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			tl := &mcpv1alpha1.McpTool{}
			if err := s.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tl); err != nil {
				return err
			}
			patch := client.MergeFromWithOptions(tl.DeepCopy(), client.MergeFromWithOptimisticLock{})
			tl.Spec.ApprovedDefinitionHash = tl.Status.DefinitionHash
			return s.admin.Patch(ctx, tl, patch, client.FieldOwner("kubectl-patch"))
		})
		if err != nil {
			t.Fatalf("approving %s: %v", name, err)
		}
	}
	for _, name := range []string{alphaEcho, vaultEcho} {
		eventually(t, 60*time.Second, "McpTool "+name+" Ready", s.manager().alive, func() error {
			tl := &mcpv1alpha1.McpTool{}
			if err := s.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tl); err != nil {
				return err
			}
			c := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != tl.Generation {
				return fmt.Errorf("Ready = %+v", c)
			}
			return nil
		})
	}

	endpoint := "http://" + s.manager().gateway + "/mcp"
	// Tokens the gateway must refuse: none, and one for the API server's
	// audience instead of the gateway's.
	for name, token := range map[string]string{"no token": "", "a token for another audience": tokenFor(t, s.clientset, ns, "agent")} {
		if cs, err := connect(endpoint, token); err == nil {
			_ = cs.Close()
			t.Errorf("the gateway accepted a session with %s", name)
		}
	}

	cs, err := connect(endpoint, tokenFor(t, s.clientset, ns, "agent", gatewayAudience))
	if err != nil {
		t.Fatalf("connecting to the gateway as the agent: %v\nthe manager's log ends with:\n%s", err, tail(s.manager().logPath, 20))
	}
	defer cs.Close()
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	listed, err := cs.ListTools(callCtx, nil)
	if err != nil {
		t.Fatalf("tools/list through the gateway: %v", err)
	}
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	alphaLocal, vaultLocal := toolname.LocalName("alpha", mcpserver.ToolEcho), toolname.LocalName("vault", mcpserver.ToolEcho)
	// Only the enabled tool within the ceiling: vault's is Confidential,
	// and alpha's other tools are disabled.
	if !slices.Equal(names, []string{alphaLocal}) {
		t.Errorf("the gateway offers the agent %v, want only %s", names, alphaLocal)
	}

	before := s.alpha.Calls(mcpserver.ToolEcho)
	const msg = "hello from the e2e agent"
	out, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: alphaLocal, Arguments: map[string]any{"text": msg}})
	if err != nil {
		t.Fatalf("calling %s through the gateway: %v", alphaLocal, err)
	}
	s.gatewayOK = text(out)
	if out.IsError || s.gatewayOK != msg {
		t.Errorf("the call returned isError=%t %q, want %q", out.IsError, s.gatewayOK, msg)
	}
	if got := s.alpha.Calls(mcpserver.ToolEcho); got != before+1 {
		t.Errorf("alpha's echo ran %d times for one gateway call", got-before)
	}

	out, err = cs.CallTool(callCtx, &sdk.CallToolParams{Name: vaultLocal, Arguments: map[string]any{"text": msg}})
	if err != nil {
		t.Fatalf("calling %s through the gateway: %v", vaultLocal, err)
	}
	s.gatewayNo = text(out)
	if !out.IsError || !strings.Contains(s.gatewayNo, "ceiling") {
		t.Errorf("a call above the ceiling returned isError=%t %q, want a refusal naming the ceiling", out.IsError, s.gatewayNo)
	}
	if n := s.vault.Calls(mcpserver.ToolEcho); n != 0 {
		t.Errorf("a call above the ceiling reached vault's upstream %d times", n)
	}

	// Both calls are in the audit trail, with their decisions.
	audit := s.auditRecords(t)
	if !slices.ContainsFunc(audit, func(r map[string]any) bool {
		return r["tool"] == alphaEcho && r["phase"] == "after" && r["outcome"] == "Succeeded" && r["caller"] == "system:serviceaccount:"+ns+":agent"
	}) {
		t.Errorf("no audit record of the agent's successful call of %s in:\n%v", alphaEcho, audit)
	}
	if !slices.ContainsFunc(audit, func(r map[string]any) bool {
		return r["tool"] == vaultEcho && r["decision"] == "Denied" && r["reason"] == "AboveDataClassCeiling"
	}) {
		t.Errorf("no audit record of the refused call of %s in:\n%v", vaultEcho, audit)
	}
}

func objectName(t *testing.T, server, remote string) string {
	t.Helper()
	n, err := toolname.ObjectName(server, remote)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bearer adds a token to every request, as an agent's HTTP client would.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(endpoint, token string) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e-agent", Version: "1"}, nil)
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
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

func (s *suite) auditRecords(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(s.mc.auditLog)
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("an audit line is not one JSON object: %v: %s", err, line)
		}
		out = append(out, r)
	}
	return out
}

// operatorMetrics are the metrics internal/metrics registers.
var operatorMetrics = []string{
	"mcp_catalog_gateway_calls_total",
	"mcp_catalog_probe_duration_seconds",
	"mcp_catalog_probe_failures_total",
	"mcp_catalog_import_duration_seconds",
	"mcp_catalog_import_failures_total",
	"mcp_catalog_tools",
}

// scrapeMetrics scrapes the secure metrics endpoint as a scraper bound to
// the chart's metrics-reader ClusterRole, and checks who is turned away.
func (s *suite) scrapeMetrics(t *testing.T) {
	mustCreate(t, s.admin,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: "e2e-scraper"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-scraper"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: s.chart.metricsReader},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: releaseNS, Name: "e2e-scraper"}}},
	)
	url := "https://" + s.manager().metrics + "/metrics"
	scraper := tokenFor(t, s.clientset, releaseNS, "e2e-scraper")
	// A valid token of a ServiceAccount without the metrics-reader role.
	outsider := tokenFor(t, s.clientset, ns, "agent")

	if code, _ := scrape(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without a token: %d, want 401", code)
	}
	if code, _ := scrape(t, url, outsider); code != http.StatusForbidden {
		t.Errorf("GET /metrics as a ServiceAccount without the metrics-reader role: %d, want 403", code)
	}
	code, body := scrape(t, url, scraper)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as the metrics reader: %d, want 200\n%s", code, body)
	}
	s.metricsBody = body
	samples := metricSamples(body)
	for key, want := range map[string]float64{
		`mcp_catalog_gateway_calls_total{outcome="Succeeded",reason=""}`:                   1,
		`mcp_catalog_gateway_calls_total{outcome="Denied",reason="AboveDataClassCeiling"}`: 1,
	} {
		if got, ok := sumSamples(samples, key); !ok || got != want {
			t.Errorf("%s = %v (present %t), want %v", key, got, ok, want)
		}
	}
	// The controllers' own metrics come from the same registry: the
	// endpoint serves this manager, not an empty registry.
	if _, ok := samples[`controller_runtime_reconcile_total{controller="mcpserver",result="success"}`]; !ok {
		t.Errorf("no controller_runtime_reconcile_total for the mcpserver controller")
	}
	var missing []string
	for _, name := range operatorMetrics {
		if !strings.Contains(body, "\n# TYPE "+name+" ") {
			missing = append(missing, name)
		}
	}
	// By now every kind of event behind them has happened: imports and
	// probes that succeeded, a server that refused (broken), gateway calls.
	if len(missing) > 0 {
		t.Errorf("operator metrics not served: %s", strings.Join(missing, ", "))
	}
	if _, ok := samples[`mcp_catalog_import_failures_total{reason="Unreachable"}`]; !ok {
		t.Errorf("the refused import of broken is not counted in mcp_catalog_import_failures_total")
	}
}

func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	// The endpoint's certificate is self-signed, generated at start.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// metricSamples parses the Prometheus text format: each sample line is
// keyed by its name and labels as exposed.
// sumSamples adds up the samples of the series that selector (a metric
// name and label pairs, as the text format writes them) selects, whatever
// their other labels.
func sumSamples(samples map[string]float64, selector string) (float64, bool) {
	name, labels, _ := strings.Cut(strings.TrimSuffix(selector, "}"), "{")
	var want []string
	if labels != "" {
		want = strings.Split(labels, ",")
	}
	var sum float64
	found := false
	for key, v := range samples {
		n, l, _ := strings.Cut(strings.TrimSuffix(key, "}"), "{")
		if n != name {
			continue
		}
		have := strings.Split(l, ",")
		all := true
		for _, w := range want {
			all = all && slices.Contains(have, w)
		}
		if all {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

func metricSamples(body string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// noLeaks searches everything the operator wrote or served for the
// upstream credential, raw and base64-encoded (as a Secret's data is).
func (s *suite) noLeaks(t *testing.T) {
	ctx := context.Background()
	places := map[string]string{"metrics": s.metricsBody, "kubectl-mcp output": strings.Join(s.cliOutputs, "\n"),
		"gateway results": s.gatewayOK + "\n" + s.gatewayNo}
	for i, m := range s.managers {
		b, err := os.ReadFile(m.logPath)
		if err != nil {
			t.Fatal(err)
		}
		places["log of manager run "+strconv.Itoa(i+1)] = string(b)
	}
	b, err := os.ReadFile(s.mc.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	places["audit log"] = string(b)

	var servers mcpv1alpha1.McpServerList
	var tools mcpv1alpha1.McpToolList
	var events corev1.EventList
	var newEvents eventsv1.EventList
	for _, l := range []client.ObjectList{&servers, &tools, &events, &newEvents} {
		if err := s.admin.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		places[jsonKind(l)] = string(j)
	}
	// The Events are there to search: the import of alpha was reported.
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Name == "alpha" && e.InvolvedObject.Namespace == ns && e.Reason == "ImportSucceeded"
	}) {
		t.Errorf("no ImportSucceeded Event for McpServer %s/alpha among %d Events", ns, len(events.Items))
	}

	forms := []string{s.secret, base64.StdEncoding.EncodeToString([]byte(s.secret))}
	for where, text := range places {
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("the upstream credential of McpServer alpha appears in the %s", where)
			}
		}
	}
}

func jsonKind(l client.ObjectList) string {
	switch l.(type) {
	case *mcpv1alpha1.McpServerList:
		return "McpServer status"
	case *mcpv1alpha1.McpToolList:
		return "McpTool status"
	case *corev1.EventList:
		return "Events (core/v1)"
	default:
		return "Events (events.k8s.io/v1)"
	}
}

// nothingForbidden fails on any permission the API server refused the
// manager: a missing rule in the chart shows up here even when the outcome
// it breaks was not asserted. It matches the API server's refusal
// (`... is forbidden: User "..." cannot ...`), not the word alone: the
// gateway's own denials (reason Forbidden, for an agent without RBAC) are
// logged too, and are correct behaviour.
func (s *suite) nothingForbidden(t *testing.T) {
	for i, m := range s.managers {
		b, err := os.ReadFile(m.logPath)
		if err != nil {
			t.Fatal(err)
		}
		var hits []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `forbidden: User \"`) || strings.Contains(line, `forbidden: User "`) {
				hits = append(hits, line)
			}
		}
		if len(hits) > 0 {
			if len(hits) > 5 {
				hits = append(hits[:5], "...")
			}
			t.Errorf("manager run %d was refused by the API server %d times, e.g.:\n%s", i+1, len(hits), strings.Join(hits, "\n"))
		}
	}
}
