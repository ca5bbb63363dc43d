package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mcp-catalog/operator/internal/gateway/audit"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/metrics"
)

// When the API server cannot answer (restarting, overloaded, TokenReview
// or SubjectAccessReview failing), the gateway cannot decide who calls or
// what they may use. It refuses, and says that it could not decide rather
// than that the caller is unknown or has no tools: the agent should try
// again, not fetch a new token or conclude that its tools are gone.

// errReviewUnavailable is verify's answer when the token could not be
// reviewed; reviewUnavailable turns it into 503 with Retry-After.
var errReviewUnavailable = errors.New("the gateway could not review the token now (TokenReview failed); try again")

// reviewRetryAfter is the Retry-After of a request refused because its
// token could not be reviewed, in seconds.
const reviewRetryAfter = "1"

type reviewFailedKey struct{}

// markReviewFailed records, for reviewUnavailable, that the token of the
// request with ctx could not be reviewed.
func markReviewFailed(ctx context.Context) {
	if failed, ok := ctx.Value(reviewFailedKey{}).(*bool); ok {
		*failed = true
	}
}

// reviewUnavailable answers a request whose token could not be reviewed
// with 503 Service Unavailable and Retry-After, instead of the 500 the
// SDK's bearer middleware gives an error that is not ErrInvalidToken. Only
// that answer changes: every other status passes as written.
func reviewUnavailable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := new(bool)
		next.ServeHTTP(&reviewWriter{ResponseWriter: w, failed: failed}, r.WithContext(context.WithValue(r.Context(), reviewFailedKey{}, failed)))
	})
}

type reviewWriter struct {
	http.ResponseWriter
	failed *bool
}

func (w *reviewWriter) WriteHeader(code int) {
	if *w.failed && code == http.StatusInternalServerError {
		w.Header().Set("Retry-After", reviewRetryAfter)
		code = http.StatusServiceUnavailable
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush and Unwrap keep streaming responses working through the wrapper.
func (w *reviewWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *reviewWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// undecidedMessage answers a request whose tools could not be decided.
const undecidedMessage = "the gateway could not decide which tools the caller may use now (the Kubernetes API is unavailable); try again"

// undecidedServer stands in where the tools a caller may use cannot be
// decided (a SubjectAccessReview or a read failed; the error is logged).
// Every request on it, initialize included, is answered with a JSON-RPC
// error saying so: no session begins that offers nothing for its whole
// life, and a call is not answered "unknown tool".
func (g *Gateway) undecidedServer() *sdk.Server {
	s := g.bareServer()
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			metrics.GatewayRefusals.WithLabelValues(audit.RefusedDecisionFailed).Inc()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: undecidedMessage}
		}
	})
	return s
}
