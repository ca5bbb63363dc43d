package mcp

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"
)

// A tape is a flat index of one JSON value, built by a single pass over its
// bytes that validates them with the grammar of jsonScanner (the grammar
// encoding/json accepts, with its nesting limit). Every value has one entry;
// an object's entries are its members' key and value entries in turn, an
// array's its elements', and a container's entry says where its entries end,
// so any value is skipped in O(1).
//
// It exists so that a tools/list page is scanned once: the envelope, the
// result, every definition and every schema node are then read from the
// tape, where each level used to be scanned again by its own decodeObject
// and turned into a map (see docs/benchmarks.md).
type tape struct {
	b []byte
	e []tapeEntry
	// body is the buffer behind b when the tape owns it; release hands it
	// back to bodyPool with the tape.
	body []byte
	// split holds the long strings of a tools/call result left where
	// they were read (splice.go); nil for a body read whole.
	split *splice
}

type tapeEntry struct {
	// start and end delimit the value's bytes (a string's quotes included).
	start, end int32
	// next is the index of the first entry after this value's entries.
	next int32
	kind byte
	// plain marks a string without escapes and without bytes above 0x7F:
	// its text is the bytes between its quotes.
	plain bool
}

const (
	kObject byte = iota + 1
	kArray
	kString
	kNumber
	kTrue
	kFalse
	kNull
)

// tapePool keeps the tapes of large inputs only: a small one costs little
// to build afresh, and a pool that also held small ones would hand a small
// tape to the next large page.
var tapePool = sync.Pool{New: func() any { return new(tape) }}

const (
	// largeInput is the size from which buffers and tapes are pooled.
	largeInput = 8 << 10
	// minPooledEntries and maxPooledEntries bound the tapes kept.
	minPooledEntries = largeInput / 8
	maxPooledEntries = 1 << 20
)

// parseTape indexes b, which must hold exactly one JSON value (surrounding
// whitespace allowed). ok is false when b is not such a value; the caller
// then classifies the failure with the byte-level readers, which decide
// which error a malformed input gets. Inputs of 2 GiB or more are not
// indexed (offsets are 32-bit); bodies are capped far below that.
func parseTape(b []byte) (*tape, bool) {
	if len(b) > math.MaxInt32 {
		return nil, false
	}
	t := new(tape)
	if len(b) >= largeInput {
		t = tapePool.Get().(*tape)
		if cap(t.e) == 0 {
			// A page has about one entry per ten bytes; growing to that
			// from nothing would allocate the tape about twice over. A
			// result carrying an image has a handful in megabytes: no
			// value has more entries than the structural bytes before
			// it, counted at memory speed.
			t.e = make([]tapeEntry, 0, min(len(b)/8, 2*bytes.Count(b, []byte{':'})+bytes.Count(b, []byte{','})+bytes.Count(b, []byte{'['})+1))
		}
	}
	if !parseTapeIn(t, b) {
		t.release()
		return nil, false
	}
	return t, true
}

// parseTapeIn is parseTape into t, whose entries it reuses: a stream's
// messages that are not its answer are read one after another into one
// tape.
func parseTapeIn(t *tape, b []byte) bool {
	if len(b) > math.MaxInt32 {
		return false
	}
	t.b, t.e, t.body = b, t.e[:0], nil
	p := tapeParser{t: t, b: b}
	if !p.value(0) {
		return false
	}
	p.skipSpace()
	return p.i == len(b)
}

// release returns the tape, and the body buffer it indexes if that was
// pooled, for reuse. Nothing read from the tape may be used afterwards
// unless it was copied.
func (t *tape) release() {
	if t == nil {
		return
	}
	putBody(t.body)
	t.b, t.body, t.split = nil, nil, nil
	// Neither a small tape nor one of a pathological page is kept.
	if c := cap(t.e); c >= minPooledEntries && c <= maxPooledEntries {
		tapePool.Put(t)
	}
}

type tapeParser struct {
	t *tape
	b []byte
	i int
}

func (p *tapeParser) skipSpace() {
	for p.i < len(p.b) && isJSONSpace(p.b[p.i]) {
		p.i++
	}
}

