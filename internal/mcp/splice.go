package mcp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// A tools/call result that carries an image arrives as one long base64
// string inside a small JSON object. When the server does not say how long
// its answer is, the body used to be read into one buffer grown by
// doubling: at the last step the old buffer and one twice its size were
// both held, and the answer sat in a buffer up to twice its size, so a
// call held about three times what it carried. Any buffer made contiguous
// by copying holds two copies at its last step.
//
// So such a body, once it outgrows spliceFrom, is read into blocks that
// are never copied into one. Its long strings (spliceString bytes or more,
// printable ASCII without escapes: base64 is) stay in the blocks as lists
// of slices; everything else is copied into one small buffer, each long
// string replaced by a short placeholder string, and that buffer is
// parsed as any body is. The placeholder, "!" and the string's number, is
// not base64, so a reader that does not know of it fails on it rather than
// reading it as data. A body is kept this way only when every long string
// is where the gateway writes a part that is not text from (a content
// block's data, or its resource's blob); anywhere else (a text, an error,
// structured content, an object's name) the body is made whole again and
// read as before.

const (
	// spliceFrom is the size from which a body of unknown length is read
	// into blocks rather than grown further.
	spliceFrom = 512 << 10
	// spliceBlock is the size of each further block.
	spliceBlock = 512 << 10
	// spliceString is the length from which a string is left in the
	// blocks.
	spliceString = 64 << 10
)

// splice is a body read into blocks whose long strings were left there.
type splice struct {
	holes []hole
	// blocks are the body's blocks, until the body is known to stay
	// split (join needs them).
	blocks [][]byte
	// firstHeld is set when a hole lies in the first block.
	firstHeld bool
}

// hole is one long string left in the blocks.
type hole struct {
	// at is where its placeholder's text ("!" and the number) starts in
	// the buffer that was parsed (later: in the result).
	at int
	// segs are the string's text, its quotes excluded, in order.
	segs [][]byte
	// start and end delimit the string's text in the body, for join.
	start, end int
}

// readBlocks reads the rest of r into blocks of spliceBlock bytes. Only
// io.EOF ends it well: any other error, io.ErrUnexpectedEOF of a body cut
// short included, is returned as readBody returns it.
func readBlocks(r io.Reader) ([][]byte, error) {
	var blocks [][]byte
	for {
		b := make([]byte, 0, spliceBlock)
		var err error
		for len(b) < cap(b) && err == nil {
			var n int
			n, err = r.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
		}
		if len(b) > 0 {
			blocks = append(blocks, b)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return blocks, nil
		default:
			return blocks, err
		}
	}
}

// splitBody makes the body held in blocks one buffer to parse: its long
// strings left in the blocks (sp, nil when there are none) and
// placeholders in their stead, or the whole body.
func splitBody(blocks [][]byte) (buf []byte, sp *splice) {
	return splitBodyFrom(blocks, spliceString)
}

// splitBodyFrom is splitBody leaving strings of minLen bytes or more.
func splitBodyFrom(blocks [][]byte, minLen int) (buf []byte, sp *splice) {
	spans, total := longStrings(blocks, minLen)
	if len(spans) == 0 {
		return joinBlocks(blocks, total), nil
	}
	sp = &splice{blocks: blocks, holes: make([]hole, 0, len(spans))}
	size := total
	for i, s := range spans {
		size -= s[1] - s[0]
		size += 1 + len(strconv.Itoa(i))
	}
	buf = growBody(nil, size)
	// blocks[bi] starts at the body's offset pos; the body is copied or
	// sliced up to next.
	bi, pos, next := 0, 0, 0
	// copyTo appends the body's bytes from next to end.
	copyTo := func(end int) {
		for next < end {
			for pos+len(blocks[bi]) <= next {
				pos += len(blocks[bi])
				bi++
			}
			stop := min(end, pos+len(blocks[bi]))
			buf = append(buf, blocks[bi][next-pos:stop-pos]...)
			next = stop
		}
	}
	for i, s := range spans {
		copyTo(s[0])
		h := hole{at: len(buf), start: s[0], end: s[1]}
		buf = append(append(buf, '!'), strconv.Itoa(i)...)
		// The string's own bytes, as slices of the blocks.
		for next < s[1] {
			for pos+len(blocks[bi]) <= next {
				pos += len(blocks[bi])
				bi++
			}
			stop := min(s[1], pos+len(blocks[bi]))
			h.segs = append(h.segs, blocks[bi][next-pos:stop-pos:stop-pos])
			sp.firstHeld = sp.firstHeld || bi == 0
			next = stop
		}
		sp.holes = append(sp.holes, h)
	}
	copyTo(total)
	return buf, sp
}

