package credentials

import (
	"context"
	"reflect"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultCacheTTL is how long CachedReader keeps an object it read.
const DefaultCacheTTL = 10 * time.Second

// maxCached bounds the objects a CachedReader keeps.
const maxCached = 1000

// CachedReader keeps the objects (Secrets, ConfigMaps) it reads through a
// direct reader for a short TTL, so that a stream of tool calls does not
// read its server's credential Secret from the API server once per call:
// the gateway serves every tenant through one client and one rate limit,
// and a tenant calling fast would spend it for all. The operator may not
// watch Secrets (docs/adr/003-secret-access.md), so nothing invalidates an
// entry: a rotated Secret is used once its entry expires, within TTL. A
// missing object is remembered too, so that calls of a server whose
// Secret is missing do not read it each time; other errors are not.
// Concurrent reads of one object are made once. At most 1000 objects are
// kept. The cache holds Secret data in memory, as a call does while it
// runs; it never logs or prints it. List is passed through uncached.
type CachedReader struct {
	client.Reader
	// TTL is how long an object is kept; 0 means DefaultCacheTTL.
	TTL time.Duration
	// Clock tells when an entry expires; nil means the real clock.
	Clock clock.PassiveClock

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	flight  singleflight.Group
}

type cacheKey struct {
	kind      reflect.Type
	namespace string
	name      string
}

type cacheEntry struct {
	obj      client.Object // nil: not found
	notFound error
	expires  time.Time
}

func (c *CachedReader) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

// Get implements client.Reader: from the cache while the entry lives,
// otherwise from the reader beneath.
func (c *CachedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if len(opts) > 0 {
		return c.Reader.Get(ctx, key, obj, opts...)
	}
	k := cacheKey{kind: reflect.TypeOf(obj), namespace: key.Namespace, name: key.Name}
	if e := c.lookup(k); e != nil {
		return e.copyInto(obj)
	}
	v, err, _ := c.flight.Do(k.kind.String()+"\x00"+key.Namespace+"\x00"+key.Name, func() (any, error) {
		fresh := reflect.New(k.kind.Elem()).Interface().(client.Object)
		err := c.Reader.Get(ctx, key, fresh)
		switch {
		case err == nil:
			e := &cacheEntry{obj: fresh}
			c.store(k, e)
			return e, nil
		case apierrors.IsNotFound(err):
			e := &cacheEntry{notFound: err}
			c.store(k, e)
			return e, nil
		}
		return nil, err
	})
	if err != nil {
		return err
	}
	return v.(*cacheEntry).copyInto(obj)
}

func (e *cacheEntry) copyInto(obj client.Object) error {
	if e.obj == nil {
		return e.notFound
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(e.obj.DeepCopyObject()).Elem())
	return nil
}

func (c *CachedReader) lookup(k cacheKey) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, k)
		return nil
	}
	return e
}

func (c *CachedReader) store(k cacheKey, e *cacheEntry) {
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	now := c.now()
	e.expires = now.Add(ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[cacheKey]*cacheEntry{}
	}
	if len(c.entries) >= maxCached {
		for key, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, key)
			}
		}
		for key := range c.entries {
			if len(c.entries) < maxCached {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = e
}

// len is the number of objects kept.
func (c *CachedReader) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
