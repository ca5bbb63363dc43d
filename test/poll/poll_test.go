package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// failures records what Until reports instead of failing the test.
type failures struct {
	testing.TB
	got []string
}

func (f *failures) Helper() {}
func (f *failures) Fatalf(format string, args ...any) {
	f.got = append(f.got, fmt.Sprintf(format, args...))
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	f := &failures{}
	calls := 0
	UntilEvery(f, time.Minute, time.Millisecond, "the third call", func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if len(f.got) != 0 || calls != 3 {
		t.Fatalf("failures %q after %d calls, want none after 3", f.got, calls)
	}
}

func TestUntilSaysWhatWasAwaitedAndTheLastReason(t *testing.T) {
	f := &failures{}
	calls := 0
	UntilEvery(f, 50*time.Millisecond, time.Millisecond, "the server Ready", func() error {
		calls++
		return fmt.Errorf("Ready is False (round %d)", calls)
	})
	if len(f.got) != 1 {
		t.Fatalf("failures %q, want one", f.got)
	}
	want := fmt.Sprintf("Ready is False (round %d)", calls)
	if msg := f.got[0]; !strings.Contains(msg, "waiting for the server Ready") || !strings.Contains(msg, want) {
		t.Errorf("failure %q does not say what was awaited and %q", msg, want)
	}
}

func TestWaitStopsWithTheContextAndWrapsTheLastReason(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	last := errors.New("still not")
	calls := 0
	err := Wait(ctx, time.Millisecond, func() error {
		if calls++; calls == 3 {
			cancel()
		}
		return last
	})
	if !errors.Is(err, last) || !errors.Is(err, context.Canceled) || calls != 3 {
		t.Fatalf("Wait = %v after %d calls, want the last reason and the context's end after 3", err, calls)
	}
}
