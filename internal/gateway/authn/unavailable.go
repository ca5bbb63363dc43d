package authn

import (
	"context"
	"errors"
	"net/http"
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