// parseBlocks parses a message read into blocks: its long strings left
// in them when each is where the gateway writes such a string from (the
// message's tape then holds them), the message made whole otherwise. buf
// is the buffer the message was parsed from, for it to own.
func parseBlocks(blocks [][]byte, id string) (msg *message, buf []byte, err error) {
	buf, sp := splitBody(blocks)
	msg, err = parseMessage(buf, id)
	if sp == nil {
		return msg, buf, err
	}
	if err == nil && sp.placed(msg) {
		msg.tape.split = sp
		return msg, buf, nil
	}
	msg.release()
	putBody(buf)
	buf = sp.join()
	msg, err = parseMessage(buf, id)
	return msg, buf, err
}

// joinBlocks copies blocks into one buffer of total bytes.
func joinBlocks(blocks [][]byte, total int) []byte {
	buf := growBody(nil, total)
	for _, b := range blocks {
		buf = append(buf, b...)
	}
	return buf
}

// join is the body as it was sent, in one buffer.
func (sp *splice) join() []byte {
	total := 0
	for _, b := range sp.blocks {
		total += len(b)
	}
	return joinBlocks(sp.blocks, total)
}

// longStrings finds the strings of the body in blocks that are left in
// them (minLen bytes or more): spans of their text (quotes excluded), as
// offsets in the body, in order. Only quotes and escapes are looked at:
// which bytes are strings is decided by them alone, so a long string
// replaced by another string leaves a body exactly as well formed as it
// was; the parser then checks the rest.
func longStrings(blocks [][]byte, minLen int) (spans [][2]int, total int) {
	var (
		inStr, esc, escaped bool
		start               int
	)
	for _, b := range blocks {
		i := 0
		q := -1 // b's next quote at or after i (len(b): none), when q >= i
		for i < len(b) {
			if esc {
				esc = false
				i++
				continue
			}
			if q < i {
				q = bytes.IndexByte(b[i:], '"')
				if q < 0 {
					q = len(b)
				} else {
					q += i
				}
			}
			if !inStr {
				if q == len(b) {
					break
				}
				inStr, escaped, start, i = true, false, total+q+1, q+1
				continue
			}
			if bs := bytes.IndexByte(b[i:q], '\\'); bs >= 0 {
				escaped, esc, i = true, true, i+bs+1
				continue
			}
			if q == len(b) {
				break
			}
			inStr, i = false, q+1
			if end := total + q; !escaped && end-start >= minLen {
				spans = append(spans, [2]int{start, end})
			}
		}
		total += len(b)
	}
	// A span is kept only when its bytes are printable ASCII: then its
	// text is its bytes, whatever decodes it.
	kept := spans[:0]
	for _, s := range spans {
		if printableSpan(blocks, s[0], s[1]) {
			kept = append(kept, s)
		}
	}
	return kept, total
}

// printableSpan reports whether the body's bytes from start to end are
// all printable ASCII (0x20 to 0x7E).
func printableSpan(blocks [][]byte, start, end int) bool {
	pos := 0
	for _, b := range blocks {
		lo, hi := max(start-pos, 0), min(end-pos, len(b))
		if lo < hi && !printable(b[lo:hi]) {
			return false
		}
		pos += len(b)
		if pos >= end {
			break
		}
	}
	return true
}

// printable reports whether every byte of b is from 0x20 to 0x7E.
func printable(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		// The word test may flag a word needlessly (a borrow, a carry),
		// never miss one; a flagged word is looked at byte by byte.
		if w := binary.LittleEndian.Uint64(b[i:]); ((w-ctl)|(w+lsb)|w)&msb != 0 && !printableBytes(b[i:i+8]) {
			return false
		}
	}
	return printableBytes(b[i:])
}