// push starts an entry; without a tape (a parser that only validates, as
// jsonScanner uses it) nothing is recorded.
func (p *tapeParser) push(kind byte) int {
	if p.t == nil {
		return -1
	}
	p.t.e = append(p.t.e, tapeEntry{start: int32(p.i), kind: kind})
	return len(p.t.e) - 1
}

func (p *tapeParser) close(idx int) {
	if idx < 0 {
		return
	}
	e := &p.t.e[idx]
	e.end = int32(p.i)
	e.next = int32(len(p.t.e))
}

// value reads one value at nesting depth depth, as jsonScanner.value does.
func (p *tapeParser) value(depth int) bool {
	p.skipSpace()
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.container(kObject, '}', depth)
	case c == '[':
		return p.container(kArray, ']', depth)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		idx := p.push(kNumber)
		s := jsonScanner{b: p.b, i: p.i}
		if !s.number() {
			return false
		}
		p.i = s.i
		p.close(idx)
		return true
	case c == 't':
		return p.literal("true", kTrue)
	case c == 'f':
		return p.literal("false", kFalse)
	case c == 'n':
		return p.literal("null", kNull)
	}
	return false
}

// container reads an object or array (kind, ending with closer) whose
// opening byte is at p.i. An object's members are a string, a colon and a
// value; an array's elements are values.
func (p *tapeParser) container(kind, closer byte, depth int) bool {
	if depth >= maxJSONDepth {
		return false
	}
	idx := p.push(kind)
	p.i++
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == closer {
		p.i++
		p.close(idx)
		return true
	}
	for {
		if kind == kObject {
			p.skipSpace()
			if p.i >= len(p.b) || p.b[p.i] != '"' || !p.str() {
				return false
			}
			p.skipSpace()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return false
			}
			p.i++
		}
		if !p.value(depth + 1) {
			return false
		}
		p.skipSpace()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case closer:
			p.i++
			p.close(idx)
			return true
		default:
			return false
		}
	}
}

func (p *tapeParser) literal(lit string, kind byte) bool {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return false
	}
	idx := p.push(kind)
	p.i += len(lit)
	p.close(idx)
	return true
}

// SWAR constants: one byte value repeated in every byte of a word.
const (
	lsb   = 0x0101010101010101
	msb   = 0x8080808080808080
	quote = '"' * lsb
	bslsh = '\\' * lsb
	ctl   = 0x20 * lsb
)

// needsLook reports whether any byte of the little-endian word w is a quote,
// a backslash, a control character or above 0x7F. (The classic "has a byte
// less than n" and "has a zero byte" tests: they may flag a word needlessly
// but never miss one, and a flagged word is looked at byte by byte.)
func needsLook(w uint64) bool {
	q := w ^ quote
	s := w ^ bslsh
	return ((w-ctl)|(q-lsb)|(s-lsb)|w)&msb != 0
}

// str reads a string at p.i (which holds the opening quote) and pushes its
// entry. Eight plain bytes are passed at a time; most of a page is
// descriptions, so this loop is where a page's bytes are read.
func (p *tapeParser) str() bool {
	b := p.b
	idx := p.push(kString)
	i := p.i + 1
	plain := true
	for {
		for i+8 <= len(b) && !needsLook(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return false
		}
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			p.close(idx)
			if idx >= 0 {
				p.t.e[idx].plain = plain
			}
			return true
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				return false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 {
					return false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return false
					}
				}
				i += 5
			default:
				return false
			}
		case c < 0x20:
			return false
		case c >= 0x80:
			plain = false
			i++
		default:
			i++
		}
	}
}

// raw returns the bytes of the value at entry i.
func (t *tape) raw(i int) []byte {
	e := &t.e[i]
	return t.b[e.start:e.end:e.end]
}

// next returns the entry after the value at entry i.
func (t *tape) next(i int) int { return int(t.e[i].next) }

// text returns the decoded text of the string at entry i, exactly as
// unquote (and so encoding/json) decodes it.
func (t *tape) text(i int) (string, bool) {
	e := &t.e[i]
	if e.plain {
		return string(t.b[e.start+1 : e.end-1]), true
	}
	return unquote(t.b[e.start:e.end])
}

