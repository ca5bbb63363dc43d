package authn

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// Identifier is the gateway's first stage: who calls. It answers 429 to a
// token that keeps failing its review, 401 to a request without a token
// the Authenticator (or the OAuth validator) accepts, 503 with Retry-After
// when the review could not be made or the identity provider could not be
// reached, and 403 to a caller at a namespace's endpoint it may not use
// as that namespace's caller; a request it lets through carries its
// Identity (IdentityOf).
type Identifier struct {
	authn Authenticator
	// oauth validates access tokens that are not ServiceAccount tokens;
	// nil accepts ServiceAccount tokens only.
	oauth *oauthresource.Validator
	bad   *badTokens
	clock clock.PassiveClock
}

// NewIdentifier returns the identify stage for a and, when oauth is not
// nil, for OAuth access tokens oauth validates. rate and burst limit, per
// presented token, requests whose token failed its review (zero means
// DefaultUnauthenticatedRate and DefaultUnauthenticatedBurst); clk nil is
// the real clock.
func NewIdentifier(a Authenticator, oauth *oauthresource.Validator, limit rate.Limit, burst int, clk clock.PassiveClock) *Identifier {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Identifier{authn: a, oauth: oauth, bad: newBadTokens(limit, burst, 0), clock: clk}
}

// Handler passes to next the requests whose caller is identified. At a
// path with the PathNamespace wildcard, the request is for that
// namespace: a person's token must be issued for that namespace's
// resource, and a ServiceAccount may use its own namespace's only.
func (i *Identifier) Handler(next http.Handler) http.Handler {
	verified := auth.RequireBearerToken(i.verify, &auth.RequireBearerTokenOptions{})(next)
	answered := i.bad.middleware(i.clock, answers(verified))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns := r.PathValue(PathNamespace)
		if ns != "" && !validNamespace(ns) {
			http.NotFound(w, r)
			return
		}
		if i.oauth != nil {
			resource := i.oauth
			if ns != "" {
				var err error
				if resource, err = i.oauth.ForResource(NamespacedResource(i.oauth.Metadata().Resource, ns)); err != nil {
					http.NotFound(w, r)
					return
				}
			}
			r = r.WithContext(withResource(r.Context(), resource))
		}
		answered.ServeHTTP(w, r)
	})
}

// MetadataHandler serves the protected resource metadata (RFC 9728) of
// the gateway's resource, and of each namespace's endpoint at
// "/.well-known/oauth-protected-resource/namespaces/<namespace>/...";
// nil when no OAuth access token is accepted. Mount it, outside the
// bearer check, at MetadataPatterns.
func (i *Identifier) MetadataHandler() http.Handler {
	if i.oauth == nil {
		return nil
	}
	base := i.oauth.MetadataHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns := r.PathValue(PathNamespace)
		if ns == "" {
			base.ServeHTTP(w, r)
			return
		}
		if !validNamespace(ns) {
			http.NotFound(w, r)
			return
		}
		v, err := i.oauth.ForResource(NamespacedResource(i.oauth.Metadata().Resource, ns))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		v.MetadataHandler().ServeHTTP(w, r)
	})
}

// MetadataPatterns are the patterns (http.ServeMux's) MetadataHandler
// answers at: the gateway resource's metadata paths, and the path-suffixed
// form of each namespace's endpoint. None when no OAuth access token is
// accepted.
func (i *Identifier) MetadataPatterns() []string {
	if i.oauth == nil {
		return nil
	}
	res := i.oauth.Metadata().Resource
	patterns := i.oauth.MetadataPaths()
	u, err := url.Parse(NamespacedResource(res, "{"+PathNamespace+"}"))
	if err == nil {
		patterns = append(patterns, oauthresource.WellKnownPath+strings.TrimSuffix(u.Path, "/"))
	}
	return patterns
}

// RememberedBadTokens is how many tokens are remembered as having failed
// their review.
func (i *Identifier) RememberedBadTokens() int { return i.bad.len() }

