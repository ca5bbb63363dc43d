// Package lifetime checks what happens to McpTools when their McpServer is
// deleted and created again, with the garbage collector of a real
// kube-controller-manager running against the control plane, as in every
// cluster: enabled, approved and Git-declared tools survive, say their
// server is missing, are not served, and come back with their approval
// when the server returns; tools nobody decided anything about go.
//
// It needs KUBEBUILDER_ASSETS with kube-controller-manager besides
// kube-apiserver and etcd: `make test` builds all three
// (hack/envtest.sh --with-controller-manager).
package lifetime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

const (
	ns     = "lifetime"
	server = "docs"
	// gitOps is the field manager a GitOps tool applies with.
	gitOps = "argocd-controller"
	// wait bounds every wait; the garbage collector syncs its informers
	// for every resource first, which takes a while on a busy machine.
	wait = 2 * time.Minute
)

// The roles the server's built-in tools play.
var (
	// gitEnabled is declared in Git, enabled and approved there.
	gitEnabled = mcpserver.ToolEcho
	// humanEnabled is enabled and approved by a person with kubectl, and
	// carries the owner reference earlier versions of the importer set.
	humanEnabled = mcpserver.ToolFail
	// gitDisabled is declared in Git, disabled.
	gitDisabled = mcpserver.ToolSlow
	// importerOnly are created by the import and never touched by anyone.
	importerOnly = []string{mcpserver.ToolImageAndText, mcpserver.ToolNested}
)

