package credentials_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
)

// countingReader counts the Gets that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A hundred tool calls of one server read its credential Secret once, not
// a hundred times; a rotated Secret is used once the entry has expired.
func TestCachedReaderReadsACredentialOncePerTTLAndSeesARotation(t *testing.T) {
	ctx := context.Background()
	ns := "cache-" + fmt.Sprint(time.Now().UnixNano())
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token", Labels: optIn}, Data: map[string][]byte{"token": []byte("first-value")}}
	if err := kube.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Spec: mcpv1alpha1.McpServerSpec{
		URL:  "https://docs.example.com/mcp",
		Auth: &mcpv1alpha1.McpServerAuth{Bearer: &mcpv1alpha1.BearerAuth{SecretRef: mcpv1alpha1.SecretKeySelector{Name: "token", Key: "token"}}},
	}}
	clk := testingclock.NewFakeClock(time.Now())
	direct := &countingReader{Reader: kube}
	r := &credentials.Resolver{Secrets: &credentials.CachedReader{Reader: direct, TTL: 10 * time.Second, Clock: clk}, Profiles: kube}
	value := func() string {
		t.Helper()
		c, err := r.ForCall(ctx, srv, credentials.Actor{Username: "system:serviceaccount:" + ns + ":bot"})
		if err != nil || c == nil {
			t.Fatalf("resolving the credential: %v", err)
		}
		return c.Value.Reveal()
	}

	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if v := value(); v != "first-value" {
				t.Errorf("credential %q", v)
			}
		})
	}
	wg.Wait()
	if n := direct.gets.Load(); n != 1 {
		t.Fatalf("100 calls read the Secret %d times, want 1", n)
	}

	sec.Data["token"] = []byte("rotated-value")
	if err := kube.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	clk.Step(5 * time.Second)
	if v := value(); v != "first-value" {
		t.Errorf("within the TTL: %q, want the cached value", v)
	}
	clk.Step(5 * time.Second)
	if v := value(); v != "rotated-value" {
		t.Errorf("after the TTL: %q, want the rotated value", v)
	}
	if n := direct.gets.Load(); n != 2 {
		t.Errorf("%d reads after the TTL, want 2", n)
	}

	// A change to a cached object does not reach the cache's copy.
	got := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: "token"}, got); err != nil {
		t.Fatal(err)
	}
	got.Data["token"] = []byte("scribbled")
	if v := value(); v != "rotated-value" {
		t.Errorf("a caller's change to its copy reached the cache: %q", v)
	}
}

// A missing Secret is remembered like a present one, so that calls of a
// server whose Secret is missing do not read it every time; it is seen
// once created, after the TTL.
func TestCachedReaderRemembersAMissingObject(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now())
	direct := &countingReader{Reader: kube}
	c := &credentials.CachedReader{Reader: direct, Clock: clk}
	key := types.NamespacedName{Namespace: "default", Name: "not-yet-" + fmt.Sprint(time.Now().UnixNano())}
	for range 20 {
		if err := c.Get(ctx, key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a missing Secret: %v, want NotFound", err)
		}
	}
	if n := direct.gets.Load(); n != 1 {
		t.Errorf("20 reads of a missing Secret reached the API server %d times, want 1", n)
	}
	if err := kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(credentials.DefaultCacheTTL)
	if err := c.Get(ctx, key, &corev1.Secret{}); err != nil {
		t.Errorf("after the TTL, the created Secret: %v", err)
	}
	// A different kind under the same name is a different entry.
	if err := c.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("a ConfigMap of the Secret's name: %v, want NotFound", err)
	}
}
