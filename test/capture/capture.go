// Package capture holds what test suites use to capture the operator's
// output for leak searches: a buffer safe for concurrent writers.
package capture

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for the logger's and the specs' goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Take returns everything written so far and empties the buffer.
func (s *Buffer) Take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}
