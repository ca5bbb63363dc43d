package authn

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// When the API server cannot answer (restarting, overloaded, TokenReview
// or SubjectAccessReview failing), or an identity provider cannot be
// reached, the gateway cannot decide who calls or what they may use. It
// refuses, and says that it could not decide rather than that the caller
// is unknown or has no tools: the agent should try again, not fetch a new
// token or conclude that its tools are gone.

// errReviewUnavailable is verify's answer when the token could not be
// reviewed; answers turns it into 503 with Retry-After.
var errReviewUnavailable = errors.New("the gateway could not review the token now (TokenReview failed); try again")

// reviewRetryAfter is the Retry-After of a request refused because its
// token could not be reviewed, in seconds.
const reviewRetryAfter = "1"

// outcome is what verify decided about a request beyond the SDK's bearer
// middleware's own answers: a status for the error it returned (which
// the middleware writes as 500), a Retry-After, and the WWW-Authenticate
// challenge of a 401.
type outcome struct {
	code       int
	retryAfter string
	challenge  string
	resource   *oauthresource.Validator
}

type outcomeKey struct{}

func outcomeOf(ctx context.Context) *outcome {
	o, _ := ctx.Value(outcomeKey{}).(*outcome)
	return o
}

// answer records, for answers, the status (and Retry-After) of the
// request with ctx.
func answer(ctx context.Context, code int, retryAfter string) {
	if o := outcomeOf(ctx); o != nil {
		o.code, o.retryAfter = code, retryAfter
	}
}

// challenge records the WWW-Authenticate value of the request's 401.
func challenge(ctx context.Context, value string) {
	if o := outcomeOf(ctx); o != nil {
		o.challenge = value
	}
}

// withResource records that the request is for resource: its 401s
// challenge with that resource's metadata (made only for a 401: a request
// that passes does not pay for it).
func withResource(ctx context.Context, resource *oauthresource.Validator) context.Context {
	return context.WithValue(ctx, outcomeKey{}, &outcome{resource: resource})
}

// resourceOf is the resource the request is for (withResource).
func resourceOf(ctx context.Context) *oauthresource.Validator {
	if o := outcomeOf(ctx); o != nil {
		return o.resource
	}
	return nil
}

// answers writes what verify decided instead of the 500 the SDK's bearer
// middleware gives an error that is not ErrInvalidToken (503 with
// Retry-After, 403), and adds the challenge to a 401. Every other status
// passes as written.
func answers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := outcomeOf(r.Context())
		if o == nil {
			o = &outcome{}
			r = r.WithContext(context.WithValue(r.Context(), outcomeKey{}, o))
		}
		next.ServeHTTP(&answerWriter{ResponseWriter: w, o: o}, r)
	})
}

type answerWriter struct {
	http.ResponseWriter
	o *outcome
}

func (w *answerWriter) WriteHeader(code int) {
	switch {
	case w.o.code != 0 && code == http.StatusInternalServerError:
		if w.o.retryAfter != "" {
			w.Header().Set("Retry-After", w.o.retryAfter)
		}
		code = w.o.code
	case code == http.StatusUnauthorized && w.o.challenge != "":
		w.Header().Set("WWW-Authenticate", w.o.challenge)
	case code == http.StatusUnauthorized && w.o.resource != nil:
		w.Header().Set("WWW-Authenticate", w.o.resource.Challenge())
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush and Unwrap keep streaming responses working through the wrapper.
func (w *answerWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
