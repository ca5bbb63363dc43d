package mcp

import "time"

// DefaultTimeout is the budget of one whole operation when Endpoint.Timeout is 0.
const DefaultTimeout = 20 * time.Second

// minLegTimeout is the floor for a single leg. A leg is never granted less:
// zero would mean "no timeout" to most HTTP stacks, and a sub-second grant
// would make the last leg of a nearly spent budget fail for no reason.
const minLegTimeout = time.Second

// budget is the time one operation may spend across all of its legs
// (discovery, handshake, notification, pages, call, session teardown).
//
// It reads the operation's clock, which is the wall clock with Go's monotonic
// reading unless Options.Clock replaced it.
type budget struct {
	total    time.Duration
	start    time.Time
	deadline time.Time
	now      func() time.Time
}

func newBudget(total time.Duration, now func() time.Time) *budget {
	if total <= 0 {
		total = DefaultTimeout
	}
	start := now()
	return &budget{total: total, start: start, deadline: start.Add(total), now: now}
}

// remaining is what is left of the budget; negative once overspent.
func (b *budget) remaining() time.Duration { return b.deadline.Sub(b.now()) }

// exhausted reports whether the next leg must not be sent.
func (b *budget) exhausted() bool { return b.remaining() <= 0 }

// legTimeout is the timeout the next leg is granted: what remains, rounded UP
// to whole seconds and never below the floor. Rounding up bounds the overrun
// of the whole operation by under a second, while rounding down would turn a
// final 0.4s into a refusal the budget did not call for.
func (b *budget) legTimeout() time.Duration {
	r := b.remaining()
	secs := (r + time.Second - 1) / time.Second
	d := secs * time.Second
	if d < minLegTimeout {
		d = minLegTimeout
	}
	return d
}

// elapsed is the time spent since the operation started.
func (b *budget) elapsed() time.Duration { return b.now().Sub(b.start) }
