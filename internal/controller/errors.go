package controller

import (
	"errors"
	"fmt"
	"time"
)

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
