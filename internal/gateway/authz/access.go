package authz

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// Authorizer decides whether a caller may call a tool, by Kubernetes RBAC.
type Authorizer interface {
	CanCall(ctx context.Context, id *authn.Identity, namespace, tool string) (bool, error)
}

// VerbCall is the RBAC verb on mcptools that lets a caller call a tool.
const VerbCall = "call"

// NamespaceAuthorizer is an Authorizer that can also say, in one review,
// that a caller may call every McpTool of a namespace (a grant of the verb
// without resource names). A list then costs one review, not one per tool.
type NamespaceAuthorizer interface {
	Authorizer
	CanCallAll(ctx context.Context, id *authn.Identity, namespace string) (bool, error)
}

// SubjectAccessReviewAuthorizer asks the API server whether the caller may
// "call" the McpTool (verb call on mcptools.mcp.catalog.dev, by name)
// through k8s.io/apiserver's delegating authorizer, as the metrics endpoint
// does, and remembers its answers: allowed and denied answers apart, each
// entry expiring on its own, a review that failed not at all. It keeps the
// answers itself, under a key it builds from the review's attributes, and
// the delegating authorizer keeps none: the delegating authorizer's own
// cache encodes the whole review as JSON for its key on every call.
type SubjectAccessReviewAuthorizer struct {
	Client authorizationv1client.AuthorizationV1Interface
	// AllowTTL and DenyTTL are how long an allowed and a denied answer are
	// remembered; zero means the defaults.
	AllowTTL, DenyTTL time.Duration

	// NamespaceRate and NamespaceBurst limit the reviews made for the
	// callers of one namespace (answers remembered cost none); zero means
	// the defaults. A caller waits for its namespace's share rather than
	// taking another namespace's.
	NamespaceRate  rate.Limit
	NamespaceBurst int
	// Clock is the clock answers expire by; nil is the real one.
	Clock clock.PassiveClock

	once   sync.Once
	authz  authorizer.Authorizer
	err    error
	flight singleflight.Group

	mu sync.Mutex
	// spaces holds, per namespace of the callers, the answers remembered
	// and the limiter of its reviews: one namespace's answers never evict
	// another's.
	spaces map[string]*accessSpace
}

// accessSpace is what the authorizer keeps for the callers of one
// namespace.
type accessSpace struct {
	answers *cache.LRUExpireCache
	lim     *rate.Limiter
}

// maxAccessAnswers bounds the answers remembered for the callers of one
// namespace.
const maxAccessAnswers = 8192

// Defaults for the reviews of one namespace's callers: 50 a second, bursts
// of 500 (a first list of a namespace whose grants name each of hundreds
// of tools).
const (
	DefaultNamespaceReviewRate  = rate.Limit(50)
	DefaultNamespaceReviewBurst = 500
)

// space is the namespace's answers and limiter, made on first use.
func (a *SubjectAccessReviewAuthorizer) space(namespace string) *accessSpace {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.spaces == nil {
		a.spaces = map[string]*accessSpace{}
	}
	s, ok := a.spaces[namespace]
	if !ok {
		limit, burst := a.NamespaceRate, a.NamespaceBurst
		if limit <= 0 {
			limit = DefaultNamespaceReviewRate
		}
		if burst <= 0 {
			burst = DefaultNamespaceReviewBurst
		}
		s = &accessSpace{answers: cache.NewLRUExpireCacheWithClock(maxAccessAnswers, a.clock()), lim: rate.NewLimiter(limit, burst)}
		a.spaces[namespace] = s
	}
	return s
}

// reviewBackoff retries a review that failed for a reason worth retrying
// (a 5xx, a connection reset) a few times, briefly: an agent is waiting.
var reviewBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 3}

// CanCall implements Authorizer.
func (a *SubjectAccessReviewAuthorizer) CanCall(ctx context.Context, id *authn.Identity, namespace, tool string) (bool, error) {
	return a.review(ctx, id, namespace, tool)
}

