package manager

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
)

// shardWrites records which shard wrote which object path.
type shardWrites struct {
	mu sync.Mutex
	by map[string]map[string]bool
}

type shardRecorder struct {
	w     *shardWrites
	shard string
	next  http.RoundTripper
}

func (t *shardRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch || req.Method == http.MethodPut || req.Method == http.MethodDelete {
		p := strings.TrimSuffix(req.URL.Path, "/status")
		t.w.mu.Lock()
		if t.w.by[p] == nil {
			t.w.by[p] = map[string]bool{}
		}
		t.w.by[p][t.shard] = true
		t.w.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

// writers returns the shards that wrote paths containing part.
func (w *shardWrites) writers(part string) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for p, by := range w.by {
		if strings.Contains(p, part) {
			for s := range by {
				out[s] = true
			}
		}
	}
	return out
}

// Two shards on one control plane, as the chart runs them: each reconciles
// only the server its selector selects, and that server's tools, which the
// importer labels with the server's shard, and only the access policy its
// selector selects. Each holds its own lease, so both run at once.
func TestShardsReconcileOnlyTheirOwnObjects(t *testing.T) {
	plane := controlplane.Start(t)
	cfg, c := plane.Config, plane.Client
	ctx := context.Background()

	writes := &shardWrites{by: map[string]map[string]bool{}}
	for shard, selector := range map[string]string{"a": mcpv1alpha1.LabelShardKey + "=a", "default": "!" + mcpv1alpha1.LabelShardKey} {
		mcfg := rest.CopyConfig(cfg)
		mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &shardRecorder{w: writes, shard: shard, next: rt} })
		opts := DefaultOptions()
		opts.MetricsAddr, opts.ProbeAddr, opts.SecureMetrics = "0", "0", false
		opts.Components = ComponentsControllers
		opts.AllowPrivateNetworks = true
		opts.SkipControllerNameValidation = true
		opts.GracefulShutdownTimeout = 5 * time.Second
		opts.LeaderElect, opts.LeaderElectionNamespace = true, "default"
		opts.LeaderElectionID = shard + "." + LeaderElectionID
		opts.WatchLabelSelector = selector
		mgr, err := New(mcfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(mctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}

	up := mcpserver.Start(t, mcpserver.Options{Tools: 3})
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shards"}}); err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]map[string]string{"in-a": {mcpv1alpha1.LabelShardKey: "a"}, "unsharded": nil} {
		s := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "shards", Name: name, Labels: labels}}
		s.Spec.URL = up.URL
		s.Spec.DataClass = mcpv1alpha1.DataClassInternal
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Access policies are cached by every shard and written by the one
	// that selects them, as delegation profiles are.
	for name, labels := range map[string]map[string]string{"policy-a": {mcpv1alpha1.LabelShardKey: "a"}, "policy-unsharded": nil} {
		p := &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shards", Name: name, Labels: labels}}
		p.Spec.ServiceAccounts, p.Spec.MaxDataClass = []string{"agent"}, mcpv1alpha1.DataClassInternal
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	tools := 3 + len(mcpserver.BuiltinTools())
	var tl mcpv1alpha1.McpToolList
	poll.Until(t, 2*time.Minute, "both servers and both policies Ready, and every tool imported", func() error {
		var l mcpv1alpha1.McpServerList
		var pl mcpv1alpha1.McpAccessPolicyList
		for _, list := range []client.ObjectList{&l, &tl, &pl} {
			if err := c.List(ctx, list, client.InNamespace("shards")); err != nil {
				return err
			}
		}
		ready := 0
		for _, s := range l.Items {
			if meta.IsStatusConditionTrue(s.Status.Conditions, mcpv1alpha1.ConditionReady) {
				ready++
			}
		}
		for _, p := range pl.Items {
			if meta.IsStatusConditionTrue(p.Status.Conditions, mcpv1alpha1.ConditionReady) {
				ready++
			}
		}
		if ready != 4 || len(tl.Items) != 2*tools {
			return fmt.Errorf("%d of 2 servers and 2 policies Ready, %d of %d tools", ready, len(tl.Items), 2*tools)
		}
		return nil
	})
	for _, tool := range tl.Items {
		want := ""
		if tool.Spec.ServerRef.Name == "in-a" {
			want = "a"
		}
		if got := tool.Labels[mcpv1alpha1.LabelShardKey]; got != want {
			t.Errorf("tool %s has shard label %q, want its server's %q", tool.Name, got, want)
		}
	}

	for part, want := range map[string]string{
		"/mcpservers/in-a":      "a",
		"/mcptools/in-a.":       "a",
		"/mcpservers/unsharded": "default",
		"/mcptools/unsharded.":  "default",

		"/mcpaccesspolicies/policy-a":         "a",
		"/mcpaccesspolicies/policy-unsharded": "default",
	} {
		got := writes.writers(part)
		if len(got) != 1 || !got[want] {
			t.Errorf("%s written by shards %v, want only %s", part, got, want)
		}
	}
}
