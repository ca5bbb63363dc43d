// Package poll is how tests wait for something to happen: a condition is
// checked until it holds, and a failure says what was awaited and why it
// last did not hold, instead of a sleep that hopes long enough has passed.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 100 * time.Millisecond

// Until checks cond every Interval until it returns nil, and fails tb if
// it has not within timeout. cond returns why the awaited thing has not
// happened yet; the last reason is in the failure message, after what.
// Call it from the test's goroutine, as tb.Fatalf requires.
func Until(tb testing.TB, timeout time.Duration, what string, cond func() error) {
	tb.Helper()
	UntilEvery(tb, timeout, Interval, what, cond)
}

// Wait checks cond every interval until it returns nil or ctx ends; then
// it returns an error wrapping cond's last reason. It is for code that
// cannot fail a test itself (a benchmark's setup returning an error, a
// goroutine).
func Wait(ctx context.Context, interval time.Duration, cond func() error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// UntilEvery is Until checking every interval, for a test that must act
// soon after the condition starts to hold.
func UntilEvery(tb testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := Wait(ctx, interval, cond); err != nil {
		tb.Fatalf("waiting for %s: not within %s: %v", what, timeout, err)
	}
}