// is reports whether the string at entry i decodes to s, without
// allocating for a plain string.
func (t *tape) is(i int, s string) bool {
	e := &t.e[i]
	if e.plain {
		return string(t.b[e.start+1:e.end-1]) == s
	}
	d, ok := unquote(t.b[e.start:e.end])
	return ok && d == s
}

// stringAt decodes the value at entry i as a string, as decodeString does:
// only a string is one (null is not).
func (t *tape) stringAt(i int) (string, bool) {
	if t.e[i].kind != kString {
		return "", false
	}
	return t.text(i)
}

// stringIs reports whether the value at entry i is a string decoding to s.
func (t *tape) stringIs(i int, s string) bool {
	return t.e[i].kind == kString && t.is(i, s)
}

// sameKey reports whether the keys at entries a and b decode to the same
// text.
func (t *tape) sameKey(a, b int) bool {
	ea, eb := &t.e[a], &t.e[b]
	if ea.plain && eb.plain {
		return string(t.b[ea.start:ea.end]) == string(t.b[eb.start:eb.end])
	}
	if ea.plain != eb.plain && !t.mayEscapeTo(a, b) {
		return false
	}
	da, oka := t.text(a)
	db, okb := t.text(b)
	return oka && okb && da == db
}

// mayEscapeTo is a cheap filter before decoding two keys of which one is
// plain: a plain key is only matched by an escaped one that is at least as
// long in its raw form.
func (t *tape) mayEscapeTo(a, b int) bool {
	ea, eb := &t.e[a], &t.e[b]
	if !ea.plain {
		ea, eb = eb, ea
	}
	return eb.end-eb.start >= ea.end-ea.start
}

// hasDuplicate reports whether the object at entry i repeats a member name
// (compared after unescaping, as decodeObject compares them).
func (t *tape) hasDuplicate(i int) bool {
	end := t.next(i)
	n := 0
	for k := i + 1; k < end; k = t.next(k + 1) {
		n++
	}
	if n < 2 {
		return false
	}
	if n <= 16 {
		for a := i + 1; a < end; a = t.next(a + 1) {
			for b := t.next(a + 1); b < end; b = t.next(b + 1) {
				if t.sameKey(a, b) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, n)
	for k := i + 1; k < end; k = t.next(k + 1) {
		key, ok := t.text(k)
		if !ok {
			return true // cannot happen for a validated string
		}
		if _, dup := seen[key]; dup {
			return true
		}
		seen[key] = struct{}{}
	}
	return false
}

// member returns the value entry of the member named key of the object at
// entry i, or -1. The object is known to have no duplicate member.
func (t *tape) member(i int, key string) int {
	end := t.next(i)
	for k := i + 1; k < end; k = t.next(k + 1) {
		if t.is(k, key) {
			return k + 1
		}
	}
	return -1
}

// elements returns the number of elements of the array at entry i.
func (t *tape) elements(i int) int {
	n := 0
	for k, end := i+1, t.next(i); k < end; k = t.next(k) {
		n++
	}
	return n
}

// bodyPool holds large buffers for response bodies: a tools/list page is up
// to MaxBodyBytes, and a fresh buffer per page (grown step by step) was a
// large share of an import's allocations. Small bodies are not pooled.
var bodyPool sync.Pool

// growBody returns b with room for n more bytes. A buffer that must grow
// to largeInput or more is taken from bodyPool when one there is big
// enough; b's old buffer is then handed back.
func growBody(b []byte, n int) []byte {
	need := len(b) + n
	if need <= cap(b) {
		return b
	}
	if need >= largeInput {
		if p, _ := bodyPool.Get().(*[]byte); p != nil && cap(*p) >= need {
			nb := append((*p)[:0], b...)
			putBody(b)
			return nb
		}
	}
	nb := make([]byte, len(b), max(need, 2*cap(b), 512))
	copy(nb, b)
	return nb
}

// putBody hands a buffer no longer referenced to bodyPool, if it is worth
// keeping.
func putBody(b []byte) {
	if cap(b) < largeInput || cap(b) > 2*MaxBodyBytes+64<<10 {
		return
	}
	b = b[:0]
	bodyPool.Put(&b)
}
