package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/test/poll"
)

func TestJSONLinesWritesOneObjectPerRecord(t *testing.T) {
	var b bytes.Buffer
	s := NewJSONLines(&b)
	at := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for _, r := range []Record{
		{Time: at, CallID: "c1", Phase: PhaseBefore, Caller: "system:serviceaccount:team:bot", Namespace: "team", Tool: "docs.echo", Decision: "Allowed"},
		{Time: at, CallID: "c2", Phase: PhaseDenied, Decision: "Denied", Reason: DenyNotServable, Detail: "Disabled"},
	} {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), b.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil {
		t.Fatal(err)
	}
	if got["callID"] != "c2" || got["reason"] != "NotServable" || got["detail"] != "Disabled" || got["time"] != "2026-07-28T12:00:00Z" {
		t.Errorf("record = %v", got)
	}
	for _, k := range []string{"outcome", "errorKind", "latencyMillis", "argumentsHash", "approval"} {
		if _, ok := got[k]; ok {
			t.Errorf("empty %s is written", k)
		}
	}
}

type brokenWriter struct {
	n   int
	err error
}

func (w brokenWriter) Write(p []byte) (int, error) { return min(w.n, len(p)), w.err }

func TestJSONLinesReportsAFailedOrShortWrite(t *testing.T) {
	down := errors.New("disk full")
	if err := NewJSONLines(brokenWriter{err: down}).Write(context.Background(), Record{}); !errors.Is(err, down) {
		t.Errorf("failed write: %v", err)
	}
	if err := NewJSONLines(brokenWriter{n: 3}).Write(context.Background(), Record{}); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short write: %v", err)
	}
}

// blockingWriter holds every write until release is closed, as a full pipe
// or a hung network disk does.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

func TestJSONLinesRefusesWhenTheWriterBlocksAndRecoversAfter(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	s := NewJSONLinesTimeout(w, 20*time.Millisecond)
	ctx := context.Background()
	// The first write blocks in the writer; the second waits behind it.
	// Both return ErrAuditTimeout rather than hanging.
	for i, id := range []string{"held", "queued"} {
		if err := s.Write(ctx, Record{CallID: id}); !errors.Is(err, ErrAuditTimeout) {
			t.Fatalf("write %d to a blocked writer: %v, want ErrAuditTimeout", i, err)
		}
	}
	close(w.release)
	if err := s.Write(ctx, Record{CallID: "after"}); err != nil {
		t.Fatalf("write after the writer unblocked: %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if got := w.got.String(); !strings.Contains(got, `"callID":"after"`) || strings.Contains(got, `"callID":"queued"`) {
		t.Errorf("writer holds %q: want the record written after recovery, and not the one that never got the writer", got)
	}
}

func TestJSONLinesFileSinkAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jsonl")
	if err := os.WriteFile(path, []byte("{\"callID\":\"earlier\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenAuditFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewJSONLines(f).Write(context.Background(), Record{CallID: "now"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "earlier") || !strings.Contains(lines[1], `"callID":"now"`) {
		t.Errorf("file holds %q, want the earlier line kept and the record appended", b)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("file mode %v is readable by others", st.Mode().Perm())
	}
}

// syncCountingWriter holds every sync until release is closed, and counts
// writes and syncs, as a file on a slow disk would take them.
type syncCountingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
	writes  int
	syncs   int
}

func (w *syncCountingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.got.Write(p)
}

func (w *syncCountingWriter) Sync() error {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncs++
	return nil
}

