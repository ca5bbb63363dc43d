package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	// Type is the event type; "message" when the stream named none.
	Type string
	// Data is the event's data with the final line feed removed.
	Data []byte
	// Blocks, set instead of Data, are the data of an event of one long
	// data line, read into blocks never joined (sseDecoder.split).
	Blocks [][]byte
}

// sseDecoder parses a text/event-stream body incrementally, following the
// WHATWG event-stream interpretation rules: lines end in CRLF, LF or a lone
// CR; a leading BOM is dropped; lines starting with ':' are comments; "data"
// lines accumulate; a blank line dispatches; an event without data is not
// dispatched; an event cut off by the end of the stream is discarded. "id"
// and "retry" are read and ignored: this client never reconnects or resumes.
//
// The decoder does not bound what it reads; the reader it is given does.
type sseDecoder struct {
	r    *bufio.Reader
	line []byte
	// data is the event being assembled.
	data      []byte
	hasData   bool
	eventType string
	skipLF    bool // the previous line ended in CR; a following LF belongs to it
	started   bool
	// last is the buffer of the last dispatched event until claimed.
	last []byte
	// split has a line longer than spliceFrom read on into blocks (the
	// line's rest, in blocks, after readLine returns its head); a data
	// line that is an event's first becomes the event's Blocks
	// (splice.go). Set for a tools/call's stream, whose answer may carry
	// an image.
	split  bool
	blocks [][]byte
	// dataBlocks are the event's data when its first data line was read
	// into blocks.
	dataBlocks [][]byte
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

func newSSEDecoder(r io.Reader) *sseDecoder {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return &sseDecoder{r: br}
}

// claim hands the caller the pooled buffer holding the data of the event
// Next returned last, to give back with putBody once the data is no longer
// used. A buffer not claimed is left to the garbage collector.
func (d *sseDecoder) claim() []byte {
	b := d.last
	d.last = nil
	return b
}

// close returns the decoder's own buffers for reuse.
func (d *sseDecoder) close() {
	putBody(d.line)
	putBody(d.data)
	d.r.Reset(nil)
	readerPool.Put(d.r)
	d.r, d.data, d.line = nil, nil, nil
}

// Next returns the next dispatched event. At the end of the stream it returns
// io.EOF; any other error is the reader's.
func (d *sseDecoder) Next() (sseEvent, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if ev, ok := d.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		d.field(line)
	}
}

// readLine returns one line without its terminator. A final line without a
// terminator is part of an incomplete event and is dropped, so the end of
// the stream is reported as io.EOF.
//
// The first byte of the stream (a possible BOM) and the byte after a CR (a
// possible LF) are read one at a time; the rest of a line is copied from the
// buffer in runs up to the next CR or LF, since a byte-at-a-time loop was
// the main cost of reading a large tools/list page.
func (d *sseDecoder) readLine() ([]byte, error) {
	d.line = d.line[:0]
	for {
		if !d.started || d.skipLF {
			b, err := d.r.ReadByte()
			if err != nil {
				return nil, err
			}
			if !d.started {
				d.started = true
				// A UTF-8 byte order mark at the very start is not content.
				if b == 0xEF {
					if next, perr := d.r.Peek(2); perr == nil && next[0] == 0xBB && next[1] == 0xBF {
						_, _ = d.r.Discard(2)
						continue
					}
				}
			}
			if d.skipLF {
				d.skipLF = false
				if b == '\n' {
					continue
				}
			}
			switch b {
			case '\n':
				return d.line, nil
			case '\r':
				d.skipLF = true
				return d.line, nil
			}
			d.line = append(d.line, b)
			continue
		}
		if d.r.Buffered() == 0 {
			if _, err := d.r.Peek(1); err != nil {
				return nil, err
			}
		}
		buf, _ := d.r.Peek(d.r.Buffered())
		i := lineEnd(buf)
		if i < 0 {
			if d.split && len(d.line) >= spliceFrom {
				// The rest of a long line goes into blocks.
				return d.line, d.restInBlocks()
			}
			// A line longer than the buffer (a large page is one data
			// line): grow by doubling, or take a pooled buffer, since
			// append's gentler growth for large slices copied a 2 MiB line
			// about ten times over.
			d.line = growBody(d.line, len(buf))
			d.line = append(d.line, buf...)
			_, _ = d.r.Discard(len(buf))
			continue
		}
		d.line = append(d.line, buf[:i]...)
		_, _ = d.r.Discard(i + 1)
		if buf[i] == '\r' {
			d.skipLF = true
		}
		return d.line, nil
	}
}

