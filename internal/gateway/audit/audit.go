// Package audit is the gateway's record of what it decided: the audit
// record, its vocabulary, and a sink that stores records as JSON lines.
// It never holds argument values, results or credentials.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
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
	// ServerNamespace and SharedServer are set for a call of a shared
	// tool: the owner's namespace (of Tool and Server), and the caller
	// namespace's McpSharedServer the tool was offered through. Namespace
	// is always the caller's.
	ServerNamespace string `json:"serverNamespace,omitempty"`
	SharedServer    string `json:"sharedServer,omitempty"`
	DataClass       string `json:"dataClass"`
	Approval        string `json:"approval,omitempty"`
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
	// Inspection names what result inspection found in the result, by
	// kind (and a credential's format), never its text; InspectionAction
	// is what was done with the result (Annotate, Redact, Refuse).
	Inspection       []string `json:"inspection,omitempty"`
	InspectionAction string   `json:"inspectionAction,omitempty"`
	// Guardrail is what the guardrail webhook said of the call (in
	// before and denied records) or of its result (in after): Allowed,
	// Refused, Replaced, or Unavailable when it gave no answer.
	Guardrail string `json:"guardrail,omitempty"`
	// WriteDown is what the write-down rule did to the call: Refused,
	// ApprovalRequired, Raised (its result raised the caller's mark) or
	// Unrecorded (the mark could not be raised; the result was withheld).
	// MarkClass is the class of the mark, and for a call the mark held
	// back MarkTool and MarkReadAt name the read that set it, never its
	// value.
	WriteDown  string `json:"writeDown,omitempty"`
	MarkClass  string `json:"markClass,omitempty"`
	MarkTool   string `json:"markTool,omitempty"`
	MarkReadAt string `json:"markReadAt,omitempty"`
	// Interaction is, on an interaction record, what the tool's server
	// asked the calling agent during the call: Elicitation (its mode in
	// InteractionMode, form or url) or Sampling; InteractionResult is what
	// the agent answered (accept, decline, cancel; answered for sampling;
	// error), never what it said. Decision is Relayed or Refused, with the
	// Reason a request was refused for.
	Interaction       string `json:"interaction,omitempty"`
	InteractionMode   string `json:"interactionMode,omitempty"`
	InteractionResult string `json:"interactionResult,omitempty"`
	// Repeated is, on a denied record, how many more denials of the same
	// caller, tool and reason came in the window before it and were not
	// written on their own (denials.go); they carry no call ID or
	// arguments hash of their own.
	Repeated int `json:"repeated,omitempty"`
	// Method is, on a record of a prompt or a resource rather than a tool
	// call, what was asked of it: prompts/get or resources/read; Tool
	// then names the McpPrompt or McpResource.
	Method string `json:"method,omitempty"`
}

// Sink stores audit records. Write must return only once the record is
// stored; an error refuses the call it describes.
type Sink interface {
	Write(ctx context.Context, r Record) error
}

// DefaultAuditTimeout bounds one audit write when no other bound is given.
const DefaultAuditTimeout = 5 * time.Second

// ErrAuditTimeout is returned when an audit record could not be stored
// within the sink's deadline. The call it describes is refused.
var ErrAuditTimeout = errors.New("the audit sink did not take the record in time")

// JSONLines writes one JSON object per line to a writer, for a log
// collector to pick up, or to a file opened for appending.
//
// Every write has a deadline: a writer that blocks (a full pipe, a hung
// network disk) refuses the calls it cannot record promptly instead of
// holding them. A write that times out may still land later, so a record
// can exist for a call that was refused; a call without its record cannot.
//
// One write is in flight at a time. Records that arrive meanwhile wait
// together and go out in the next write, synced once (group commit), so
// that concurrent calls do not queue behind one sync each; every record is
// still written and synced before its Write returns.
type JSONLines struct {
	// lock is held by the one write in flight; a channel, so that waiting
	// for it has a deadline too.
	lock    chan struct{}
	w       io.Writer
	timeout time.Duration
	// syncer makes a written record durable; nil for a writer that cannot
	// sync (a pipe, a terminal, a buffer).
	syncer interface{ Sync() error }

	mu sync.Mutex
	// waiting are the records no write has taken yet.
	waiting []*auditLine

	// joined is where a write of several lines joins them; the holder of
	// lock uses it.
	joined []byte
}

// maxJoined bounds the buffer a sink keeps for joining lines: a batch
// larger than that (a burst of thousands of calls) gets one of its own.
const maxJoined = 256 << 10

// auditLine is one record on its way to the writer. Lines are reused
// (linePool): a line whose write told it how it went is back to empty, its
// channel drained; one given up on is left to the collector, because the
// write that took it may still answer.
type auditLine struct {
	b    []byte
	done chan error
}

