package gateway

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// What the gateway compiled for a tool (its view, with its argument
// rules) counts against the tool's namespace's bound while it is kept: the
// notifier's delete handler drops the view of a deleted tool.
func TestTheNotifierDropsADeletedToolsView(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	g, err := New(completeOptions())
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs.search", UID: "uid-search", ResourceVersion: "1", Generation: 1},
		Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"},
			ArgumentRules: &mcpv1alpha1.ArgumentRules{Rules: []mcpv1alpha1.ArgumentRule{{Name: "short", Expression: `args.q.size() < 10`}}}},
	}
	if _, err := g.views.Get(tool); err != nil {
		t.Fatalf("compiling the tool's view: %v", err)
	}
	if _, _, ok := g.views.Lookup(tool); !ok {
		t.Fatal("the view was not kept")
	}

	informers := &informertest.FakeInformers{Scheme: scheme}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- (&ToolListNotifier{Gateway: g, Cache: informers, Debounce: time.Millisecond, Resync: time.Hour}).Start(ctx)
	}()
	inf, err := informers.FakeInformerFor(ctx, &mcpv1alpha1.McpTool{})
	if err != nil {
		t.Fatal(err)
	}
	// The notifier registers its handlers, then runs; the handlers are in
	// place once it reports itself running.
	for !g.changes.running.Load() {
		select {
		case err := <-done:
			t.Fatalf("the notifier stopped: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	inf.Delete(tool)
	if _, _, ok := g.views.Lookup(tool); ok {
		t.Error("the deleted tool's view is still kept")
	}
	if _, _, ok := g.views.Lookup(&mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs.search", UID: types.UID("uid-search"), ResourceVersion: "1"}}); ok {
		t.Error("the view is still found by the tool's version")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