// verify authenticates a bearer token. A token the review does not accept
// is a plain 401; a review that could not be made is a 503. A token
// whose review failed within the negative TTL is refused without another
// review; only a failed review charges the token, and only that token.
func (i *Identifier) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	if i.oauth != nil && !serviceAccountShaped(token) {
		return i.verifyAccessToken(ctx, token, r)
	}
	// While no token is remembered as bad, a good one costs no
	// fingerprint; one is taken when the review fails.
	var fp fingerprint
	remembered := !i.bad.none()
	if remembered {
		fp = i.bad.fingerprint(token)
	}
	if remembered && i.bad.knownBad(fp, i.clock.Now()) {
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
		return nil, auth.ErrInvalidToken
	}
	id, err := i.authn.Authenticate(ctx, token)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			// A review that could not be made is not the token's failure.
			if !remembered {
				fp = i.bad.fingerprint(token)
			}
			i.bad.failed(fp, i.clock.Now())
			metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
		} else {
			if errors.Is(err, ErrNewTokenReviewsThrottled) {
				// Not logged: a client sending new tokens by the thousand
				// would fill the log.
				metrics.GatewayRefusals.WithLabelValues(audit.RefusedNewTokensThrottled).Inc()
			} else {
				logging.FromContext(ctx, logging.Gateway).Error(err, "authenticating a caller failed")
				metrics.GatewayRefusals.WithLabelValues(audit.RefusedDecisionFailed).Inc()
			}
			// Not a 401: the token may be good (unavailable.go).
			answer(ctx, http.StatusServiceUnavailable, reviewRetryAfter)
			return nil, errReviewUnavailable
		}
		return nil, auth.ErrInvalidToken
	}
	if remembered {
		i.bad.forget(fp)
	}
	if ns := r.PathValue(PathNamespace); ns != "" && ns != id.Namespace {
		// Not a bad token: the caller is who it says, at an endpoint it
		// may not use.
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
		answer(ctx, http.StatusForbidden, "")
		return nil, errOtherNamespace
	}
	return tokenInfo(id, i.clock.Now()), nil
}

// verifyAccessToken authenticates an OAuth access token for the resource
// of the request's endpoint. A refused token is a 401 naming why in its
// challenge, and is charged as a ServiceAccount token that failed its
// review is; an identity provider that could not be reached is a 503 with
// its Retry-After, and the token is not charged.
func (i *Identifier) verifyAccessToken(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	resource := resourceOf(ctx)
	// As for a ServiceAccount token: while no token is remembered as bad,
	// a good one costs no fingerprint.
	var fp fingerprint
	remembered := !i.bad.none()
	if remembered {
		fp = i.bad.fingerprint(token)
	}
	if remembered && i.bad.knownBad(fp, i.clock.Now()) {
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
		challenge(ctx, resource.InvalidTokenChallenge(nil))
		return nil, auth.ErrInvalidToken
	}
	oid, err := resource.Validate(ctx, token)
	var refused *oauthresource.TokenError
	var unavailable *oauthresource.UnavailableError
	switch {
	case errors.As(err, &refused):
		if !remembered {
			fp = i.bad.fingerprint(token)
		}
		i.bad.failed(fp, i.clock.Now())
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
		challenge(ctx, resource.InvalidTokenChallenge(refused))
		return nil, auth.ErrInvalidToken
	case errors.As(err, &unavailable):
		// Its text names the issuer and the stage, never the token.
		logging.FromContext(ctx, logging.Gateway).Error(err, "checking an access token failed")
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedDecisionFailed).Inc()
		answer(ctx, http.StatusServiceUnavailable, unavailable.RetryAfterSeconds())
		return nil, unavailable
	case err != nil:
		logging.FromContext(ctx, logging.Gateway).Error(err, "checking an access token failed")
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedDecisionFailed).Inc()
		answer(ctx, http.StatusServiceUnavailable, reviewRetryAfter)
		return nil, errReviewUnavailable
	}
	if remembered {
		i.bad.forget(fp)
	}
	ns := r.PathValue(PathNamespace)
	if ns == "" {
		metrics.GatewayRefusals.WithLabelValues(audit.RefusedUnauthenticated).Inc()
		answer(ctx, http.StatusForbidden, "")
		return nil, errNoNamespace
	}
	return tokenInfo(personIdentity(oid, ns), i.clock.Now()), nil
}

// errOtherNamespace and errNoNamespace are the 403 answers (as text) to a
// ServiceAccount at another namespace's endpoint and to a person at the
// endpoint without a namespace.
var (
	errOtherNamespace = errors.New("a ServiceAccount calls at its own namespace's endpoint only (" + Path + " or /" + NamespaceSegment + "/<its namespace>" + Path + ")")
	errNoNamespace    = errors.New("an OAuth access token names the namespace to serve in the endpoint: call /" + NamespaceSegment + "/<namespace>" + Path + " with a token issued for that endpoint")
)

// Path is the last segment of the gateway's MCP endpoints.
const Path = "/mcp"

// tokenInfo is what the SDK's bearer middleware keeps of an identity.
func tokenInfo(id *Identity, now time.Time) *auth.TokenInfo {
	return &auth.TokenInfo{
		// Binds the MCP session to this identity and namespace: another
		// token cannot use it, nor the same person at another namespace's
		// endpoint.
		UserID:     id.UID + "/" + id.Username + "/" + id.Namespace,
		Expiration: now.Add(time.Minute),
		Extra:      map[string]any{"identity": id},
	}
}

// IdentityOf is the identity the Identifier found for a request's token;
// nil without one.
func IdentityOf(ti *auth.TokenInfo) *Identity {
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra["identity"].(*Identity)
	return id
}