var linePool = sync.Pool{New: func() any { return &auditLine{b: make([]byte, 0, 512), done: make(chan error, 1)} }}

// timerPool holds stopped timers for the writes' deadlines.
var timerPool sync.Pool

func deadline(d time.Duration) *time.Timer {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func release(t *time.Timer) {
	// Since Go 1.23 a stopped timer's channel holds nothing stale, so it
	// can be reset for the next write.
	t.Stop()
	timerPool.Put(t)
}

// NewJSONLines returns a sink writing to w with DefaultAuditTimeout.
func NewJSONLines(w io.Writer) *JSONLines { return NewJSONLinesTimeout(w, 0) }

// NewJSONLinesTimeout returns a sink writing to w, each write bounded by
// timeout (0 means DefaultAuditTimeout).
func NewJSONLinesTimeout(w io.Writer, timeout time.Duration) *JSONLines {
	if timeout <= 0 {
		timeout = DefaultAuditTimeout
	}
	s := &JSONLines{lock: make(chan struct{}, 1), w: w, timeout: timeout}
	s.syncer, _ = w.(interface{ Sync() error })
	if f, ok := w.(*os.File); ok {
		// Standard output is usually a pipe, where a sync is a failing
		// system call per write: only a regular file is synced.
		if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
			s.syncer = nil
		}
	}
	return s
}

// Write encodes r as one line. A short write, a failed write and a write
// that does not finish within the deadline are errors.
func (s *JSONLines) Write(ctx context.Context, r Record) error {
	line := linePool.Get().(*auditLine)
	b, err := appendRecord(line.b[:0], &r)
	if err != nil {
		line.b = b
		linePool.Put(line)
		return err
	}
	line.b = append(b, '\n')
	s.mu.Lock()
	s.waiting = append(s.waiting, line)
	s.mu.Unlock()
	t := deadline(s.timeout)
	defer release(t)
	for {
		select {
		case err := <-line.done:
			linePool.Put(line)
			return err
		case s.lock <- struct{}{}:
			// This caller starts the next write, of everything waiting;
			// its own line may already be in the write before.
			go s.flushWaiting()
		case <-ctx.Done():
			return s.giveUp(line)
		case <-t.C:
			return s.giveUp(line)
		}
	}
}

// giveUp is a Write that did not hear from the writer in time, or whose
// call ended first. A line no
// write has taken is dropped: it never lands. One taken already may land
// after its call was refused.
func (s *JSONLines) giveUp(line *auditLine) error {
	s.mu.Lock()
	s.waiting = slices.DeleteFunc(s.waiting, func(l *auditLine) bool { return l == line })
	s.mu.Unlock()
	return fmt.Errorf("writing the audit record: %w", ErrAuditTimeout)
}

// take removes and returns every waiting line.
func (s *JSONLines) take() []*auditLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	batch := s.waiting
	s.waiting = nil
	return batch
}

// flushWaiting is the write the holder of the lock started: of every line
// waiting once the calls ready to run have added theirs. Yielding first
// lets them: on a busy replica the goroutine started here would otherwise
// run at once, before any other call, and write the one line that asked,
// a system call per record. Alone, the yield returns at once.
func (s *JSONLines) flushWaiting() {
	runtime.Gosched()
	batch := s.take()
	if len(batch) == 0 {
		// Every line was in the write before, which answers them.
		<-s.lock
		return
	}
	s.flush(batch)
}

// flush writes a batch and tells each of its lines how it went. The lock is
// released when the write returns, not when its callers give up: one
// blocked write at a time, never a pile of them.
func (s *JSONLines) flush(batch []*auditLine) {
	defer func() { <-s.lock }()
	var buf []byte
	if len(batch) == 1 {
		buf = batch[0].b
	} else {
		// The lines go out in one write, joined in a buffer the holder
		// of the lock reuses.
		buf = s.joined[:0]
		for _, l := range batch {
			buf = append(buf, l.b...)
		}
		if cap(buf) <= maxJoined {
			s.joined = buf
		}
	}
	err := s.write(buf)
	for _, l := range batch {
		l.done <- err
	}
}

func (s *JSONLines) write(b []byte) error {
	n, err := s.w.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return errors.Join(errors.New("writing the audit record"), err)
	}
	if s.syncer != nil {
		// A file-backed sink makes the record durable before the call. A
		// sync that fails is not a failure of the write: the record is in
		// the file.
		_ = s.syncer.Sync()
	}
	return nil
}

// OpenAuditFile opens (or creates, readable by its owner only) a file for a
// JSONLines sink. It is opened append-only, so that a record is never
// written over another; rotating it is left to the platform (a sidecar or
// logrotate with copytruncate), the gateway does not.
func OpenAuditFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit file: %w", err)
	}
	return f, nil
}

// NewCallID returns a fresh random call ID, the one every record of a call
// carries.
func NewCallID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
