package controller

import (
	"errors"
	"fmt"
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// The error contract. Every failure a reconcile meets is classified once,
// where it is observed, into one of three classes, and the class alone
// decides what controller-runtime is told:
//
//   - waiting: something outside the object has to change first, and
//     nothing watched will say when it has: a Secret or key not there yet
//     (Secrets are not watched, docs/adr/003-secret-access.md), a profile
//     not there or not Ready, or a remote server that is down, slow,
//     refuses the credential (a rotated Secret cures a 401 or 403) or
//     breaks the protocol. The condition says why, and the object is looked
//     at again after a fixed delay: a waitingError (15 s for a missing
//     reference) or the next scheduled import or probe (the health
//     interval). Waiting is not an error to controller-runtime.
//   - stalling: only a person can cure it, by changing the spec: the URL
//     resolves to an address the operator may not dial, it redirects, a
//     credential would go over plain http, or the catalog exceeds the
//     spec's ceilings. The object is marked Stalled=True (kstatus: Failed),
//     the reconcile returns nil and nothing is scheduled. A change to the
//     spec, a request annotation, a tool enabled or disabled, or the
//     profile's readiness re-triggers it, and whatever was due runs again
//     at once.
//   - transient: anything else, an API server error above all. The error
//     is returned and controller-runtime retries with backoff.
//
// Stalled therefore means "needs a person": no failure that a Secret
// rotation cures stalls, since nothing would notice the cure. A catalog over
// the spec's ceilings (pages, tools, bytes) stalls although the server
// could shrink it: the ceilings are the person's to raise, and a server
// that shrinks its catalog is imported again on a request annotation
// (ADR 007).

// waitingError says the reconcile cannot finish until something outside the
// controller changes (a Secret appears, say) and should be retried after a
// fixed delay rather than with error backoff. It is not returned to
// controller-runtime as an error.
type waitingError struct {
	after  time.Duration
	reason string
	err    error
}

func (e *waitingError) Error() string { return fmt.Sprintf("waiting (%s): %v", e.reason, e.err) }
func (e *waitingError) Unwrap() error { return e.err }

// stallingError says the reconcile cannot make progress until a human
// changes the spec. The object is marked Stalled and is not requeued.
type stallingError struct {
	reason string
	err    error
}

func (e *stallingError) Error() string { return fmt.Sprintf("stalled (%s): %v", e.reason, e.err) }
func (e *stallingError) Unwrap() error { return e.err }

func asWaiting(err error) (*waitingError, bool) {
	var w *waitingError
	ok := errors.As(err, &w)
	return w, ok
}

func asStalling(err error) (*stallingError, bool) {
	var s *stallingError
	ok := errors.As(err, &s)
	return s, ok
}

// classifyReference turns a failure to resolve what an object references
// into its class: a reference not there yet waits, and so does a CA bundle
// that cannot be used (it is cured by creating, labelling or editing the
// ConfigMap or Secret, which nothing watches, so a stall would never notice
// the cure); anything else is transient.
func classifyReference(err error, retry time.Duration) error {
	var missing *credentials.MissingError
	if errors.As(err, &missing) {
		return &waitingError{after: retry, reason: missing.Reason, err: missing.Err}
	}
	var unusable *credentials.UnusableCABundleError
	if errors.As(err, &unusable) {
		return &waitingError{after: retry, reason: mcpv1alpha1.ReasonCABundleNotUsable, err: unusable}
	}
	return err
}

// classifyOperation says whether a failed import or probe, already recorded
// as reason and message, stalls: it returns a *stallingError for a failure
// only a spec change cures, and nil for one that waits for the next
// scheduled attempt.
func classifyOperation(err error, reason, message string) error {
	switch mcp.KindOf(err) {
	case mcp.KindBlockedAddress, mcp.KindRedirect, mcp.KindInsecureCredential, mcp.KindPageLimit, mcp.KindToolLimit, mcp.KindCatalogTooLarge:
		return &stallingError{reason: reason, err: errors.New(message)}
	}
	return nil
}
