// Package schedule keeps, in memory, when each McpServer is next due for a
// health probe and for the retry of a failed import, and which version of
// the server the controller last saw. A reconcile reads the server's plan
// once at its start and records its outcome once at its end.
//
// Nothing here is persisted: after a restart every server is probed at once
// and a failed import is retried at once, which is what a restart should do
// anyway.
package schedule

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Schedule is safe for concurrent use.
type Schedule struct {
	// Jitter returns the random part added to a probe interval, at most a
	// tenth of it; nil means a uniformly random duration in [0, interval/10].
	// Tests set it to see where a probe lands.
	Jitter func(interval time.Duration) time.Duration

	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
}

type entry struct {
	nextProbe       time.Time
	nextImportRetry time.Time
	// importRequests counts the changes the server announced
	// (RequestImport); importHandled is the count the last import that ran
	// had seen when its reconcile began, so a change announced while an
	// import runs still asks for the next.
	importRequests, importHandled uint64
	// version is the server's resourceVersion the controller last read
	// live or wrote; a cached copy of it may stand in for a live read.
	version string
}

// New returns an empty schedule.
func New() *Schedule {
	return &Schedule{entries: map[types.NamespacedName]*entry{}}
}

// Plan is what is due for one server at one moment.
type Plan struct {
	// ProbeDue says a scheduled probe is due; NextProbe is when it is (zero:
	// never probed).
	ProbeDue  bool
	NextProbe time.Time
	// ImportRetryDue says a failed import may be retried; NextImportRetry
	// is when (zero: no failed import waits).
	ImportRetryDue  bool
	NextImportRetry time.Time
	// ImportRequested says the server announced that its tools changed
	// since the last import began (RequestImport); ImportRequests is the
	// count of announcements seen, for Outcome.ImportRequestsSeen.
	ImportRequested bool
	ImportRequests  uint64
}

// Plan returns what is due for key at now.
func (s *Schedule) Plan(key types.NamespacedName, now time.Time) Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	return Plan{
		ProbeDue:        !now.Before(e.nextProbe),
		NextProbe:       e.nextProbe,
		ImportRetryDue:  !now.Before(e.nextImportRetry),
		NextImportRetry: e.nextImportRetry,
		ImportRequested: e.importRequests > e.importHandled,
		ImportRequests:  e.importRequests,
	}
}

// RequestImport marks key's catalog as changed on the server: the next
// reconcile imports it even before its interval is up. The mark stays until
// an import that began after it ran (whatever its outcome), so an import put
// off for want of catalog budget still happens, and a change announced
// while an import was already reading the list is not lost.
func (s *Schedule) RequestImport(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key).importRequests++
}

// Outcome is what one reconcile did that the schedule counts from.
type Outcome struct {
	// Probed is set when a handshake completed or failed: a probe, or an
	// import's own handshake.
	Probed *Probe
	// Import is ImportFailed or ImportSucceeded when an import ran.
	Import ImportOutcome
	// RetryAfter is how long after Now a failed import waits.
	RetryAfter time.Duration
	// ImportRequestsSeen is Plan.ImportRequests as read at the start of
	// the reconcile: what an import that ran has covered.
	ImportRequestsSeen uint64
	// Now is when the reconcile's work ended.
	Now time.Time
}

// Probe describes one handshake.
type Probe struct {
	// Interval is the server's health-check interval.
	Interval time.Duration
	// OnSchedule is true for a scheduled probe, which keeps the cadence:
	// the next one counts from when this one was due, not from when a
	// worker got to it. A requested probe and an import's handshake count
	// from Now, so the next probe never comes before an import's retry.
	OnSchedule bool
}

// ImportOutcome is how an import ended.
type ImportOutcome int

// Import outcomes.
const (
	ImportNotRun ImportOutcome = iota
	ImportFailed
	ImportSucceeded
)

// Record counts the next probe and the next import retry of key from o,
// and returns them (zero: none scheduled).
func (s *Schedule) Record(key types.NamespacedName, o Outcome) (nextProbe, nextImportRetry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	if p := o.Probed; p != nil {
		base := o.Now
		if due := e.nextProbe; p.OnSchedule && !due.IsZero() && !due.After(o.Now) && o.Now.Sub(due) < p.Interval {
			base = due
		}
		e.nextProbe = base.Add(p.Interval + s.jitter(p.Interval))
	}
	if o.Import != ImportNotRun {
		e.importHandled = max(e.importHandled, o.ImportRequestsSeen)
	}
	switch o.Import {
	case ImportFailed:
		e.nextImportRetry = o.Now.Add(o.RetryAfter)
	case ImportSucceeded:
		e.nextImportRetry = time.Time{}
	}
	return e.nextProbe, e.nextImportRetry
}

// Forget drops everything known of key: a deleted server, or a stalled one,
// whose next reconcile should find everything due at once.
func (s *Schedule) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
}

// SawVersion records the version of key last read live or written.
func (s *Schedule) SawVersion(key types.NamespacedName, resourceVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key).version = resourceVersion
}

// KnownVersion is what SawVersion last recorded; empty after Forget.
func (s *Schedule) KnownVersion(key types.NamespacedName) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok {
		return e.version
	}
	return ""
}

func (s *Schedule) entry(key types.NamespacedName) *entry {
	e, ok := s.entries[key]
	if !ok {
		e = &entry{}
		s.entries[key] = e
	}
	return e
}

func (s *Schedule) jitter(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	if s.Jitter != nil {
		return min(max(s.Jitter(interval), 0), interval/10)
	}
	return time.Duration(rand.Int64N(int64(interval)/10 + 1))
}