// CanCallAll implements NamespaceAuthorizer: the review of the verb on
// mcptools without a name, which only a grant of every tool allows.
func (a *SubjectAccessReviewAuthorizer) CanCallAll(ctx context.Context, id *authn.Identity, namespace string) (bool, error) {
	return a.review(ctx, id, namespace, "")
}

// review answers whether id may call tool (every tool when it is empty)
// in namespace: from the answers remembered for the callers of id's
// namespace, else by one review, made once however many ask at the same
// time, within that namespace's share of reviews.
func (a *SubjectAccessReviewAuthorizer) review(ctx context.Context, id *authn.Identity, namespace, tool string) (bool, error) {
	return a.reviewOf(ctx, id, namespace, resourceTools, VerbCall, tool)
}

// resourceTools is the resource the verb call on tools is reviewed on.
const resourceTools = "mcptools"

// reviewOf is review of verb on resource (name, or every object when it
// is empty). The answers of tools keep their key; those of any other
// resource are keyed with the resource and verb in front of the name,
// which an object name (no "/") cannot be mistaken for.
func (a *SubjectAccessReviewAuthorizer) reviewOf(ctx context.Context, id *authn.Identity, namespace, resource, verb, name string) (bool, error) {
	tool := name
	if resource != resourceTools {
		tool = resource + "/" + verb + "/" + name
	}
	a.once.Do(func() {
		a.authz, a.err = authorizerfactory.DelegatingAuthorizerConfig{
			SubjectAccessReviewClient: a.Client,
			// An answer it remembered would outlive this one's TTL.
			AllowCacheTTL:       time.Nanosecond,
			DenyCacheTTL:        time.Nanosecond,
			WebhookRetryBackoff: &reviewBackoff,
		}.New()
	})
	if a.err != nil {
		return false, fmt.Errorf("building the authorizer: %w", a.err)
	}
	sp := a.space(id.Namespace)
	key := accessKey(id, namespace, tool)
	if allowed, ok := sp.answers.Get(key); ok {
		return allowed.(bool), nil
	}
	v, err, _ := a.flight.Do(key, func() (any, error) {
		if allowed, ok := sp.answers.Get(key); ok {
			return allowed, nil
		}
		if err := sp.lim.Wait(ctx); err != nil {
			return nil, fmt.Errorf("waiting for the namespace's share of access reviews: %w", err)
		}
		decision, _, err := a.authz.Authorize(ctx, authorizer.AttributesRecord{
			User:            &authn.UserInfo{Identity: *id},
			Verb:            verb,
			Namespace:       namespace,
			APIGroup:        mcpv1alpha1.GroupVersion.Group,
			APIVersion:      mcpv1alpha1.GroupVersion.Version,
			Resource:        resource,
			Name:            name,
			ResourceRequest: true,
		})
		if err != nil {
			return nil, fmt.Errorf("reviewing access: %w", err)
		}
		allowed := decision == authorizer.DecisionAllow
		ttl, def := a.DenyTTL, authn.DefaultDenyTTL
		if allowed {
			ttl, def = a.AllowTTL, authn.DefaultAllowTTL
		}
		if ttl <= 0 {
			ttl = def
		}
		sp.answers.Add(key, allowed, ttl)
		return allowed, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// accessKey names one review: every attribute CanCall sends, each
// length-prefixed so that no two reviews share a key, the extra
// attributes in order of their names.
func accessKey(id *authn.Identity, namespace, tool string) string {
	subject := id.SubjectKey()
	// Built on the stack when it fits: the one allocation is the string.
	var buf [256]byte
	b := buf[:0]
	if n := len(subject) + len(namespace) + len(tool) + 16; n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = append(b, subject...)
	b = authn.AppendKeyField(b, namespace)
	b = authn.AppendKeyField(b, tool)
	return string(b)
}

// clock is the authorizer's clock: Clock, or the real one.
func (a *SubjectAccessReviewAuthorizer) clock() clock.PassiveClock {
	if a.Clock == nil {
		return clock.RealClock{}
	}
	return a.Clock
}
