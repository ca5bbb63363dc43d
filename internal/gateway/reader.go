package gateway

import (
	"context"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readTimeout bounds each read of the gateway from the cache.
const readTimeout = 5 * time.Second

// boundedReader is how the gateway reads what it decides from (tools,
// access policies, servers) from the informer cache: a read of a kind whose
// informer has not synced has a deadline, so that a kind that cannot sync
// (its RBAC missing, say) fails the call with an error the log names
// instead of holding it until the agent gives up. A cache read waits only
// for its kind's informer to sync, so once one read of a kind has
// succeeded the reads after it do not wait and go without a deadline (and
// without the timer each deadline costs a call).
//
// The reads of a call's path (its tool, its server, its namespace's access
// policies) pass readOnly: they are handed the cache's own objects, not
// copies of them, and nothing in the gateway writes an object it read.
type boundedReader struct {
	client.Reader
	timeout time.Duration
	// synced holds the Go types (reflect.Type) of the objects and lists
	// read successfully once. A Go type names one kind for the typed
	// objects the gateway reads (it reads no metadata-only or unstructured
	// objects, whose type would name many).
	synced *sync.Map
}

// readOnly is the read option of the reads a call makes: the object as the
// cache holds it, shared with the cache and with every other call, not a
// copy (a deep copy of a tool and its server was most of what reading them
// cost a call). docs/adr/039-gateway-shared-reads.md.
var readOnly = client.UnsafeDisableDeepCopy

func newBoundedReader(r client.Reader, timeout time.Duration) boundedReader {
	return boundedReader{Reader: r, timeout: timeout, synced: &sync.Map{}}
}

func (r boundedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := reflect.TypeOf(obj)
	if _, ok := r.synced.Load(kind); ok {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.Reader.Get(ctx, key, obj, opts...)
	r.learn(kind, err)
	return err
}

func (r boundedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	kind := reflect.TypeOf(list)
	if _, ok := r.synced.Load(kind); ok {
		return r.Reader.List(ctx, list, opts...)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.Reader.List(ctx, list, opts...)
	r.learn(kind, err)
	return err
}

// learn remembers that a read of kind was answered: a read that found
// nothing was answered from a synced informer too.
func (r boundedReader) learn(kind reflect.Type, err error) {
	if err == nil || apierrors.IsNotFound(err) {
		r.synced.Store(kind, struct{}{})
	}
}