// restInBlocks reads the rest of the current line, up to its end, into
// d.blocks of spliceBlock bytes each.
func (d *sseDecoder) restInBlocks() error {
	var b []byte
	for {
		if d.r.Buffered() == 0 {
			if _, err := d.r.Peek(1); err != nil {
				d.blocks = nil
				return err
			}
		}
		buf, _ := d.r.Peek(d.r.Buffered())
		i := lineEnd(buf)
		part := buf
		if i >= 0 {
			part = buf[:i]
		}
		for len(part) > 0 {
			if len(b) == cap(b) {
				if b != nil {
					d.blocks = append(d.blocks, b)
				}
				b = make([]byte, 0, spliceBlock)
			}
			n := copy(b[len(b):cap(b)], part)
			b, part = b[:len(b)+n], part[n:]
		}
		if i < 0 {
			_, _ = d.r.Discard(len(buf))
			continue
		}
		d.skipLF = buf[i] == '\r'
		_, _ = d.r.Discard(i + 1)
		if len(b) > 0 {
			d.blocks = append(d.blocks, b)
		}
		return nil
	}
}

// wholeLine is line with the blocks read after it, in one buffer: a long
// line that is not an event's first data line is read as before.
func (d *sseDecoder) wholeLine(line []byte) []byte {
	if d.blocks == nil {
		return line
	}
	for _, b := range d.blocks {
		line = growBody(line, len(b))
		line = append(line, b...)
	}
	d.line, d.blocks = line, nil
	return line
}

// joinData makes data read into blocks the event's data buffer again,
// for a further data line.
func (d *sseDecoder) joinData() {
	if d.dataBlocks == nil {
		return
	}
	total := 0
	for _, b := range d.dataBlocks {
		total += len(b)
	}
	d.data = append(joinBlocks(d.dataBlocks, total+1), '\n')
	d.dataBlocks = nil
}

// lineEnd returns the index of the first CR or LF in b, or -1. Two
// single-byte searches are much faster than bytes.IndexAny over the long
// line of a large page.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// field applies one non-blank line to the event being assembled.
func (d *sseDecoder) field(line []byte) {
	if line[0] == ':' {
		d.blocks = nil
		return // comment, e.g. a keep-alive
	}
	if d.blocks != nil && !d.hasData && bytes.HasPrefix(line, []byte("data:")) {
		// An event's first data line, long: its blocks are the event's
		// data, and the line's head is no longer the decoder's to reuse.
		value := line[len("data:"):]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		d.dataBlocks = append([][]byte{value}, d.blocks...)
		d.line, d.blocks, d.hasData = nil, nil, true
		return
	}
	line = d.wholeLine(line)
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		d.joinData()
		if len(d.data) == 0 && len(value) >= largeInput {
			// A large first data line (a tools/list page) becomes the
			// event's buffer instead of being copied into another one.
			n := copy(d.line, value)
			d.line, d.data = d.data[:0], growBody(d.line[:n], 1)
		} else {
			d.data = growBody(d.data, len(value)+1)
			d.data = append(d.data, value...)
		}
		d.data = append(d.data, '\n')
		d.hasData = true
	case "event":
		if string(value) == "message" {
			// The one type MCP sends, named without a copy of it.
			d.eventType = "message"
		} else {
			d.eventType = string(value)
		}
	}
}

// reuse hands back the buffer of an event the caller is done with, for
// the next event's data: a stream of small events reuses one buffer.
func (d *sseDecoder) reuse(buf []byte) {
	if d.data == nil && cap(buf) < largeInput {
		d.data = buf[:0]
		return
	}
	putBody(buf)
}

// dispatch completes the current event; ok is false when it carried no data.
func (d *sseDecoder) dispatch() (sseEvent, bool) {
	defer func() {
		d.hasData = false
		d.eventType = ""
	}()
	if !d.hasData {
		return sseEvent{}, false
	}
	typ := d.eventType
	if typ == "" {
		typ = "message"
	}
	if blocks := d.dataBlocks; blocks != nil {
		d.dataBlocks = nil
		return sseEvent{Type: typ, Blocks: blocks}, true
	}
	// The event takes the buffer instead of a copy (a tools/list page is
	// one event of up to MaxBodyBytes); the next event starts another.
	buf := d.data
	d.data = nil
	data := buf[:len(buf)-1] // the last data line's line feed
	if len(data) == 0 {
		putBody(buf)
		return sseEvent{Type: typ}, true
	}
	d.last = buf
	return sseEvent{Type: typ, Data: data}, true
}

// errOversized is returned by cappedReader once more than the cap was read.
var errOversized = errors.New("body exceeds the read cap")

// cappedReader passes through at most limit bytes and fails with
// errOversized on the first byte beyond it, so a body of exactly the cap is
// accepted and one byte more is refused.
type cappedReader struct {
	r     io.Reader
	limit int64
	n     int64
	over  bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errOversized
	}
	// Ask for at most one byte beyond the cap, so that overflow is seen
	// without reading further, and never hand that byte on.
	if room := c.limit + 1 - c.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		c.over = true
		return n - int(c.n-c.limit), errOversized
	}
	return n, err
}
