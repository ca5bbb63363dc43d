package authn

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Identifier is the gateway's first stage: who calls. It answers 429 to a
// token that keeps failing its review, 401 to a request without a token
// the Authenticator accepts, and 503 with Retry-After when the review
// could not be made; a request it lets through carries its Identity
// (IdentityOf).
type Identifier struct {
	authn Authenticator
	bad   *badTokens
	clock clock.PassiveClock
}

// NewIdentifier returns the identify stage for a. rate and burst limit,
// per presented token, requests whose token failed its review (zero means
// DefaultUnauthenticatedRate and DefaultUnauthenticatedBurst); clk nil is
// the real clock.
func NewIdentifier(a Authenticator, limit rate.Limit, burst int, clk clock.PassiveClock) *Identifier {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Identifier{authn: a, bad: newBadTokens(limit, burst, 0), clock: clk}
}

// Handler passes to next the requests whose caller is identified.
func (i *Identifier) Handler(next http.Handler) http.Handler {
	verified := auth.RequireBearerToken(i.verify, &auth.RequireBearerTokenOptions{})(next)
	return i.bad.middleware(i.clock, reviewUnavailable(verified))
}

// RememberedBadTokens is how many tokens are remembered as having failed
// their review.
func (i *Identifier) RememberedBadTokens() int { return i.bad.len() }

// verify authenticates a bearer token. A token the review does not accept
// is a plain 401; a review that could not be made is a 503. A token
// whose review failed within the negative TTL is refused without another
// review; only a failed review charges the token, and only that token.
func (i *Identifier) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
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
			markReviewFailed(ctx)
			return nil, errReviewUnavailable
		}
		return nil, auth.ErrInvalidToken
	}
	if remembered {
		i.bad.forget(fp)
	}
	return &auth.TokenInfo{
		// Binds the MCP session to this identity: another token cannot use it.
		UserID:     id.UID + "/" + id.Username,
		Expiration: i.clock.Now().Add(time.Minute),
		Extra:      map[string]any{"identity": id},
	}, nil
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
