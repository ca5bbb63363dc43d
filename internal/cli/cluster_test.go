package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// clusterEnv is a control plane with the operator running, for the
// commands that talk to a cluster.
type clusterEnv struct {
	c  client.Client
	ns string
}

func startCluster(t *testing.T) *clusterEnv {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests through `make test`, which builds the control plane")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.AllowPrivateNetworks = "0", "0", true
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cli-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return &clusterEnv{c: c, ns: ns.Name}
}

func (e *clusterEnv) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) { return e.c, e.ns }}, args)
	return code, out.String(), errb.String()
}

func (e *clusterEnv) server(t *testing.T, name, url string) {
	t.Helper()
	s := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: mcpv1alpha1.McpServerSpec{
		URL: url, DataClass: mcpv1alpha1.DataClassInternal, AllowPrivateNetwork: true,
		OperationTimeout: &metav1.Duration{Duration: 3 * time.Second},
	}}
	if err := e.c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func (e *clusterEnv) tool(t *testing.T, name string) *mcpv1alpha1.McpTool {
	t.Helper()
	var tool mcpv1alpha1.McpTool
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &tool)
		if err == nil && tool.Status.DefinitionHash != "" {
			return &tool
		}
		if time.Now().After(deadline) {
			t.Fatalf("McpTool %s was not imported: %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestClusterCommands(t *testing.T) {
	e := startCluster(t)
	up := mcpserver.Start(t, mcpserver.Options{Tools: 3})
	e.server(t, "good", up.URL)
	// A port nobody listens on: the import is refused with Unreachable.
	e.server(t, "down", "http://127.0.0.1:1/mcp")
	e.tool(t, "good.echo")

	t.Run("import --all reports every server and fails when one refuses", func(t *testing.T) {
		before := up.Stats().Methods["tools/list"]
		code, out, errOut := e.run(t, "import", "--all", "-o", "json")
		if code != ExitFailed {
			t.Fatalf("exit %d, want %d (one server refuses); stderr %s", code, ExitFailed, errOut)
		}
		var rows []requestResult
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		got := map[string]requestResult{}
		for _, r := range rows {
			got[r.Name] = r
		}
		if r := got["good"]; r.Result != "Succeeded" || r.Tools == nil || *r.Tools != int32(3+len(mcpserver.BuiltinTools())) {
			t.Errorf("good: %+v", r)
		}
		if r := got["down"]; r.Result != "Failed" || r.Reason != mcpv1alpha1.ReasonUnreachable {
			t.Errorf("down: %+v", r)
		}
		if up.Stats().Methods["tools/list"] <= before {
			t.Errorf("the import request did not reach the server")
		}
	})

	t.Run("import NAME of a good server exits 0", func(t *testing.T) {
		code, out, errOut := e.run(t, "import", "good")
		if code != ExitOK || !strings.Contains(out, "Succeeded") {
			t.Errorf("exit %d, out %s, err %s", code, out, errOut)
		}
	})

	t.Run("import of a missing server fails without waiting", func(t *testing.T) {
		code, out, _ := e.run(t, "import", "nope", "--timeout", "5s")
		if code != ExitFailed || !strings.Contains(out, "no such McpServer") {
			t.Errorf("exit %d, out %s", code, out)
		}
	})

	t.Run("test probes now and prints the latency", func(t *testing.T) {
		code, out, errOut := e.run(t, "test", "good", "-o", "json")
		var rows []requestResult
		if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].Latency == "" {
			t.Errorf("exit %d, out %s, err %s", code, out, errOut)
		}
	})

	t.Run("enable, tools and disable", func(t *testing.T) {
		if code, out, errOut := e.run(t, "enable", "good/echo"); code != ExitOK || !strings.Contains(out, "good.echo enabled") {
			t.Fatalf("enable: exit %d, out %s, err %s", code, out, errOut)
		}
		if tool := e.tool(t, "good.echo"); !tool.Spec.Enabled {
			t.Fatalf("good.echo is not enabled")
		}
		code, out, _ := e.run(t, "tools", "--mcp-server", "good", "-o", "json")
		var rows []toolRow
		if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil {
			t.Fatalf("tools: exit %d, out %s", code, out)
		}
		enabled := 0
		for _, r := range rows {
			if r.Enabled {
				enabled++
				if r.Name != "good.echo" || r.LocalName != "mcp_good_echo" {
					t.Errorf("unexpected enabled row %+v", r)
				}
			}
		}
		if enabled != 1 || len(rows) != 3+len(mcpserver.BuiltinTools()) {
			t.Errorf("tools lists %d rows, %d enabled", len(rows), enabled)
		}
		if code, _, errOut := e.run(t, "disable", "good.echo"); code != ExitOK {
			t.Fatalf("disable: exit %d: %s", code, errOut)
		}
		if tool := e.tool(t, "good.echo"); tool.Spec.Enabled {
			t.Errorf("good.echo is still enabled")
		}
	})

	t.Run("a field Git owns is not taken without --force", func(t *testing.T) {
		gitops := mcpac.McpTool("good.fail", e.ns).WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName("good")).WithRemoteName("fail").WithEnabled(false))
		if err := e.c.Apply(context.Background(), gitops, client.FieldOwner("argocd-controller")); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := e.run(t, "enable", "good.fail")
		if code != ExitFailed || !strings.Contains(errOut, "another manager owns this field") {
			t.Fatalf("enable of a Git-owned field: exit %d, stderr %s", code, errOut)
		}
		if tool := e.tool(t, "good.fail"); tool.Spec.Enabled {
			t.Fatalf("the Git-owned field was changed")
		}
		if code, _, errOut := e.run(t, "enable", "good.fail", "--force"); code != ExitOK {
			t.Fatalf("enable --force: exit %d: %s", code, errOut)
		}
	})

	t.Run("approve accepts a changed definition", func(t *testing.T) {
		if code, _, errOut := e.run(t, "enable", "good/image_and_text"); code != ExitOK {
			t.Fatalf("enable: %s", errOut)
		}
		if err := up.SetToolDescription("image_and_text", "a changed description"); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := e.run(t, "import", "good"); code != ExitOK {
			t.Fatalf("import: %s", errOut)
		}
		tool := e.tool(t, "good.image-and-text")
		code, out, errOut := e.run(t, "approve", "good.image-and-text")
		if code != ExitOK || !strings.Contains(out, tool.Status.DefinitionHash) {
			t.Fatalf("approve: exit %d, out %s, err %s", code, out, errOut)
		}
		tool = e.tool(t, "good.image-and-text")
		if tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash {
			t.Errorf("approved %q, current %q", tool.Spec.ApprovedDefinitionHash, tool.Status.DefinitionHash)
		}
	})
}
