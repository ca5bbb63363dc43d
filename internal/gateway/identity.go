package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Identity is an authenticated caller: a ServiceAccount, as TokenReview
// reported it.
type Identity struct {
	Username       string
	UID            string
	Groups         []string
	Extra          map[string][]string
	Namespace      string
	ServiceAccount string
}

// ErrUnauthenticated is returned for a missing, invalid or wrongly bound
// token; the caller gets 401 and learns nothing else.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticator turns a bearer token into an Identity.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Identity, error)
}

// Authorizer decides whether a caller may call a tool, by Kubernetes RBAC.
type Authorizer interface {
	CanCall(ctx context.Context, id *Identity, namespace, tool string) (bool, error)
}

// TokenReviewAuthenticator verifies ServiceAccount tokens with TokenReview,
// requiring them to be bound to Audience, and caches outcomes briefly so an
// agent's burst of requests costs one review.
type TokenReviewAuthenticator struct {
	Client   client.Client
	Audience string
	TTL      time.Duration
	Now      func() time.Time

	cache ttlCache[[32]byte, *Identity]
}

// Authenticate implements Authenticator.
func (a *TokenReviewAuthenticator) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	key := sha256.Sum256([]byte(token))
	if id, ok := a.cache.get(key, a.now()); ok {
		if id == nil {
			return nil, ErrUnauthenticated
		}
		return id, nil
	}
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{a.Audience}}}
	if err := a.Client.Create(ctx, tr); err != nil {
		// Not cached: the review did not happen.
		return nil, fmt.Errorf("reviewing the token: %w", err)
	}
	id := identityFrom(tr, a.Audience)
	now := a.now()
	a.cache.put(key, id, now.Add(a.ttl()), now)
	if id == nil {
		return nil, ErrUnauthenticated
	}
	return id, nil
}

func (a *TokenReviewAuthenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *TokenReviewAuthenticator) ttl() time.Duration {
	if a.TTL > 0 {
		return a.TTL
	}
	return 30 * time.Second
}

// identityFrom accepts only an authenticated ServiceAccount whose token is
// bound to the audience.
func identityFrom(tr *authenticationv1.TokenReview, audience string) *Identity {
	st := tr.Status
	if !st.Authenticated || st.Error != "" {
		return nil
	}
	bound := false
	for _, a := range st.Audiences {
		if a == audience {
			bound = true
		}
	}
	if !bound {
		return nil
	}
	ns, sa, ok := serviceAccountOf(st.User.Username)
	if !ok {
		return nil
	}
	extra := map[string][]string{}
	for k, v := range st.User.Extra {
		extra[k] = append([]string(nil), v...)
	}
	return &Identity{Username: st.User.Username, UID: st.User.UID, Groups: st.User.Groups, Extra: extra, Namespace: ns, ServiceAccount: sa}
}

func serviceAccountOf(username string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(username, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != ""
}

// VerbCall is the RBAC verb on mcptools that lets a caller call a tool.
const VerbCall = "call"

// SubjectAccessReviewAuthorizer asks the API server whether the caller may
// "call" the McpTool (verb call on mcptools.mcp.catalog.dev, by name),
// caching answers briefly.
type SubjectAccessReviewAuthorizer struct {
	Client client.Client
	TTL    time.Duration
	Now    func() time.Time

	cache ttlCache[string, bool]
}

// CanCall implements Authorizer.
func (a *SubjectAccessReviewAuthorizer) CanCall(ctx context.Context, id *Identity, namespace, tool string) (bool, error) {
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	key := id.UID + "\x00" + id.Username + "\x00" + namespace + "\x00" + tool
	if ok, hit := a.cache.get(key, now); hit {
		return ok, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range id.Extra {
		extra[k] = v
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: id.Username, UID: id.UID, Groups: id.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: VerbCall, Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools", Name: tool,
		},
	}}
	if err := a.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("reviewing access: %w", err)
	}
	ttl := a.TTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	a.cache.put(key, sar.Status.Allowed, now.Add(ttl), now)
	return sar.Status.Allowed, nil
}

// ttlCache is a small map with expiry. It is bounded: when full, expired
// entries are dropped, and if none are, the whole map is, which costs only
// repeated reviews.
type ttlCache[K comparable, V any] struct {
	mu      sync.Mutex
	entries map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v   V
	exp time.Time
}

const ttlCacheMax = 10000

func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !now.Before(e.exp) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[K, V]) put(k K, v V, exp, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[K]ttlEntry[V]{}
	}
	if len(c.entries) >= ttlCacheMax {
		for key, e := range c.entries {
			if !now.Before(e.exp) {
				delete(c.entries, key)
			}
		}
		if len(c.entries) >= ttlCacheMax {
			c.entries = map[K]ttlEntry[V]{}
		}
	}
	c.entries[k] = ttlEntry[V]{v: v, exp: exp}
}
