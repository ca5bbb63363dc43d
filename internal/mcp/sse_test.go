package mcp

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func decodeAll(t testing.TB, r io.Reader) ([]sseEvent, error) {
	t.Helper()
	d := newSSEDecoder(r)
	var out []sseEvent
	for {
		ev, err := d.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEDecoder(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"lf", "data: a\n\n", []sseEvent{{"message", []byte("a")}}},
		{"crlf", "data: a\r\n\r\n", []sseEvent{{"message", []byte("a")}}},
		{"lone cr", "data: a\r\rdata: b\r\r", []sseEvent{{"message", []byte("a")}, {"message", []byte("b")}}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []sseEvent{{"message", []byte("a\nb\n c")}}},
		{"event type", "event: ping\ndata: x\n\nevent: message\ndata: y\n\n", []sseEvent{{"ping", []byte("x")}, {"message", []byte("y")}}},
		{"type resets per event", "event: ping\ndata: x\n\ndata: y\n\n", []sseEvent{{"ping", []byte("x")}, {"message", []byte("y")}}},
		{"comments and unknown fields", ": hi\nretry: 10\nid: 7\nfoo: bar\ndata: x\n\n", []sseEvent{{"message", []byte("x")}}},
		{"field without colon", "data\n\n", []sseEvent{{"message", nil}}},
		{"no data is not dispatched", "event: x\nid: 1\n\n\n", nil},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []sseEvent{{"message", []byte("x")}}},
		{"incomplete event at eof is discarded", "data: x\n\ndata: y\n", []sseEvent{{"message", []byte("x")}}},
		{"partial line at eof is discarded", "data: x\n\ndata: y", []sseEvent{{"message", []byte("x")}}},
		{"colon in value", "data: {\"a\":1}\n\n", []sseEvent{{"message", []byte(`{"a":1}`)}}},
		{"empty stream", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Byte-at-a-time reads exercise every line-ending split.
			for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
				got, err := decodeAll(t, r)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
					t.Fatalf("got %q, want %q", got, c.want)
				}
			}
		})
	}
}

func TestSSEDecoderReaderError(t *testing.T) {
	boom := errors.New("boom")
	_, err := decodeAll(t, io.MultiReader(strings.NewReader("data: x\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("reader error lost: %v", err)
	}
}

func TestCappedReader(t *testing.T) {
	for _, n := range []int{0, 1, 100, 4096} {
		exact := bytes.Repeat([]byte("a"), n)
		got, err := io.ReadAll(&cappedReader{r: bytes.NewReader(exact), limit: int64(n)})
		if err != nil || len(got) != n {
			t.Fatalf("cap %d, body %d: %d bytes, %v", n, n, len(got), err)
		}
		got, err = io.ReadAll(&cappedReader{r: bytes.NewReader(append(exact, 'b')), limit: int64(n)})
		if !errors.Is(err, errOversized) {
			t.Fatalf("cap %d, body %d: err %v", n, n+1, err)
		}
		if len(got) > n {
			t.Fatalf("cap %d: %d bytes passed through", n, len(got))
		}
	}
}
