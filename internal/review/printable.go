package review

import (
	"strings"
	"unicode"
)

// Printable returns a string a server sent with every control character
// removed, so that printing it cannot move the cursor, recolour, retitle or
// clear the terminal, rewrite an earlier line (\r, backspace) or reorder
// text (bidirectional overrides). ANSI escape sequences are removed whole.
// With keepLines, newlines and tabs survive, for multi-line text such as a
// tool's output; otherwise they become spaces.
//
// Every printer of a server-provided string goes through it (OneLine does).
func Printable(s string, keepLines bool) string {
	var b strings.Builder
	b.Grow(len(s))
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\x1b':
			i = skipEscape(rs, i)
		case r == '\n' || r == '\t':
			if keepLines {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == '\u009b': // CSI as one C1 character
			i = skipCSI(rs, i+1)
		case r == '\u009d': // OSC as one C1 character
			i = skipString(rs, i+1)
		case unicode.IsControl(r), isFormatControl(r):
			// dropped: C0 (\r, \b, BEL, ...), DEL, C1, bidi and other
			// invisible format characters
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isFormatControl reports the invisible characters that change how the
// text around them is laid out: bidirectional embeddings, overrides and
// isolates, and zero-width marks.
func isFormatControl(r rune) bool {
	return unicode.Is(unicode.Cf, r)
}

// skipEscape returns the index of the last rune of the escape sequence
// starting at rs[i] (ESC).
func skipEscape(rs []rune, i int) int {
	if i+1 >= len(rs) {
		return i
	}
	switch rs[i+1] {
	case '[':
		return skipCSI(rs, i+2)
	case ']', 'P', '_', '^', 'X':
		return skipString(rs, i+2)
	default:
		return i + 1 // a two-character sequence (ESC c, ESC 7, ...)
	}
}

// skipCSI skips parameter and intermediate bytes up to and including the
// final byte of a control sequence starting at rs[i].
func skipCSI(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		// Parameters and intermediates are 0x20-0x3f; anything else ends
		// the sequence (a final byte, or garbage that is dropped with it).
		if rs[i] < 0x20 || rs[i] > 0x3f {
			return i
		}
	}
	return len(rs) - 1
}

// skipString skips an operating-system command or similar string up to its
// terminator: BEL, ST (ESC \) or the C1 ST character.
func skipString(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		switch {
		case rs[i] == '\a' || rs[i] == '\u009c':
			return i
		case rs[i] == '\x1b' && i+1 < len(rs) && rs[i+1] == '\\':
			return i + 1
		}
	}
	return len(rs) - 1
}

// OneLine is Printable on one line, with runs of white space made one
// space, cut to n characters (the last one an ellipsis when cut).
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(Printable(s, false)), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
