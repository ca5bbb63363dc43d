package mcp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
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
		{"lf", "data: a\n\n", []sseEvent{{Type: "message", Data: []byte("a")}}},
		{"crlf", "data: a\r\n\r\n", []sseEvent{{Type: "message", Data: []byte("a")}}},
		{"lone cr", "data: a\r\rdata: b\r\r", []sseEvent{{Type: "message", Data: []byte("a")}, {Type: "message", Data: []byte("b")}}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []sseEvent{{Type: "message", Data: []byte("a\nb\n c")}}},
		{"event type", "event: ping\ndata: x\n\nevent: message\ndata: y\n\n", []sseEvent{{Type: "ping", Data: []byte("x")}, {Type: "message", Data: []byte("y")}}},
		{"type resets per event", "event: ping\ndata: x\n\ndata: y\n\n", []sseEvent{{Type: "ping", Data: []byte("x")}, {Type: "message", Data: []byte("y")}}},
		{"comments and unknown fields", ": hi\nretry: 10\nid: 7\nfoo: bar\ndata: x\n\n", []sseEvent{{Type: "message", Data: []byte("x")}}},
		{"field without colon", "data\n\n", []sseEvent{{Type: "message", Data: nil}}},
		{"no data is not dispatched", "event: x\nid: 1\n\n\n", nil},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []sseEvent{{Type: "message", Data: []byte("x")}}},
		{"incomplete event at eof is discarded", "data: x\n\ndata: y\n", []sseEvent{{Type: "message", Data: []byte("x")}}},
		{"partial line at eof is discarded", "data: x\n\ndata: y", []sseEvent{{Type: "message", Data: []byte("x")}}},
		{"colon in value", "data: {\"a\":1}\n\n", []sseEvent{{Type: "message", Data: []byte(`{"a":1}`)}}},
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

// chunkReader hands out r's bytes in reads of random sizes.
type chunkReader struct {
	r   io.Reader
	rnd *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	n := 1 + c.rnd.IntN(64<<10)
	if n < len(p) {
		p = p[:n]
	}
	return c.r.Read(p)
}

// decodeSplit decodes in, in reads of random sizes, with long lines read
// into blocks or not, and returns each event with its data joined.
func decodeSplit(t *testing.T, in []byte, split bool, seed uint64) []sseEvent {
	t.Helper()
	d := newSSEDecoder(&chunkReader{r: bytes.NewReader(in), rnd: rand.New(rand.NewPCG(seed, 1))})
	d.split = split
	defer d.close()
	var out []sseEvent
	for {
		ev, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Blocks != nil {
			if !split {
				t.Fatal("blocks without split")
			}
			ev.Data, ev.Blocks = bytes.Join(ev.Blocks, nil), nil
		} else {
			ev.Data = bytes.Clone(ev.Data)
		}
		out = append(out, ev)
	}
}

// Long lines read into blocks give the events a decoder reading them
// whole gives, whatever the lines' ends, the fields around them, the
// read sizes and an event cut off at the end; and an event of one long
// data line comes in blocks.
func TestSSEDecoderLongLinesInBlocksReadAsWhole(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	ends := []string{"\n", "\r\n", "\r"}
	long := func() string {
		b := make([]byte, spliceFrom/2+rnd.IntN(3*spliceBlock))
		for i := range b {
			b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[rnd.IntN(64)]
		}
		return string(b)
	}
	for i := range 40 {
		var in strings.Builder
		for range 1 + rnd.IntN(4) {
			end := ends[rnd.IntN(len(ends))]
			for range 1 + rnd.IntN(4) {
				switch rnd.IntN(6) {
				case 0:
					in.WriteString(":" + long() + end)
				case 1:
					in.WriteString("event: message" + end)
				case 2:
					in.WriteString("data: x" + end)
				default:
					in.WriteString("data: " + long() + end)
				}
			}
			in.WriteString(end)
		}
		if rnd.IntN(3) == 0 {
			in.WriteString("data: " + long())
		}
		whole := decodeSplit(t, []byte(in.String()), false, uint64(i))
		split := decodeSplit(t, []byte(in.String()), true, uint64(i)+100)
		if len(whole) != len(split) {
			t.Fatalf("stream %d: %d events read whole, %d with blocks", i, len(whole), len(split))
		}
		for j := range whole {
			if whole[j].Type != split[j].Type || !bytes.Equal(whole[j].Data, split[j].Data) {
				t.Fatalf("stream %d, event %d differs: %q (%d bytes) and %q (%d bytes)", i, j, whole[j].Type, len(whole[j].Data), split[j].Type, len(split[j].Data))
			}
		}
	}
	// One event of one long data line comes in blocks.
	d := newSSEDecoder(strings.NewReader("data: " + strings.Repeat("QUJD", spliceBlock) + "\r\n\r\n"))
	d.split = true
	defer d.close()
	ev, err := d.Next()
	if err != nil || ev.Blocks == nil || len(bytes.Join(ev.Blocks, nil)) != 4*spliceBlock {
		t.Fatalf("one long data line: blocks %d, data %d, %v", len(ev.Blocks), len(ev.Data), err)
	}
}
