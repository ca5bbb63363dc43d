package controller

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// schedule remembers, per server, when its next probe and its next import
// retry are due. It lives in memory: after a restart every server is probed
// at once and a failed import is retried at once, which is what a restart
// should do anyway.
type schedule struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*scheduleEntry
}

type scheduleEntry struct {
	nextProbe       time.Time
	nextImportRetry time.Time
	// resourceVersion is the server's version this controller last read
	// live or wrote; a cached copy of it may stand in for a live read.
	resourceVersion string
}

func newSchedule() *schedule {
	return &schedule{entries: map[types.NamespacedName]*scheduleEntry{}}
}

func (s *schedule) entry(key types.NamespacedName) *scheduleEntry {
	e, ok := s.entries[key]
	if !ok {
		e = &scheduleEntry{}
		s.entries[key] = e
	}
	return e
}

// probeDue reports whether a probe of key is due at now.
func (s *schedule) probeDue(key types.NamespacedName, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !now.Before(s.entry(key).nextProbe)
}

// probed schedules the next probe one interval plus a jitter of up to a
// tenth of the interval (so that servers created together spread out)
// after now, or, for a scheduled probe (onSchedule) less than an interval
// late, after the time it was due. Counting from the due time keeps the
// cadence: a probe that waited for a worker does not push every later probe
// of its server back by the same wait. An import's handshake counts from
// now, so that the next probe never comes before the import's retry.
func (s *schedule) probed(key types.NamespacedName, now time.Time, interval time.Duration, onSchedule bool) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	base := now
	if due := e.nextProbe; onSchedule && !due.IsZero() && !due.After(now) && now.Sub(due) < interval {
		base = due
	}
	next := base.Add(interval + jitter(interval))
	e.nextProbe = next
	return next
}

func (s *schedule) nextProbe(key types.NamespacedName) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entry(key).nextProbe
}

// importRetryDue reports whether a failed import of key may be retried.
func (s *schedule) importRetryDue(key types.NamespacedName, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !now.Before(s.entry(key).nextImportRetry)
}

func (s *schedule) importFailed(key types.NamespacedName, now time.Time, retry time.Duration) time.Time {
	next := now.Add(retry)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key).nextImportRetry = next
	return next
}

func (s *schedule) importSucceeded(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key).nextImportRetry = time.Time{}
}

func (s *schedule) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
}

func jitter(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(interval)/10 + 1))
}

func (s *schedule) nextImportRetry(key types.NamespacedName) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entry(key).nextImportRetry
}

// sawVersion records the version of key last read live or written.
func (s *schedule) sawVersion(key types.NamespacedName, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key).resourceVersion = rv
}

// knownVersion is what sawVersion last recorded; empty after forget.
func (s *schedule) knownVersion(key types.NamespacedName) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok {
		return e.resourceVersion
	}
	return ""
}
