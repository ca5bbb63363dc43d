package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
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

// Default cache lifetimes of review answers. An allowed answer is kept
// longer than a denied one: revoking access takes up to the allowed TTL to
// show, while a newly granted RoleBinding or a freshly mounted token should
// work soon.
const (
	DefaultAllowTTL = 30 * time.Second
	DefaultDenyTTL  = 5 * time.Second
)

// TokenReviewAuthenticator verifies ServiceAccount tokens with TokenReview,
// requiring them to be bound to Audience. Answers are cached by
// k8s.io/apiserver's token cache: keyed by an HMAC of the token (never the
// token), authenticated and rejected tokens with their own TTL, each entry
// expiring on its own, and concurrent reviews of one token made once.
type TokenReviewAuthenticator struct {
	Client   client.Client
	Audience string
	// AllowTTL and DenyTTL are how long an authenticated and a rejected
	// token are remembered; zero means the defaults.
	AllowTTL, DenyTTL time.Duration

	once   sync.Once
	cached authenticator.Token
}

// Authenticate implements Authenticator.
func (a *TokenReviewAuthenticator) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	a.once.Do(func() {
		// A failed review is an error and is not cached (cacheErrs false):
		// it did not happen. A rejected token is an answer and is.
		a.cached = tokencache.New(tokenReviewer{a}, false, ttlOr(a.AllowTTL, DefaultAllowTTL), ttlOr(a.DenyTTL, DefaultDenyTTL))
	})
	// The audience is part of the cache key.
	ctx = authenticator.WithAudiences(ctx, authenticator.Audiences{a.Audience})
	resp, ok, err := a.cached.AuthenticateToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if !ok || resp == nil {
		return nil, ErrUnauthenticated
	}
	id, _ := resp.User.(*identityInfo)
	if id == nil {
		return nil, ErrUnauthenticated
	}
	out := id.Identity
	return &out, nil
}

func ttlOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// tokenReviewer makes one TokenReview. It answers "not authenticated"
// without an error for any token the review does not accept, so that the
// cache keeps that answer; only a review that could not be made is an
// error.
type tokenReviewer struct{ a *TokenReviewAuthenticator }

func (r tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{r.a.Audience}}}
	if err := r.a.Client.Create(ctx, tr); err != nil {
		return nil, false, fmt.Errorf("reviewing the token: %w", err)
	}
	id := identityFrom(tr, r.a.Audience)
	if id == nil {
		return nil, false, nil
	}
	return &authenticator.Response{User: &identityInfo{*id}, Audiences: authenticator.Audiences{r.a.Audience}}, true, nil
}

// identityInfo carries an Identity through the apiserver's cache, which
// stores a user.Info.
type identityInfo struct{ Identity }

func (i *identityInfo) GetName() string               { return i.Username }
func (i *identityInfo) GetUID() string                { return i.UID }
func (i *identityInfo) GetGroups() []string           { return i.Groups }
func (i *identityInfo) GetExtra() map[string][]string { return i.Extra }

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
// "call" the McpTool (verb call on mcptools.mcp.catalog.dev, by name). It is
// k8s.io/apiserver's delegating authorizer, as the metrics endpoint uses:
// allowed and denied answers cached apart, each entry expiring on its own.
type SubjectAccessReviewAuthorizer struct {
	Client authorizationv1client.AuthorizationV1Interface
	// AllowTTL and DenyTTL are how long an allowed and a denied answer are
	// remembered; zero means the defaults.
	AllowTTL, DenyTTL time.Duration

	once  sync.Once
	authz authorizer.Authorizer
	err   error
}

// reviewBackoff retries a review that failed for a reason worth retrying
// (a 5xx, a connection reset) a few times, briefly: an agent is waiting.
var reviewBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 3}

// CanCall implements Authorizer.
func (a *SubjectAccessReviewAuthorizer) CanCall(ctx context.Context, id *Identity, namespace, tool string) (bool, error) {
	a.once.Do(func() {
		a.authz, a.err = authorizerfactory.DelegatingAuthorizerConfig{
			SubjectAccessReviewClient: a.Client,
			AllowCacheTTL:             ttlOr(a.AllowTTL, DefaultAllowTTL),
			DenyCacheTTL:              ttlOr(a.DenyTTL, DefaultDenyTTL),
			WebhookRetryBackoff:       &reviewBackoff,
		}.New()
	})
	if a.err != nil {
		return false, fmt.Errorf("building the authorizer: %w", a.err)
	}
	decision, _, err := a.authz.Authorize(ctx, authorizer.AttributesRecord{
		User:            &identityInfo{*id},
		Verb:            VerbCall,
		Namespace:       namespace,
		APIGroup:        mcpv1alpha1.GroupVersion.Group,
		APIVersion:      mcpv1alpha1.GroupVersion.Version,
		Resource:        "mcptools",
		Name:            tool,
		ResourceRequest: true,
	})
	if err != nil {
		return false, fmt.Errorf("reviewing access: %w", err)
	}
	return decision == authorizer.DecisionAllow, nil
}
