package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/manifests"
	"github.com/mcp-catalog/operator/test/testproc"
)

// TestMakeRunDemo runs what `make run` runs, cmd/devrun, where KUBECONFIG
// reaches no cluster: it must start a local control plane and write its
// kubeconfig, serve the demo MCP server the samples point at, import that
// server's catalog when the sample is applied, and answer an agent at its
// development gateway with the sample's tool once a person approved it.
func TestMakeRunDemo(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "the local control plane")
	dir := t.TempDir()
	devrun := filepath.Join(dir, "devrun")
	build := exec.Command("go", "build", "-o", devrun, "./cmd/devrun")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/devrun: %v\n%s", err, out)
	}

	demo, gw, health := testproc.FreeAddr(t), testproc.FreeAddr(t), testproc.FreeAddr(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	logPath := filepath.Join(dir, "devrun.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(devrun, "--write-kubeconfig", kubeconfig, "--demo-server-addr", demo,
		"--gateway-addr", gw, "--health-probe-bind-address", health)
	cmd.Dir = repoRoot
	// A KUBECONFIG that names no cluster: devrun must fall back to its own.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-such-kubeconfig"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Ctrl-C, as a person stops make run; it stops the control plane too.
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			t.Logf("devrun stopped: %v", err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Logf("devrun killed after 30 s: %v", <-exited)
		}
		_ = logFile.Close()
	})
	alive := func() error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("devrun exited (%w); its log ends with:\n%s", err, tail(logPath, 30))
		default:
			return nil
		}
	}

	var c client.Client
	var cs *kubernetes.Clientset
	eventually(t, 3*time.Minute, "the local control plane's kubeconfig", alive, func() error {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
		if _, err := cs.Discovery().ServerVersion(); err != nil {
			return err
		}
		c, err = client.New(cfg, client.Options{Scheme: scheme.New()})
		return err
	})
	ctx := context.Background()
	const ns = "default"

	// The demo sample, pointed at the port this run serves the demo on.
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "mcp_v1alpha1_mcpserver_demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode([]byte(strings.ReplaceAll(string(raw), "127.0.0.1:18080", demo)))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		o.SetNamespace(ns)
		eventually(t, time.Minute, "applying "+o.GetName(), alive, func() error { return client.IgnoreAlreadyExists(c.Create(ctx, o)) })
	}

	echo := objectName(t, "demo", "echo")
	tool := &mcpv1alpha1.McpTool{}
	eventually(t, 2*time.Minute, "the demo catalog imported", alive, func() error {
		srv := &mcpv1alpha1.McpServer{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo"}, srv); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReady) {
			return fmt.Errorf("McpServer demo not Ready: %+v", srv.Status.Conditions)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: echo}, tool); err != nil {
			return err
		}
		if tool.Status.DefinitionHash == "" {
			return errors.New("the sample's tool has no imported definition yet")
		}
		return nil
	})
	// The sample enables the tool from Git; a person approves what it does.
	patch := client.MergeFrom(tool.DeepCopy())
	tool.Spec.ApprovedDefinitionHash = tool.Status.DefinitionHash
	if err := c.Patch(ctx, tool, patch); err != nil {
		t.Fatalf("approving %s: %v", echo, err)
	}
	eventually(t, time.Minute, "the approved tool Ready", alive, func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: echo}, tool); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(tool.Status.Conditions, mcpv1alpha1.ConditionReady) {
			return fmt.Errorf("McpTool %s not Ready: %+v", echo, tool.Status.Conditions)
		}
		return nil
	})

	// An agent: a ServiceAccount allowed to call tools, within Internal.
	mustCreate(t, c, agentObjects(ns)...)
	token := tokenFor(t, cs, ns, "agent", gatewayAudience)
	want := toolname.LocalName("demo", "echo")
	eventually(t, time.Minute, "the development gateway offering "+want, alive, func() error {
		session, err := connect("http://"+gw+"/mcp", token)
		if err != nil {
			return err
		}
		defer session.Close()
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		listed, err := session.ListTools(lctx, nil)
		if err != nil {
			return err
		}
		var names []string
		for _, tl := range listed.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, []string{want}) {
			return fmt.Errorf("the gateway offers %v, want only %s", names, want)
		}
		return nil
	})
}
