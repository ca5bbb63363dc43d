package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
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
	c   client.Client
	cfg *rest.Config
	ns  string
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
	// Several tests of this package each run a manager in this process.
	opts.SkipControllerNameValidation = true
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
	return &clusterEnv{c: c, cfg: cfg, ns: ns.Name}
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

	t.Run("approve takes only the definition the person reviewed", func(t *testing.T) {
		if code, _, errOut := e.run(t, "enable", "good/image_and_text"); code != ExitOK {
			t.Fatalf("enable: %s", errOut)
		}
		reviewed := e.tool(t, "good.image-and-text")
		// Enabling approves nothing; a person approves the definition first.
		if code, _, errOut := e.run(t, "approve", "good.image-and-text", "--hash", reviewed.Status.DefinitionHash); code != ExitOK {
			t.Fatalf("approve the first definition: %s", errOut)
		}
		if err := up.SetToolDescription("image_and_text", "a changed description"); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := e.run(t, "import", "good"); code != ExitOK {
			t.Fatalf("import: %s", errOut)
		}
		tool := e.tool(t, "good.image-and-text")
		if tool.Status.DefinitionHash == reviewed.Status.DefinitionHash {
			t.Fatalf("the import did not change the definition")
		}

		// Without --hash nothing is approved; the review shows the change,
		// the current definition and the hash to pass.
		code, out, _ := e.run(t, "approve", "good.image-and-text")
		if code != ExitFailed {
			t.Errorf("approve without --hash: exit %d, want %d", code, ExitFailed)
		}
		for _, want := range []string{"CHANGED", "a changed description", "--hash " + tool.Status.DefinitionHash, reviewed.Status.DefinitionHash} {
			if !strings.Contains(out, want) {
				t.Errorf("the review does not show %q:\n%s", want, out)
			}
		}
		if got := e.tool(t, "good.image-and-text").Spec.ApprovedDefinitionHash; got != reviewed.Status.DefinitionHash {
			t.Fatalf("approve without --hash changed the approval to %q", got)
		}

		// The hash reviewed before the change is refused.
		code, _, errOut := e.run(t, "approve", "good.image-and-text", "--hash", reviewed.Status.DefinitionHash)
		if code != ExitFailed || !strings.Contains(errOut, "changed since it was reviewed") {
			t.Errorf("approve of a stale hash: exit %d, stderr %s", code, errOut)
		}
		if got := e.tool(t, "good.image-and-text").Spec.ApprovedDefinitionHash; got != reviewed.Status.DefinitionHash {
			t.Fatalf("a refused approval changed the approval to %q", got)
		}
		if code, _, errOut := e.run(t, "approve", "good.image-and-text", "--hash", "sha256:abc"); code != ExitUsage {
			t.Errorf("a malformed hash: exit %d, stderr %s", code, errOut)
		}

		// The hash diff shows is approved.
		code, out, errOut = e.run(t, "diff", "good.image-and-text", "-o", "json")
		var r review
		if code != ExitOK || json.Unmarshal([]byte(out), &r) != nil || !r.Changed || r.CurrentHash != tool.Status.DefinitionHash {
			t.Fatalf("diff: exit %d, out %s, err %s", code, out, errOut)
		}
		code, out, errOut = e.run(t, "approve", "good.image-and-text", "--hash", r.CurrentHash)
		if code != ExitOK || !strings.Contains(out, r.CurrentHash) {
			t.Fatalf("approve: exit %d, out %s, err %s", code, out, errOut)
		}
		tool = e.tool(t, "good.image-and-text")
		if tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash {
			t.Errorf("approved %q, current %q", tool.Spec.ApprovedDefinitionHash, tool.Status.DefinitionHash)
		}
		// Approving kept the enablement this plugin applied before, and
		// enabling again keeps the approval: one field manager, both fields.
		if !tool.Spec.Enabled {
			t.Error("approving turned the tool's enabled off")
		}
		if code, _, errOut := e.run(t, "enable", "good.image-and-text"); code != ExitOK {
			t.Fatalf("enable after approve: exit %d, %s", code, errOut)
		}
		if tool = e.tool(t, "good.image-and-text"); tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash || !tool.Spec.Enabled {
			t.Errorf("after enable: enabled %t, approved %q, current %q", tool.Spec.Enabled, tool.Spec.ApprovedDefinitionHash, tool.Status.DefinitionHash)
		}
		if code, out, _ := e.run(t, "diff", "good.image-and-text"); code != ExitOK || !strings.Contains(out, "is the approved one") {
			t.Errorf("diff after approval: exit %d, out %s", code, out)
		}
	})

	t.Run("an approval racing a new definition is refused by the API server", func(t *testing.T) {
		read := e.tool(t, "good.echo")
		reviewed := read.Status.DefinitionHash
		if err := up.SetToolDescription("echo", "echo, redefined between read and write"); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := e.run(t, "import", "good"); code != ExitOK {
			t.Fatalf("import: %s", errOut)
		}
		if e.tool(t, "good.echo").Status.DefinitionHash == reviewed {
			t.Fatalf("the import did not change the definition")
		}
		// The write made from the earlier read: its hash check passes on
		// that read, so only the precondition can stop it.
		err := approveIfCurrent(context.Background(), e.c, read, reviewed, false)
		if !errors.Is(err, errStale) {
			t.Fatalf("approve from a stale read: %v, want errStale", err)
		}
		if got := e.tool(t, "good.echo").Spec.ApprovedDefinitionHash; got != "" {
			t.Fatalf("the stale approval was written: %q", got)
		}
		// Retried on a fresh read, the hash check refuses it.
		err = approve(context.Background(), e.c, e.ns, "good.echo", reviewed, false)
		if !errors.Is(err, ErrDefinitionChanged) {
			t.Fatalf("approve after a fresh read: %v, want ErrDefinitionChanged", err)
		}
	})

	t.Run("tools shows the hash to approve", func(t *testing.T) {
		code, out, _ := e.run(t, "tools", "--mcp-server", "good", "-o", "json")
		var rows []toolRow
		if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil {
			t.Fatalf("tools: exit %d, out %s", code, out)
		}
		for _, r := range rows {
			if r.Name == "good.echo" && r.DefinitionHash != e.tool(t, "good.echo").Status.DefinitionHash {
				t.Errorf("tools shows %q for good.echo", r.DefinitionHash)
			}
		}
	})

	t.Run("strings from the server reach the terminal without control characters", func(t *testing.T) {
		// The importer refuses such definitions, so the status is written
		// here directly: the CLI must not rely on the importer for it.
		hostile := "safe\x1b[2J\x1b]0;pwned\a text\r\x1b[31mred\u202e\u009b1mend\x08"
		decl := mcpac.McpTool("good.hostile", e.ns).WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName("good")).WithRemoteName("hostile"))
		if err := e.c.Apply(context.Background(), decl, client.FieldOwner("argocd-controller")); err != nil {
			t.Fatal(err)
		}
		var tool mcpv1alpha1.McpTool
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "good.hostile"}, &tool); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(tool.DeepCopy())
		tool.Status.Description, tool.Status.Title = hostile, hostile
		tool.Status.DefinitionHash = "sha256:" + strings.Repeat("ab", 32)
		tool.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"q":{"type":"string","description":"\u001b[2Jwiped"}}}`)}
		if err := e.c.Status().Patch(context.Background(), &tool, patch); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"diff", "good.hostile"}, {"approve", "good.hostile"}} {
			_, out, _ := e.run(t, args...)
			if strings.ContainsAny(out, "\x1b\r\a\b\u202e\u009b") {
				t.Errorf("%s printed a control character: %q", args[0], out)
			}
			if !strings.Contains(out, "safe") || !strings.Contains(out, "red") || !strings.Contains(out, "wiped") {
				t.Errorf("%s lost the printable text: %q", args[0], out)
			}
		}
	})
}
