package credentials

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The cache keeps at most maxCached objects, however many are read.
func TestCachedReaderIsBounded(t *testing.T) {
	var objs []client.Object
	for i := range maxCached + 200 {
		objs = append(objs, &corev1.Secret{ObjectMeta: metaOf(fmt.Sprintf("s%d", i))})
	}
	c := &CachedReader{Reader: fake.NewClientBuilder().WithObjects(objs...).Build()}
	for i := range maxCached + 200 {
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("s%d", i)}, &corev1.Secret{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.len(); n > maxCached {
		t.Fatalf("%d objects kept, bound %d", n, maxCached)
	}
}

func metaOf(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
