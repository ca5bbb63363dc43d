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
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testenv"
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
	// The manager's log is kept, and its end shown when the test fails.
	testenv.StartLogs(t)
	ctx := context.Background()
	plane := controlplane.Start(t, controlplane.WithControllers("garbagecollector"))
	c, cfg := plane.Client, plane.Config
	mgr := testenv.RunManager(t, cfg, testenv.ManagerOptions())

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
	poll.Until(t, wait, "the legacy owner reference removed", func() error {
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
		cycle(t, c, up.URL, approved, mgr.Stop, func() { mgr = testenv.RunManager(t, cfg, testenv.ManagerOptions()) })
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
	poll.Until(t, wait, "the garbage collector deletes the server's dependent ConfigMap", func() error {
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
		poll.Until(t, wait, remote+" (disabled, importer only) removed", func() error {
			err := c.Get(ctx, toolKey(remote), &mcpv1alpha1.McpTool{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %w", err)
		})
	}
	// Nothing removes the others later either: the operator has decided
	// about them (the approved ones say their server is missing, and the
	// delete that removed the importer's tools reached every tool of the
	// server), and none carries an owner reference the garbage collector
	// would act on.
	for _, remote := range []string{gitEnabled, humanEnabled, gitDisabled} {
		if refs := getTool(t, c, remote).OwnerReferences; len(refs) != 0 {
			t.Errorf("%s: owner references %+v; the garbage collector would take it", remote, refs)
		}
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
	poll.Until(t, wait, remote+" imported", func() error {
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
	poll.Until(t, wait, fmt.Sprintf("%s Ready=%s (%s)", remote, status, reason), func() error {
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
