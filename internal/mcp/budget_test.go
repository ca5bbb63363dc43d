package mcp

import (
	"testing"
	"time"
)

func TestBudgetLegTimeout(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		total, elapsed time.Duration
		want           time.Duration
		exhausted      bool
	}{
		{20 * time.Second, 0, 20 * time.Second, false},
		{20 * time.Second, 800 * time.Millisecond, 20 * time.Second, false}, // 19.2s rounds up
		{20 * time.Second, time.Second, 19 * time.Second, false},            // whole seconds stay
		{20 * time.Second, 19*time.Second + time.Nanosecond, time.Second, false},
		{7 * time.Second, 6700 * time.Millisecond, time.Second, false}, // 0.3s left: the 1s floor
		{7 * time.Second, 7 * time.Second, time.Second, true},          // nothing left: refused
		{7 * time.Second, 9 * time.Second, time.Second, true},
	}
	for _, c := range cases {
		now := start
		b := newBudget(c.total, func() time.Time { return now })
		now = start.Add(c.elapsed)
		if got := b.exhausted(); got != c.exhausted {
			t.Errorf("total %v elapsed %v: exhausted %v, want %v", c.total, c.elapsed, got, c.exhausted)
		}
		if got := b.legTimeout(); got != c.want {
			t.Errorf("total %v elapsed %v: leg %v, want %v", c.total, c.elapsed, got, c.want)
		}
		if got := b.elapsed(); got != c.elapsed {
			t.Errorf("elapsed %v, want %v", got, c.elapsed)
		}
	}
}

func TestBudgetDefault(t *testing.T) {
	now := time.Now()
	for _, total := range []time.Duration{0, -time.Second} {
		b := newBudget(total, func() time.Time { return now })
		if b.total != DefaultTimeout || b.legTimeout() != DefaultTimeout {
			t.Errorf("budget %v: total %v leg %v, want the %v default", total, b.total, b.legTimeout(), DefaultTimeout)
		}
	}
}
