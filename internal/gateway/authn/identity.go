package authn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/governance"
)

// Identity is an authenticated caller: a ServiceAccount, as TokenReview
// reported it, or a person (or an agent outside the cluster) whose OAuth
// access token an administrator-trusted issuer signed, mapped onto a
// Kubernetes user as the API server maps it. Namespace is the
// ServiceAccount's, or the one a person's request named in its path.
type Identity struct {
	Username  string
	UID       string
	Groups    []string
	Extra     map[string][]string
	Namespace string
	// ServiceAccount is the ServiceAccount's name; empty for a person.
	ServiceAccount string
	// Issuer is the issuer of a person's access token; empty for a
	// ServiceAccount.
	Issuer string

	// subject is SubjectKey, computed once when the identity is made from
	// a review or a token; the fields above are not changed after that.
	subject string
}

// SubjectKey names the subject an authorisation review is made as: user
// name, UID, groups and extra, each length-prefixed so that no two
// subjects share a key. An identity made by the authenticators carries it
// computed; one written out by hand (a test's) computes it on each call.
func (id *Identity) SubjectKey() string {
	if id.subject != "" {
		return id.subject
	}
	return subjectKey(id)
}

func subjectKey(id *Identity) string {
	n := 32 + len(id.Username) + len(id.UID)
	for _, g := range id.Groups {
		n += len(g) + 4
	}
	for k, vs := range id.Extra {
		n += len(k) + 8
		for _, v := range vs {
			n += len(v) + 4
		}
	}
	b := make([]byte, 0, n)
	b = AppendKeyField(b, id.Username)
	b = AppendKeyField(b, id.UID)
	b = strconv.AppendInt(b, int64(len(id.Groups)), 10)
	b = append(b, ';')
	for _, g := range id.Groups {
		b = AppendKeyField(b, g)
	}
	b = strconv.AppendInt(b, int64(len(id.Extra)), 10)
	b = append(b, ';')
	for _, k := range slices.Sorted(maps.Keys(id.Extra)) {
		b = AppendKeyField(b, k)
		b = strconv.AppendInt(b, int64(len(id.Extra[k])), 10)
		b = append(b, ';')
		for _, v := range id.Extra[k] {
			b = AppendKeyField(b, v)
		}
	}
	return string(b)
}

// AppendKeyField appends s length-prefixed, as the fields of a key are.
func AppendKeyField(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// IsServiceAccount reports whether the caller is a ServiceAccount.
func (id *Identity) IsServiceAccount() bool { return id.ServiceAccount != "" }

// Key names the caller among the callers of its namespace, for the
// budgets and the bounds per caller: "<namespace>/<serviceaccount>" for a
// ServiceAccount, "<namespace>/user:<username>" for a person (a
// ServiceAccount's name holds no colon, so the two never meet).
func (id *Identity) Key() string {
	if id.IsServiceAccount() {
		return id.Namespace + "/" + id.ServiceAccount
	}
	return id.Namespace + "/user:" + id.Username
}

// ErrUnauthenticated is returned for a missing, invalid or wrongly bound
// token; the caller gets 401 and learns nothing else.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticator turns a bearer token into an Identity.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Identity, error)
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
	// NewTokenRate and NewTokenBurst limit the reviews of tokens never
	// seen to authenticate (tokenshape.go); zero means the defaults.
	NewTokenRate  rate.Limit
	NewTokenBurst int

	once   sync.Once
	cached authenticator.Token
	known  *knownTokens
	shapes *shapes
}

// Authenticate implements Authenticator.
func (a *TokenReviewAuthenticator) Authenticate(ctx context.Context, token string) (*Identity, error) {
	// Judged by this machine's time, as the API server judges it by its
	// own, never by a clock a test moved.
	a.once.Do(a.init)
	if token == "" {
		return nil, ErrUnauthenticated
	}
	plausible, reviewed := a.shapes.plausible(token, time.Now())
	if !plausible {
		// Not a ServiceAccount token for this audience, or expired: the
		// review would say so, and is not made.
		return nil, ErrUnauthenticated
	}
	if reviewed != nil {
		// Answered by a review within the allow TTL.
		out := *reviewed
		return &out, nil
	}
	// The audience is part of the cache key.
	ctx = authenticator.WithAudiences(ctx, authenticator.Audiences{a.Audience})
	resp, ok, err := a.cached.AuthenticateToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if !ok || resp == nil {
		return nil, ErrUnauthenticated
	}
	id, _ := resp.User.(*UserInfo)
	if id == nil {
		return nil, ErrUnauthenticated
	}
	out := id.Identity
	return &out, nil
}

// init builds what the authenticator keeps, once.
func (a *TokenReviewAuthenticator) init() {
	// A failed review is an error and is not cached (cacheErrs false): it
	// did not happen. A rejected token is an answer and is.
	a.cached = tokencache.New(tokenReviewer{a}, false, ttlOr(a.AllowTTL, DefaultAllowTTL), ttlOr(a.DenyTTL, DefaultDenyTTL))
	a.known = newKnownTokens(a.NewTokenRate, a.NewTokenBurst)
	a.shapes = newShapes(a.Audience)
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
	now := time.Now()
	fp := r.a.known.fingerprint(token)
	if !r.a.known.mayReview(fp, now) {
		return nil, false, ErrNewTokenReviewsThrottled
	}
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{r.a.Audience}}}
	if err := r.a.Client.Create(ctx, tr); err != nil {
		return nil, false, fmt.Errorf("reviewing the token: %w", err)
	}
	id := identityFrom(tr, r.a.Audience)
	if id == nil {
		return nil, false, nil
	}
	// Its next review, when the cached answer expires, is a re-review.
	allow := ttlOr(r.a.AllowTTL, DefaultAllowTTL)
	r.a.known.authenticated(fp, now, now.Add(2*allow+time.Minute))
	// The answer holds from the time the review was asked for, so never
	// longer than the review cache holds it.
	r.a.shapes.reviewed(token, id, now.Add(allow))
	return &authenticator.Response{User: &UserInfo{*id}, Audiences: authenticator.Audiences{r.a.Audience}}, true, nil
}

// UserInfo carries an Identity through the apiserver's cache, which
// stores a user.Info.
type UserInfo struct{ Identity }

func (i *UserInfo) GetName() string               { return i.Username }
func (i *UserInfo) GetUID() string                { return i.UID }
func (i *UserInfo) GetGroups() []string           { return i.Groups }
func (i *UserInfo) GetExtra() map[string][]string { return i.Extra }

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
	id := &Identity{Username: st.User.Username, UID: st.User.UID, Groups: st.User.Groups, Extra: extra, Namespace: ns, ServiceAccount: sa}
	id.subject = subjectKey(id)
	return id
}

func serviceAccountOf(username string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(username, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != ""
}

// PolicyCaller is the caller as an McpAccessPolicy names it.
func (id *Identity) PolicyCaller() governance.Caller {
	return governance.Caller{Namespace: id.Namespace, ServiceAccount: id.ServiceAccount, User: id.Username, Groups: id.Groups}
}