func TestDecisionsSurviveServerDeletionUnderTheGarbageCollector(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test`, or set KUBEBUILDER_ASSETS=$(hack/envtest.sh --with-controller-manager)")
	}
	kcm := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(kcm); err != nil {
		t.Fatalf("%s is missing: build it with hack/envtest.sh --with-controller-manager (`make test` does)", kcm)
	}
	// The manager's log is kept, and shown when the test fails.
	logs := &buffer{}
	logf.SetLogger(zap.New(zap.WriteTo(logs)))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the manager's log ends with:\n%s", tail(logs.String(), 60))
		}
	})
	ctx := context.Background()

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	startGarbageCollector(t, kcm, cfg)
	mgr := startManager(t, cfg)

	up := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	srv := createServer(t, c, up.URL)

	// The decisions: Git enables and pins one tool and declares another
	// disabled; a person enables and approves a third.
	hash := importedHash(t, c, gitEnabled)
	applyFromGit(t, c, gitEnabled, true, hash)
	applyFromGit(t, c, gitDisabled, false, "")
	approved := map[string]string{gitEnabled: hash, humanEnabled: importedHash(t, c, humanEnabled)}
	patchTool(t, c, humanEnabled, func(tl *mcpv1alpha1.McpTool) {
		tl.Spec.Enabled = true
		tl.Spec.ApprovedDefinitionHash = approved[humanEnabled]
	})
	for remote := range approved {
		waitReady(t, c, remote, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
	}
	for _, remote := range importerOnly {
		waitReady(t, c, remote, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled)
	}

	// A tool carrying the controller owner reference an earlier importer
	// set is released from it: with it, the collector below would take
	// the tool.
	patchTool(t, c, humanEnabled, func(tl *mcpv1alpha1.McpTool) {
		tl.OwnerReferences = []metav1.OwnerReference{serverOwner(srv)}
	})
	eventually(t, "the legacy owner reference removed", func() error {
		if refs := getTool(t, c, humanEnabled).OwnerReferences; len(refs) != 0 {
			return fmt.Errorf("owner references %+v", refs)
		}
		return nil
	})

	t.Run("deleted and created again while the manager runs", func(t *testing.T) {
		cycle(t, c, up.URL, approved, nil, nil)
	})
	t.Run("deleted while the manager is down", func(t *testing.T) {
		// Only the collector acts on the delete; the manager, back later,
		// finds the server gone.
		cycle(t, c, up.URL, approved, func() { mgr.stop(t) }, func() { mgr = startManager(t, cfg) })
	})
}

// cycle deletes the server and creates it again. down, if not nil, runs
// before the delete, and back after the collector has acted.
func cycle(t *testing.T, c client.Client, url string, approved map[string]string, down, back func()) {
	t.Helper()
	ctx := context.Background()
	srv := &mcpv1alpha1.McpServer{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: server}, srv))
	// A dependent only the garbage collector removes: its going proves the
	// collector ran, and acted on this deletion.
	canary := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, GenerateName: "owned-by-server-", OwnerReferences: []metav1.OwnerReference{serverOwner(srv)},
	}}
	must(t, c.Create(ctx, canary))
	if down != nil {
		down()
	}

	// kubectl delete: background propagation.
	must(t, c.Delete(ctx, srv))
	eventually(t, "the garbage collector deletes the server's dependent ConfigMap", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(canary), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
	if back != nil {
		back()
	}

	// Enabled and declared tools stay, say why they are not served, and
	// keep their approval; the tools nobody decided anything about go.
	for remote, hash := range approved {
		waitReady(t, c, remote, metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotFound)
		tl := getTool(t, c, remote)
		if !tl.Spec.Enabled || tl.Spec.ApprovedDefinitionHash != hash {
			t.Errorf("%s: enabled %v, approved %q; want enabled and %q", remote, tl.Spec.Enabled, tl.Spec.ApprovedDefinitionHash, hash)
		}
	}
	if tl := getTool(t, c, gitDisabled); tl.Spec.Enabled {
		t.Errorf("%s: the Git-declared disabled tool was enabled", gitDisabled)
	}
	for _, remote := range importerOnly {
		eventually(t, remote+" (disabled, importer only) removed", func() error {
			err := c.Get(ctx, toolKey(remote), &mcpv1alpha1.McpTool{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %w", err)
		})
	}
	// Nothing removes the others later either.
	time.Sleep(2 * time.Second)
	for _, remote := range []string{gitEnabled, humanEnabled, gitDisabled} {
		getTool(t, c, remote)
	}

	// The server returns (a new object, a new UID): the tools are linked to
	// it again and servable with the approval that never went away.
	createServer(t, c, url)
	for remote, hash := range approved {
		waitReady(t, c, remote, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
		if got := getTool(t, c, remote).Spec.ApprovedDefinitionHash; got != hash {
			t.Errorf("%s: approved %q after the server returned, want %q", remote, got, hash)
		}
	}
	for _, remote := range importerOnly {
		waitReady(t, c, remote, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled)
	}
}

func serverOwner(srv *mcpv1alpha1.McpServer) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: mcpv1alpha1.GroupVersion.String(), Kind: "McpServer", Name: srv.Name, UID: srv.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

func createServer(t *testing.T, c client.Client, url string) *mcpv1alpha1.McpServer {
	t.Helper()
	srv := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: server},
		Spec: mcpv1alpha1.McpServerSpec{
			URL:              url,
			DataClass:        mcpv1alpha1.DataClassInternal,
			OperationTimeout: &metav1.Duration{Duration: 5 * time.Second},
		},
	}
	must(t, c.Create(context.Background(), srv))
	return srv
}

func toolKey(remote string) client.ObjectKey {
	name, err := toolname.ObjectName(server, remote)
	if err != nil {
		panic(err)
	}
	return client.ObjectKey{Namespace: ns, Name: name}
}

func getTool(t *testing.T, c client.Client, remote string) *mcpv1alpha1.McpTool {
	t.Helper()
	tl := &mcpv1alpha1.McpTool{}
	if err := c.Get(context.Background(), toolKey(remote), tl); err != nil {
		t.Fatalf("McpTool for %s: %v", remote, err)
	}
	return tl
}

// importedHash waits for the import to write the tool's definition and
// returns its hash, which a person reviews before approving.
func importedHash(t *testing.T, c client.Client, remote string) string {
	t.Helper()
	var hash string
	eventually(t, remote+" imported", func() error {
		tl := &mcpv1alpha1.McpTool{}
		if err := c.Get(context.Background(), toolKey(remote), tl); err != nil {
			return err
		}
		if hash = tl.Status.DefinitionHash; hash == "" {
			return fmt.Errorf("no definition yet")
		}
		return nil
	})
	return hash
}

// applyFromGit declares a tool the way a GitOps tool does: server-side
// apply of the spec only, with its own field manager.
func applyFromGit(t *testing.T, c client.Client, remote string, enabled bool, approved string) {
	t.Helper()
	spec := mcpac.McpToolSpec().
		WithServerRef(mcpac.LocalObjectReference().WithName(server)).
		WithRemoteName(remote).
		WithEnabled(enabled)
	if approved != "" {
		spec.WithApprovedDefinitionHash(approved)
	}
	key := toolKey(remote)
	must(t, c.Apply(context.Background(), mcpac.McpTool(key.Name, ns).WithSpec(spec), client.FieldOwner(gitOps), client.ForceOwnership))
}

// patchTool changes a tool the way kubectl patch does.
func patchTool(t *testing.T, c client.Client, remote string, change func(*mcpv1alpha1.McpTool)) {
	t.Helper()
	// A conflict with a controller's status write is tried again on the
	// object as it is now, as a person would.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tl := getTool(t, c, remote)
		patch := client.MergeFromWithOptions(tl.DeepCopy(), client.MergeFromWithOptimisticLock{})
		change(tl)
		return c.Patch(context.Background(), tl, patch, client.FieldOwner("kubectl-patch"))
	}))
}

func waitReady(t *testing.T, c client.Client, remote string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s Ready=%s (%s)", remote, status, reason), func() error {
		tl := &mcpv1alpha1.McpTool{}
		if err := c.Get(context.Background(), toolKey(remote), tl); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionReady)
		if cond == nil || cond.Status != status || cond.Reason != reason || cond.ObservedGeneration != tl.Generation {
			return fmt.Errorf("Ready is %+v", cond)
		}
		return nil
	})
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startGarbageCollector runs kube-controller-manager with its garbage
// collector only, authenticated as the control plane's administrator.
func startGarbageCollector(t *testing.T, binary string, cfg *rest.Config) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	must(t, clientcmd.WriteToFile(*kc, kubeconfig))

	out := &buffer{}
	cmd := exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--controllers=garbagecollector",
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No HTTPS endpoint: nothing scrapes it here.
		"--secure-port=0",
	)
	cmd.Stdout, cmd.Stderr = out, out
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	// exited is closed once the process has ended; waitErr says how.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
			t.Errorf("kube-controller-manager exited early (%v):\n%s", waitErr, tail(out.String(), 40))
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		if t.Failed() {
			t.Logf("kube-controller-manager log:\n%s", tail(out.String(), 40))
		}
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runningManager is the operator's manager, run in this process.
type runningManager struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func startManager(t *testing.T, cfg *rest.Config) *runningManager {
	t.Helper()
	opts := manager.DefaultOptions()
	opts.MetricsAddr = "0"
	opts.SecureMetrics = false
	opts.ProbeAddr = "0"
	opts.AllowPrivateNetworks = true
	opts.GracefulShutdownTimeout = 10 * time.Second
	// The test stops the manager and starts another in this process.
	opts.SkipControllerNameValidation = true
	m, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logf.Log))
	rm := &runningManager{cancel: cancel, done: make(chan error, 1)}
	go func() { rm.done <- m.Start(ctx) }()
	t.Cleanup(func() { rm.stop(t) })
	select {
	case <-m.Elected():
	case err := <-rm.done:
		t.Fatalf("the manager exited: %v", err)
	case <-time.After(wait):
		t.Fatal("the manager did not start")
	}
	return rm
}

func (m *runningManager) stop(t *testing.T) {
	m.once.Do(func() {
		m.cancel()
		select {
		case err := <-m.done:
			if err != nil {
				t.Errorf("the manager stopped with %v", err)
			}
		case <-time.After(wait):
			t.Error("the manager did not stop")
		}
	})
}

// buffer is a log sink safe for concurrent writes.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