// Records that arrive while a write is being synced go out together in the
// next write, synced once, and every Write returns only after its record
// was written and synced.
func TestJSONLinesGroupsRecordsArrivingDuringASync(t *testing.T) {
	w := &syncCountingWriter{release: make(chan struct{})}
	s := NewJSONLinesTimeout(w, time.Minute)
	ctx := context.Background()
	const queued = 10
	errs := make(chan error, queued+1)
	go func() { errs <- s.Write(ctx, Record{CallID: "first"}) }()
	// The first record is in its sync once the writer has seen it.
	poll.UntilEvery(t, 10*time.Second, time.Millisecond, "the first record written", func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.writes != 1 {
			return fmt.Errorf("%d writes", w.writes)
		}
		return nil
	})
	for i := range queued {
		go func() { errs <- s.Write(ctx, Record{CallID: fmt.Sprintf("queued-%d", i)}) }()
	}
	poll.UntilEvery(t, 10*time.Second, time.Millisecond, "every queued record waiting", func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if n := len(s.waiting); n != queued {
			return fmt.Errorf("%d of %d waiting", n, queued)
		}
		return nil
	})
	select {
	case err := <-errs:
		t.Fatalf("a Write returned (%v) before its record was synced", err)
	default:
	}
	close(w.release)
	for range queued + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes != 2 || w.syncs != 2 {
		t.Errorf("%d writes and %d syncs for %d records, want 2 and 2", w.writes, w.syncs, queued+1)
	}
	if lines := strings.Count(w.got.String(), "\n"); lines != queued+1 {
		t.Errorf("%d lines written, want %d", lines, queued+1)
	}
}

// A regular file is synced; a pipe, which cannot be, is not asked to.
func TestJSONLinesSyncsOnlyRegularFiles(t *testing.T) {
	f, err := OpenAuditFile(filepath.Join(t.TempDir(), "jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if NewJSONLines(f).syncer == nil {
		t.Error("an audit file is not synced")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if NewJSONLines(w).syncer != nil {
		t.Error("a pipe is synced")
	}
	if NewJSONLines(&syncCountingWriter{}).syncer == nil {
		t.Error("a writer that can sync, not a file, is not synced")
	}
}

// BenchmarkJSONLinesWrite is one record through a sink that never blocks,
// as the gateway writes two for every call: the work around the write (the
// deadline, the hand-off to the writer) against the encoding itself.
func BenchmarkJSONLinesWrite(b *testing.B) {
	s := NewJSONLines(io.Discard)
	r := Record{Phase: PhaseAfter, Namespace: "team-a", Caller: "system:serviceaccount:team-a:bot", LocalName: "docs_search", Server: "docs", DataClass: "Internal", ArgumentsHash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Write(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSONLinesGroupCommit is 64 writers at once, as a busy gateway's
// calls are, into a writer that counts its writes: records/write is how
// many records one system call carries.
func BenchmarkJSONLinesGroupCommit(b *testing.B) {
	w := &writeCounter{}
	s := NewJSONLines(w)
	r := Record{Phase: PhaseBefore, Namespace: "team-a", Caller: "system:serviceaccount:team-a:bot", LocalName: "docs_search"}
	ctx := context.Background()
	b.SetParallelism(32) // 64 goroutines on the benchmark's two CPUs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Write(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	if n := w.writes.Load(); n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "records/write")
	}
}

type writeCounter struct{ writes atomic.Int64 }

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	return len(p), nil
}

// Lines are reused between writes: under concurrent writers every record
// still lands once, whole, with its own content.
func TestJSONLinesConcurrentWritersEachLandOnceWhole(t *testing.T) {
	var buf syncBuffer
	s := NewJSONLines(&buf)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := s.Write(context.Background(), Record{CallID: id, Detail: strings.Repeat(id, w+1)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		var w int
		if _, err := fmt.Sscanf(r.CallID, "w%d-", &w); err != nil || r.Detail != strings.Repeat(r.CallID, w+1) {
			t.Fatalf("record %q carries another's detail %q", r.CallID, r.Detail)
		}
		if seen[r.CallID] {
			t.Fatalf("record %q landed twice", r.CallID)
		}
		seen[r.CallID] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d records landed, want %d", len(seen), writers*each)
	}
}

// syncBuffer is a bytes.Buffer safe for the sink's writer goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
