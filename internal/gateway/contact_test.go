package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// statusPatches counts status patches of McpServers and can fail them.
type statusPatches struct {
	mu    sync.Mutex
	n     int
	fail  bool
	wrote chan struct{}
}

func contactClient(t *testing.T, p *statusPatches) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs"}}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(srv).WithStatusSubresource(srv).Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			p.mu.Lock()
			p.n++
			fail := p.fail
			p.mu.Unlock()
			defer func() { p.wrote <- struct{}{} }()
			if fail {
				return errors.New("the API server is unavailable (test)")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

func TestContactsCoalesceWritesPerServer(t *testing.T) {
	p := &statusPatches{wrote: make(chan struct{}, 16)}
	c := contactClient(t, p)
	contacts := &Contacts{Client: c, Interval: 200 * time.Millisecond}
	key := types.NamespacedName{Namespace: "team", Name: "docs"}
	ctx := context.Background()
	first := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// Ten calls in a burst: the first is written at once, the rest are
	// folded into one more write carrying the latest.
	for i := range 10 {
		contacts.Record(ctx, key, first.Add(time.Duration(i)*time.Second), time.Duration(i+1)*time.Millisecond)
	}
	<-p.wrote
	<-p.wrote
	select {
	case <-p.wrote:
		t.Fatal("a third write for one burst")
	case <-time.After(3 * contacts.Interval):
	}
	p.mu.Lock()
	n := p.n
	p.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d status writes for a burst of ten calls, want 2", n)
	}
	got := &mcpv1alpha1.McpServer{}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.LastContactTime == nil || !got.Status.LastContactTime.Time.Equal(first.Add(9*time.Second)) || got.Status.LastContactLatency.Duration != 10*time.Millisecond {
		t.Errorf("status holds %v / %v, want the latest contact %v / 10ms", got.Status.LastContactTime, got.Status.LastContactLatency, first.Add(9*time.Second))
	}
}

func TestContactsSurviveAFailedWrite(t *testing.T) {
	p := &statusPatches{wrote: make(chan struct{}, 4), fail: true}
	contacts := &Contacts{Client: contactClient(t, p), Interval: time.Millisecond}
	// Record returns without waiting for, or reporting, the failed write.
	contacts.Record(context.Background(), types.NamespacedName{Namespace: "team", Name: "docs"}, time.Now(), time.Millisecond)
	<-p.wrote
}
