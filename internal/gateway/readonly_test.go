package gateway

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// cacheLikeReader answers the reads a call makes read-only (readOnly) as
// the informer cache does: with the one object it holds, copied shallowly,
// so that a write to anything inside the object a call was handed is a
// write to what every other call reads. Other reads go to the reader
// behind it.
type cacheLikeReader struct {
	client.Reader
	mu       sync.Mutex
	objects  map[types.NamespacedName]client.Object
	policies []mcpv1alpha1.McpAccessPolicy
	shared   int
}

func newCacheLikeReader(t *testing.T, r client.Reader) *cacheLikeReader {
	t.Helper()
	s := &cacheLikeReader{Reader: r, objects: map[types.NamespacedName]client.Object{}}
	ctx := context.Background()
	var tools mcpv1alpha1.McpToolList
	var servers mcpv1alpha1.McpServerList
	var policies mcpv1alpha1.McpAccessPolicyList
	for _, l := range []client.ObjectList{&tools, &servers, &policies} {
		if err := r.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tools.Items {
		s.objects[client.ObjectKeyFromObject(&tools.Items[i])] = &tools.Items[i]
	}
	for i := range servers.Items {
		s.objects[client.ObjectKeyFromObject(&servers.Items[i])] = &servers.Items[i]
	}
	s.policies = policies.Items
	return s
}

func (s *cacheLikeReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	held, ok := s.objects[key]
	var g client.GetOptions
	g.ApplyOptions(opts)
	if g.UnsafeDisableDeepCopy == nil || !*g.UnsafeDisableDeepCopy || !ok || reflect.TypeOf(held) != reflect.TypeOf(obj) {
		return s.Reader.Get(ctx, key, obj, opts...)
	}
	s.mu.Lock()
	s.shared++
	s.mu.Unlock()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(held).Elem())
	return nil
}

func (s *cacheLikeReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l, ok := list.(*mcpv1alpha1.McpAccessPolicyList)
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if !ok || lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy {
		return s.Reader.List(ctx, list, opts...)
	}
	s.mu.Lock()
	s.shared++
	s.mu.Unlock()
	l.Items = nil
	for _, p := range s.policies {
		if p.Namespace == lo.Namespace {
			l.Items = append(l.Items, p)
		}
	}
	return nil
}

// A call is handed the cache's own tool, server and access policies, not
// copies (readOnly): every kind of call, on both of the gateway's paths and
// side by side, leaves them exactly as they were.
func TestCallsLeaveTheCachesObjectsAsTheyWere(t *testing.T) {
	up := callUpstream(t)
	fails := docsTool(t, "fails")
	var shared *cacheLikeReader
	var before map[types.NamespacedName]client.Object
	var policiesBefore []mcpv1alpha1.McpAccessPolicy
	_, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true, fails.Name: true}, 0, func(o *Options) {
		shared = newCacheLikeReader(t, o.Reader)
		before = map[types.NamespacedName]client.Object{}
		for k, obj := range shared.objects {
			before[k] = obj.DeepCopyObject().(client.Object)
		}
		for _, p := range shared.policies {
			policiesBefore = append(policiesBefore, *p.DeepCopy())
		}
		o.Reader = shared
	}, fails)

	// Side by side, each in a test goroutine of its own (a parallel
	// subtest), all done when the group returns.
	t.Run("calls", func(t *testing.T) {
		for i := range 4 {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				// The gateway's own path: a result, a tool error, a tool RBAC
				// refuses and one that does not exist.
				for _, name := range []string{echoLocal, fails.Status.LocalName, secretLocal, "docs__nothing"} {
					postCall(t, hs.URL, name, plainCallBody("1", name, `"arguments":{"text":"x"},`))
				}
				// The SDK's path: a session of an earlier revision.
				cs := agentSession(t, hs.URL, "2025-11-25")
				callAs(t, cs, echoLocal, nil)
				callAs(t, cs, fails.Status.LocalName, nil)
			})
		}
	})

	if shared.shared == 0 {
		t.Fatal("no call read the cache's objects read-only: the test proves nothing")
	}
	for k, want := range before {
		if got := shared.objects[k]; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%T %s was changed by the calls:\n got %+v\nwant %+v", got, k, got, want)
		}
	}
	if !equality.Semantic.DeepEqual(shared.policies, policiesBefore) {
		t.Errorf("the access policies were changed by the calls")
	}
}
