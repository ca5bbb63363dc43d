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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/cli"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/manifests"
	"github.com/mcp-catalog/operator/test/testproc"
)

// TestMakeRunDemo runs what `make run` runs, cmd/devrun, where KUBECONFIG
// reaches no cluster: it must start a local control plane and write its
// kubeconfig, serve the demo MCP server the samples point at, import that
// server's catalog when the samples are applied (each of which becomes
// Ready or says in one line why not), and answer the call it printed, as
// the demo agent it applied, once a person approved the tool and the call.
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

	// Every sample, as the run suggests applying them, the demo pointed at
	// the port this run serves it on.
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var samples []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifests.Decode([]byte(strings.ReplaceAll(string(raw), "127.0.0.1:18080", demo)))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, objs...)
	}
	for _, o := range samples {
		o.SetNamespace(ns)
		// Server-side, as kubectl apply --server-side: the importer may have
		// created an McpTool the samples declare.
		eventually(t, time.Minute, "applying "+o.GetName(), alive, func() error {
			return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kubectl"), client.ForceOwnership)
		})
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
	// Every sample of a kind of ours becomes Ready, or says why not in one
	// line.
	eventually(t, 2*time.Minute, "every sample Ready or saying why not", alive, func() error {
		for _, o := range samples {
			if o.GroupVersionKind().Group != mcpv1alpha1.GroupVersion.Group {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GroupVersionKind())
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.GetName()}, u); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			var ready map[string]any
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == mcpv1alpha1.ConditionReady {
					ready = m
				}
			}
			msg, _ := ready["message"].(string)
			switch {
			case ready == nil:
				return fmt.Errorf("%s %s has no Ready condition yet", o.GetKind(), o.GetName())
			case ready["status"] == "True":
			case ready["status"] != "False" || msg == "" || strings.ContainsAny(msg, "\n\r"):
				return fmt.Errorf("%s %s is not Ready and does not say why in one line: %v", o.GetKind(), o.GetName(), ready)
			}
		}
		return nil
	})

	// The sample enables the tool from Git; a person approves what it
	// does, with the name agents see.
	steps := e2eRun(t, c, ns, "approve", toolname.LocalName("demo", "echo"), "--hash", tool.Status.DefinitionHash)
	if steps.code != 0 {
		t.Fatalf("approve: %+v", steps)
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

	// The call the run printed, word for word, as the demo agent the run
	// applied: it waits for a person, who approves it; the same call again
	// is made.
	var call []string
	eventually(t, time.Minute, "the printed call", alive, func() error {
		for _, l := range strings.Split(tail(logPath, 200), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "kubectl mcp call "); ok {
				call = []string{"call"}
				for _, w := range strings.Fields(rest) {
					call = append(call, strings.TrimSuffix(strings.TrimPrefix(w, "'"), "'"))
				}
				return nil
			}
		}
		return errors.New("not printed yet")
	})
	if !slices.Contains(call, "http://"+gw+"/mcp") || !slices.Contains(call, filepath.Join(dir, "demo-agent.token")) {
		t.Fatalf("the printed call %q does not name this run's gateway and token", call)
	}
	var first e2eResult
	eventually(t, time.Minute, "the printed call waiting for a person", alive, func() error {
		first = e2eRun(t, c, ns, call...)
		if first.code != 1 || !strings.Contains(first.out, "approve-call") {
			return fmt.Errorf("%+v", first)
		}
		return nil
	})
	var approvals mcpv1alpha1.McpCallApprovalList
	if err := c.List(ctx, &approvals, client.InNamespace(ns)); err != nil || len(approvals.Items) != 1 {
		t.Fatalf("approvals: %v %d", err, len(approvals.Items))
	}
	if r := e2eRun(t, c, ns, "approve-call", approvals.Items[0].Name, "--reason", "the first call"); r.code != 0 {
		t.Fatalf("approve-call: %+v", r)
	}
	if r := e2eRun(t, c, ns, call...); r.code != 0 || strings.TrimSpace(r.out) != "hello" {
		t.Fatalf("the printed call, approved: %+v", r)
	}
}

// e2eResult is what a kubectl mcp command line did.
type e2eResult struct {
	code     int
	out, err string
}

// e2eRun runs a kubectl mcp command line in process, against c in ns.
func e2eRun(t *testing.T, c client.Client, ns string, args ...string) e2eResult {
	t.Helper()
	var out, errb strings.Builder
	code := cli.Run(cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) { return c, ns }}, args)
	return e2eResult{code, out.String(), errb.String()}
}
