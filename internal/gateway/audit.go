package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"
)

// Audit phases.
const (
	// PhaseDenied records a call refused by the gate; nothing was sent.
	PhaseDenied = "denied"
	// PhaseBefore records a call about to be sent. No record, no call.
	PhaseBefore = "before"
	// PhaseAfter records the outcome of a call that was sent.
	PhaseAfter = "after"
)

// Record is one audit entry. It names who called what and what happened; it
// never holds argument values, results or credentials. ArgumentsHash lets a
// reader match two records about the same arguments without seeing them.
type Record struct {
	Time      time.Time `json:"time"`
	CallID    string    `json:"callID"`
	Phase     string    `json:"phase"`
	Caller    string    `json:"caller"`
	Namespace string    `json:"namespace"`
	Tool      string    `json:"tool"`
	LocalName string    `json:"localName"`
	Server    string    `json:"server"`
	DataClass string    `json:"dataClass"`
	Approval  string    `json:"approval,omitempty"`
	// ApprovalName is the McpCallApproval a call waited for or used.
	ApprovalName string `json:"approvalName,omitempty"`
	// ApprovedBy is the user name of the person who decided it.
	ApprovedBy    string `json:"approvedBy,omitempty"`
	Decision      string `json:"decision"`
	Reason        string `json:"reason,omitempty"`
	Detail        string `json:"detail,omitempty"`
	Outcome       string `json:"outcome,omitempty"`
	ErrorKind     string `json:"errorKind,omitempty"`
	LatencyMillis int64  `json:"latencyMillis,omitempty"`
	ArgumentsHash string `json:"argumentsHash,omitempty"`
}

// Sink stores audit records. Write must return only once the record is
// stored; an error refuses the call it describes.
type Sink interface {
	Write(ctx context.Context, r Record) error
}

// JSONLines writes one JSON object per line to a writer, for a log
// collector to pick up.
type JSONLines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLines returns a sink writing to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Write encodes r as one line. A short write is an error.
func (s *JSONLines) Write(_ context.Context, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.w.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return errors.Join(errors.New("writing the audit record"), err)
	}
	if f, ok := s.w.(interface{ Sync() error }); ok {
		// A file-backed sink makes the record durable before the call; a
		// pipe or terminal cannot sync and that is not a failure.
		_ = f.Sync()
	}
	return nil
}
