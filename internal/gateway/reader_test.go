package gateway

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// storeInformers hands out informers whose stores are the given indexers,
// one per kind, as a single-namespace-set cache does; a kind without one
// gets an informer with no store to give, as a cache over several
// namespaces does.
type storeInformers struct {
	cache.Informers
	stores map[string]toolscache.Indexer
	asked  map[string]int
}

type storeInformer struct {
	cache.Informer
	store toolscache.Indexer
}

func (i storeInformer) GetIndexer() toolscache.Indexer { return i.store }

type storelessInformer struct{ cache.Informer }

func (s *storeInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	kind := ""
	switch obj.(type) {
	case *mcpv1alpha1.McpTool:
		kind = "McpTool"
	case *mcpv1alpha1.McpAccessPolicy:
		kind = "McpAccessPolicy"
	case *mcpv1alpha1.McpServer:
		kind = "McpServer"
	}
	s.asked[kind]++
	if store, ok := s.stores[kind]; ok {
		return storeInformer{store: store}, nil
	}
	return storelessInformer{}, nil
}

func newStore(t *testing.T, objs ...client.Object) toolscache.Indexer {
	t.Helper()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// Once a kind has been read through the client, a read-only read of it is
// answered from its informer's store, as the cache would answer it: the
// stored object's fields (shared, not copied), NotFound for a missing
// key, and a namespace's objects for a list. A read that asks for a copy,
// a list the store cannot answer as asked, and a kind whose informer has
// no store go through the client.
func TestBoundedReaderAnswersSyncedKindsFromTheStore(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "echo", Labels: map[string]string{"in": "store"}}}
	// The client's copy differs from the store's, so that the answers
	// say where they came from.
	inClient := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "echo", Labels: map[string]string{"in": "client"}}}
	policies := []client.Object{
		&mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a", Labels: map[string]string{"in": "store"}}},
		&mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b", Labels: map[string]string{"in": "store"}}},
		&mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "c", Labels: map[string]string{"in": "store"}}},
	}
	server := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs", Labels: map[string]string{"in": "client"}}}
	clientPolicy := &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a", Labels: map[string]string{"in": "client"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(inClient, server, clientPolicy).Build()
	inf := &storeInformers{
		stores: map[string]toolscache.Indexer{"McpTool": newStore(t, stored), "McpAccessPolicy": newStore(t, policies...)},
		asked:  map[string]int{},
	}
	r := newBoundedReader(c, readTimeout, inf)
	ctx := context.Background()
	key := client.ObjectKeyFromObject(stored)

	from := func(o client.Object) string { return o.GetLabels()["in"] }
	got := &mcpv1alpha1.McpTool{}
	if err := r.Get(ctx, key, got, readOnly); err != nil || from(got) != "client" {
		t.Fatalf("the first read of a kind: from %q (%v), want the client's", from(got), err)
	}
	for range 2 {
		got = &mcpv1alpha1.McpTool{}
		if err := r.Get(ctx, key, got, readOnly); err != nil || from(got) != "store" {
			t.Fatalf("a read-only read of a synced kind: from %q (%v), want the store's", from(got), err)
		}
	}
	if inf.asked["McpTool"] != 1 {
		t.Errorf("the tools' informer was asked for %d times, want once", inf.asked["McpTool"])
	}
	if got.Labels == nil || &got.Labels == &stored.Labels {
		t.Fatal("the answer is not the stored object's fields")
	}
	got.Labels["shared"] = "yes"
	if stored.Labels["shared"] != "yes" {
		t.Error("the answer's maps are not the store's: a read-only read copied them")
	}
	delete(stored.Labels, "shared")
	copied := &mcpv1alpha1.McpTool{}
	if err := r.Get(ctx, key, copied); err != nil || from(copied) != "client" {
		t.Errorf("a read asking for a copy: from %q (%v), want the client's", from(copied), err)
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: "team", Name: "gone"}, &mcpv1alpha1.McpTool{}, readOnly)
	if !apierrors.IsNotFound(err) {
		t.Errorf("a missing tool: %v, want NotFound", err)
	}

	var list mcpv1alpha1.McpAccessPolicyList
	if err := r.List(ctx, &list, client.InNamespace("team"), readOnly); err != nil || len(list.Items) != 1 || from(&list.Items[0]) != "client" {
		t.Fatalf("the first list of a kind: %d items (%v), want the client's one", len(list.Items), err)
	}
	list = mcpv1alpha1.McpAccessPolicyList{}
	if err := r.List(ctx, &list, client.InNamespace("team"), readOnly); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range list.Items {
		names[p.Name] = from(&p)
	}
	if len(names) != 2 || names["a"] != "store" || names["b"] != "store" {
		t.Errorf("a read-only list of a synced kind in team: %v, want a and b from the store", names)
	}
	for name, opts := range map[string][]client.ListOption{
		"a copy":          {client.InNamespace("team")},
		"every namespace": {readOnly},
		"a label":         {client.InNamespace("team"), readOnly, client.MatchingLabels{"in": "client"}},
	} {
		list = mcpv1alpha1.McpAccessPolicyList{}
		if err := r.List(ctx, &list, opts...); err != nil || len(list.Items) != 1 || from(&list.Items[0]) != "client" {
			t.Errorf("a list asking for %s: %d items (%v), want the client's one", name, len(list.Items), err)
		}
	}

	for range 2 {
		srv := &mcpv1alpha1.McpServer{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(server), srv, readOnly); err != nil || from(srv) != "client" {
			t.Errorf("a kind whose informer has no store: from %q (%v), want the client's", from(srv), err)
		}
	}
	if inf.asked["McpServer"] != 1 {
		t.Errorf("the servers' informer was asked for %d times, want once (its lack of a store remembered)", inf.asked["McpServer"])
	}
}