func printableBytes(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7E {
			return false
		}
	}
	return true
}

// placed reports whether every long string of sp is where it may stay
// split: the data of a block of the content of m's result, or the blob
// of a block's resource. Each is then renumbered relative to the result.
func (sp *splice) placed(m *message) bool {
	if m.kind != kindResponse || m.tape == nil {
		return false
	}
	t, r := m.tape, m.resultAt
	if t.e[r].kind != kObject {
		return false
	}
	c := t.member(r, "content")
	if c < 0 || t.e[c].kind != kArray {
		return false
	}
	h := 0
	// The blocks are in the body's order, and so are the holes: each
	// hole must be the next candidate that is one, or the body is joined.
	take := func(v int) {
		if v >= 0 && h < len(sp.holes) && t.e[v].kind == kString && int(t.e[v].start)+1 == sp.holes[h].at {
			h++
		}
	}
	for b, end := c+1, t.next(c); b < end && h < len(sp.holes); b = t.next(b) {
		if t.e[b].kind != kObject {
			continue
		}
		// A block's data and its resource's blob, each the first member
		// of its name (as member reads them), in the body's order.
		d, blob := t.member(b, "data"), -1
		if res := t.member(b, "resource"); res >= 0 && t.e[res].kind == kObject {
			blob = t.member(res, "blob")
		}
		if blob >= 0 && d > blob {
			d, blob = blob, d
		}
		take(d)
		take(blob)
	}
	if h != len(sp.holes) {
		return false
	}
	from := int(t.e[r].start)
	for i := range sp.holes {
		sp.holes[i].at -= from
	}
	sp.blocks = nil
	return true
}

// holeAt returns the hole whose placeholder text is data, a slice of
// result (the bytes sp was renumbered for); ok is false for any other
// bytes, a server's own string that reads like a placeholder included.
func (sp *splice) holeAt(result, data []byte) (*hole, bool) {
	if sp == nil || len(data) < 2 || data[0] != '!' {
		return nil, false
	}
	i, err := strconv.Atoi(string(data[1:]))
	if err != nil || i < 0 || i >= len(sp.holes) {
		return nil, false
	}
	h := &sp.holes[i]
	if h.at >= len(result) || &result[h.at] != &data[0] || len(data) != 1+len(strconv.Itoa(i)) {
		return nil, false
	}
	return h, true
}

// expand is raw, a slice of result, with every placeholder in it replaced
// by its string's text: raw itself when it holds none.
func (sp *splice) expand(result, raw []byte) []byte {
	if sp == nil {
		return raw
	}
	var out []byte
	from := 0
	for i := 0; i < len(raw); {
		k := bytes.Index(raw[i:], []byte(`"!`))
		if k < 0 {
			break
		}
		k += i + 1
		e := bytes.IndexByte(raw[k:], '"')
		if e < 0 {
			break
		}
		e += k
		h, ok := sp.holeAt(result, raw[k:e])
		if !ok {
			i = k
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(raw)+h.end-h.start)
		}
		out = append(out, raw[from:k]...)
		for _, s := range h.segs {
			out = append(out, s...)
		}
		from, i = e, e
	}
	if out == nil {
		return raw
	}
	return append(out, raw[from:]...)
}

// Segments returns the text of a long string of Result that was left
// where it was read, in order, when data is that string's text as it
// stands in Result (its placeholder); ok is false for any other bytes.
// A long string is left only as a content block's data or its resource's
// blob, and only in printable ASCII, so its text is its bytes.
func (o *CallOutcome) Segments(data []byte) ([][]byte, bool) {
	h, ok := o.split.holeAt(o.Result, data)
	if !ok {
		return nil, false
	}
	return h.segs, true
}

// Expand returns raw, a slice of Result, as the server sent it: the long
// strings left where they were read copied back in. It is raw itself when
// it holds none.
func (o *CallOutcome) Expand(raw []byte) []byte {
	return o.split.expand(o.Result, raw)
}

// expandedResult is the message's result as sent, in one buffer of its
// own when long strings were left out of it.
func (m *message) expandedResult() json.RawMessage {
	if m.tape == nil || m.tape.split == nil {
		return m.result
	}
	return m.tape.split.expand(m.result, m.result)
}
