package schedule

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var start = time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC)

// noJitter makes probe times exact, for the tests of the cadence.
func noJitter(time.Duration) time.Duration { return 0 }

func TestProbedKeepsTheCadenceOfALateProbe(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	interval := 10 * time.Second
	late := start.Add(3 * time.Second)
	for _, tc := range []struct {
		name       string
		due        time.Time // zero: never probed
		now        time.Time
		onSchedule bool
		wantFrom   time.Time
	}{
		{"first probe: from now", time.Time{}, start, true, start},
		{"on time", start, start, true, start},
		{"late by less than an interval: from when it was due", start, late, true, start},
		{"late by more than an interval: from now", start, start.Add(15 * time.Second), true, start.Add(15 * time.Second)},
		{"not due: from now", start.Add(5 * time.Second), start, true, start},
		{"an import's handshake, however late the probe: from now", start, late, false, late},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			s.Jitter = noJitter
			s.entry(key).nextProbe = tc.due
			next, _ := s.Record(key, Outcome{Probed: &Probe{Interval: interval, OnSchedule: tc.onSchedule}, Now: tc.now})
			if want := tc.wantFrom.Add(interval); !next.Equal(want) {
				t.Errorf("next probe %s, want %s", next, want)
			}
			if p := s.Plan(key, next.Add(-time.Nanosecond)); p.ProbeDue {
				t.Error("the probe is due before its time")
			}
			if p := s.Plan(key, next); !p.ProbeDue {
				t.Error("the probe is not due at its time")
			}
		})
	}
}

// Servers created together are probed together once; the jitter spreads
// their next probes over a tenth of the interval, so that they do not stay
// in step for ever. Without jitter every next probe would be the same
// instant, and this test fails.
func TestJitterSpreadsServersProbedTogether(t *testing.T) {
	s := New()
	interval := 60 * time.Second
	distinct := map[time.Time]bool{}
	earliest, latest := start.Add(time.Hour), start
	for i := range 200 {
		key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("s%d", i)}
		next, _ := s.Record(key, Outcome{Probed: &Probe{Interval: interval, OnSchedule: true}, Now: start})
		if next.Before(start.Add(interval)) || next.After(start.Add(interval+interval/10)) {
			t.Fatalf("next probe %s is outside [interval, interval + a tenth] after %s", next, start)
		}
		distinct[next] = true
		if next.Before(earliest) {
			earliest = next
		}
		if next.After(latest) {
			latest = next
		}
	}
	if len(distinct) < 100 {
		t.Errorf("200 servers probed together have only %d distinct next probes", len(distinct))
	}
	if spread := latest.Sub(earliest); spread < interval/20 {
		t.Errorf("the next probes of 200 servers span %s, less than half of the %s jitter allows", spread, interval/10)
	}
}

func TestJitterIsBoundedToATenthOfTheInterval(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	for _, tc := range []struct {
		name   string
		jitter time.Duration
		want   time.Duration
	}{
		{"negative is none", -time.Second, 0},
		{"within a tenth", 3 * time.Second, 3 * time.Second},
		{"above a tenth is a tenth", time.Minute, 10 * time.Second},
	} {
		s := New()
		s.Jitter = func(time.Duration) time.Duration { return tc.jitter }
		next, _ := s.Record(key, Outcome{Probed: &Probe{Interval: 100 * time.Second}, Now: start})
		if got := next.Sub(start) - 100*time.Second; got != tc.want {
			t.Errorf("%s: jitter %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestImportRetry(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	s := New()
	if p := s.Plan(key, start); !p.ImportRetryDue || !p.NextImportRetry.IsZero() {
		t.Fatalf("a server never imported: %+v", p)
	}
	_, retry := s.Record(key, Outcome{Import: ImportFailed, RetryAfter: time.Minute, Now: start})
	if !retry.Equal(start.Add(time.Minute)) {
		t.Fatalf("retry at %s, want a minute after the failure", retry)
	}
	if s.Plan(key, start.Add(59*time.Second)).ImportRetryDue {
		t.Error("the retry is due before its time")
	}
	if !s.Plan(key, start.Add(time.Minute)).ImportRetryDue {
		t.Error("the retry is not due at its time")
	}
	if _, retry := s.Record(key, Outcome{Import: ImportSucceeded, Now: start}); !retry.IsZero() {
		t.Errorf("a success leaves a retry at %s", retry)
	}
}

func TestForgetDropsTheVersionAndTheTimes(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	s := New()
	s.SawVersion(key, "7")
	s.Record(key, Outcome{Probed: &Probe{Interval: time.Minute}, Import: ImportFailed, RetryAfter: time.Minute, Now: start})
	if s.KnownVersion(key) != "7" {
		t.Fatal("the version seen is not kept")
	}
	s.Forget(key)
	if v := s.KnownVersion(key); v != "" {
		t.Errorf("a forgotten server still has version %q", v)
	}
	if p := s.Plan(key, start); !p.ProbeDue || !p.ImportRetryDue {
		t.Errorf("a forgotten server is not due at once: %+v", p)
	}
}

// A requested import stays requested until an import runs: a reconcile that
// only probed, or put the import off, leaves it due.
func TestRequestedImportLastsUntilAnImportRuns(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	s := New()
	if s.Plan(key, start).ImportRequested {
		t.Fatal("a new server has an import requested")
	}
	s.RequestImport(key)
	s.Record(key, Outcome{Probed: &Probe{Interval: time.Minute}, Now: start})
	if !s.Plan(key, start).ImportRequested {
		t.Fatal("a probe cleared the requested import")
	}
	for _, o := range []ImportOutcome{ImportFailed, ImportSucceeded} {
		s.RequestImport(key)
		seen := s.Plan(key, start).ImportRequests
		s.Record(key, Outcome{Import: o, RetryAfter: time.Minute, Now: start, ImportRequestsSeen: seen})
		if s.Plan(key, start).ImportRequested {
			t.Errorf("import outcome %d left the import requested", o)
		}
	}
}

// A change announced while an import was already under way (after its
// reconcile read the plan) asks for the next import.
func TestRequestDuringAnImportIsNotLost(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	s := New()
	s.RequestImport(key)
	seen := s.Plan(key, start).ImportRequests
	s.RequestImport(key) // while the import reads the list
	s.Record(key, Outcome{Import: ImportSucceeded, Now: start, ImportRequestsSeen: seen})
	if !s.Plan(key, start).ImportRequested {
		t.Fatal("the change announced during the import was lost")
	}
}
