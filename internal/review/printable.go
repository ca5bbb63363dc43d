package review

import (
	"fmt"
	"strings"

	"github.com/mcp-catalog/operator/internal/drift"
)

// Printable returns a string a server sent with every character a person
// would not see written as a visible escape instead: C0 controls and DEL
// as \xHH (ESC is \x1b), and C1 controls, zero-width, bidirectional and
// other default-ignorable characters, variation selectors and tag
// characters as <U+XXXX> (exactly the characters drift reports as hidden,
// drift.Hidden). Nothing is deleted: an escape sequence is shown with its
// content, as the model reading the text reads it, and printing the result
// cannot move the cursor, recolour, retitle or clear the terminal, rewrite
// an earlier line (\r, backspace) or reorder text (bidirectional
// overrides). With keepLines, newlines and tabs survive, for multi-line
// text such as a tool's description or output; otherwise they become
// spaces.
//
// Every printer of a server-provided string goes through it (OneLine does).
func Printable(s string, keepLines bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == '\n' || r == '\t' || drift.Hidden(r) != "" }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			if keepLines {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case drift.Hidden(r) == "":
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, "<U+%04X>", r)
		}
	}
	return b.String()
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
