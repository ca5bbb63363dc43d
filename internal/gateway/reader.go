package gateway

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	// informers, when set, are the informers Reader reads from. A read
	// of a call's path (readOnly) of a kind that has synced is answered
	// from its informer's store directly: what the client and the cache
	// reader would do, less finding the kind's informer by its group,
	// version and kind on every read. stores holds each kind's store
	// (toolscache.Indexer), or nil for a kind whose informer has none to
	// give (a cache over several namespaces), which goes through Reader.
	informers cache.Informers
	stores    *sync.Map
}

// readOnly is the read option of the reads a call makes: the object as the
// cache holds it, shared with the cache and with every other call, not a
// copy (a deep copy of a tool and its server was most of what reading them
// cost a call). docs/adr/039-gateway-shared-reads.md.
var readOnly = client.UnsafeDisableDeepCopy

func newBoundedReader(r client.Reader, timeout time.Duration, informers cache.Informers) boundedReader {
	return boundedReader{Reader: r, timeout: timeout, synced: &sync.Map{}, informers: informers, stores: &sync.Map{}}
}

func (r boundedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := reflect.TypeOf(obj)
	if _, ok := r.synced.Load(kind); ok {
		if r.informers != nil && sharedGet(opts) {
			if store := r.storeFor(ctx, kind, obj); store != nil {
				return getFromStore(store, key, obj)
			}
		}
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
		if namespace, ok := plainNamespaceList(opts); ok && r.informers != nil {
			if store := r.listStoreFor(ctx, kind); store != nil {
				return listFromStore(store, namespace, list)
			}
		}
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

// sharedGet reports whether a read with opts asks for the cache's own
// object rather than a copy (readOnly).
func sharedGet(opts []client.GetOption) bool {
	// Read from the options themselves: applying them to GetOptions
	// would move it to the heap on every read.
	shared := false
	for _, o := range opts {
		if v, ok := o.(client.UnsafeDisableDeepCopyOption); ok {
			shared = bool(v)
		}
	}
	return shared
}

// storeFor is the informer store of kind (obj is one), or nil when there
// is none to use.
func (r boundedReader) storeFor(ctx context.Context, kind reflect.Type, obj client.Object) toolscache.Indexer {
	if r.informers == nil {
		return nil
	}
	if s, ok := r.stores.Load(kind); ok {
		store, _ := s.(toolscache.Indexer)
		return store
	}
	// Asked once per kind, after a read of it through Reader succeeded:
	// the informer exists and has synced.
	inf, err := r.informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil
	}
	var store toolscache.Indexer
	if s, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		store = s.GetIndexer()
	}
	r.stores.Store(kind, store)
	return store
}

// listStoreFor is the informer store of the kind a list of kind holds, or
// nil when there is none to use.
func (r boundedReader) listStoreFor(ctx context.Context, kind reflect.Type) toolscache.Indexer {
	if s, ok := r.stores.Load(kind); ok {
		store, _ := s.(toolscache.Indexer)
		return store
	}
	var store toolscache.Indexer
	if item, ok := itemOf(kind); ok {
		store = r.storeFor(ctx, reflect.TypeOf(item), item)
	}
	r.stores.Store(kind, store)
	return store
}

// plainNamespaceList reports whether a list with opts reads one namespace
// whole, shared with the cache (the reads a call makes), and which. Only
// those two options are looked for, in the options themselves: applying
// them to ListOptions would move it to the heap on every read.
func plainNamespaceList(opts []client.ListOption) (string, bool) {
	namespace, shared := "", false
	for _, o := range opts {
		switch v := o.(type) {
		case client.InNamespace:
			namespace = string(v)
		case client.UnsafeDisableDeepCopyOption:
			shared = bool(v)
		default:
			return "", false
		}
	}
	return namespace, namespace != "" && shared
}

// itemOf is a new object of the kind a typed list (a pointer to a struct
// with an Items slice of structs) holds.
func itemOf(list reflect.Type) (client.Object, bool) {
	if list.Kind() != reflect.Pointer || list.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f, ok := list.Elem().FieldByName("Items")
	if !ok || f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	obj, ok := reflect.New(f.Type.Elem()).Interface().(client.Object)
	return obj, ok
}

// getFromStore reads key from store into obj as the cache reader does
// for a read that skips the deep copy: obj is given the stored object's
// fields, sharing what they point to.
func getFromStore(store toolscache.Indexer, key client.ObjectKey, obj client.Object) error {
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := store.GetByKey(storeKey)
	if err != nil {
		return err
	}
	if !exists {
		return apierrors.NewNotFound(schema.GroupResource{Resource: reflect.TypeOf(obj).Elem().Name()}, key.Name)
	}
	out, in := reflect.ValueOf(obj), reflect.ValueOf(item)
	if in.Type() != out.Type() {
		return fmt.Errorf("the cache holds %s where %s was asked for", in.Type(), out.Type())
	}
	out.Elem().Set(in.Elem())
	return nil
}

// listFromStore lists namespace's objects of store into list as the cache
// reader does for a list that skips the deep copy.
func listFromStore(store toolscache.Indexer, namespace string, list client.ObjectList) error {
	items, err := store.ByIndex(toolscache.NamespaceIndex, namespace)
	if err != nil {
		return err
	}
	// itemOf found the field when the store was found for the list.
	field := reflect.ValueOf(list).Elem().FieldByIndex(itemsField(reflect.TypeOf(list)))
	out := reflect.MakeSlice(field.Type(), len(items), len(items))
	for i, item := range items {
		in := reflect.ValueOf(item)
		if in.Kind() != reflect.Pointer || in.Elem().Type() != field.Type().Elem() {
			return fmt.Errorf("the cache holds %T where %s was asked for", item, field.Type().Elem())
		}
		out.Index(i).Set(in.Elem())
	}
	field.Set(out)
	list.SetContinue("")
	return nil
}

// itemsFields remembers, by list type, the index of its Items field.
var itemsFields sync.Map

func itemsField(list reflect.Type) []int {
	if i, ok := itemsFields.Load(list); ok {
		return i.([]int)
	}
	f, _ := list.Elem().FieldByName("Items")
	itemsFields.Store(list, f.Index)
	return f.Index
}
