package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
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
