package review

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct {
		name, in, want, wantLines string
	}{
		{"plain", "héllo, wörld ✓", "héllo, wörld ✓", "héllo, wörld ✓"},
		{"colour", "\x1b[1;31mred\x1b[0m", "red", "red"},
		{"clear screen and home", "a\x1b[2J\x1b[Hb", "ab", "ab"},
		{"window title (OSC, BEL)", "a\x1b]0;owned\ab", "ab", "ab"},
		{"hyperlink (OSC, ST)", "a\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\b", "alinkb", "alinkb"},
		{"C1 CSI", "a\u009b31mb", "ab", "ab"},
		{"carriage return overwrite", "approved\rdenied", "approveddenied", "approveddenied"},
		{"backspace and bell", "ab\b\bxy\a", "abxy", "abxy"},
		{"bidi override", "abc\u202edcba\u202c", "abcdcba", "abcdcba"},
		{"zero width", "a\u200bb", "ab", "ab"},
		{"newlines and tabs", "a\nb\tc", "a b c", "a\nb\tc"},
		{"escape at the end", "a\x1b", "a", "a"},
		{"unterminated CSI", "a\x1b[12", "a", "a"},
		{"DEL and NUL", "a\x7f\x00b", "ab", "ab"},
	} {
		if got := Printable(c.in, false); got != c.want {
			t.Errorf("%s: Printable(%q, false) = %q, want %q", c.name, c.in, got, c.want)
		}
		if got := Printable(c.in, true); got != c.wantLines {
			t.Errorf("%s: Printable(%q, true) = %q, want %q", c.name, c.in, got, c.wantLines)
		}
	}
	if got := OneLine("x\x1b[2Jy\r\nz", 80); got != "xy z" {
		t.Errorf("OneLine = %q", got)
	}
}
