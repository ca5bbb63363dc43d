package drift

import (
	"strings"
	"unicode"
)

// Hidden character classes: characters a person does not see where a
// model reads them. Hidden says which one a rune is.
const (
	control        = "control character"
	bidi           = "bidirectional control"
	tag            = "Unicode tag character"
	variation      = "variation selector"
	zeroWidth      = "zero-width character"
	defaultIgnored = "default-ignorable character"
)

// Hidden says which kind of hidden character r is, or "" when it is one a
// person sees. The hidden ones are every C0 and C1 control and DEL except
// newline and tab (which a reader sees as layout), and every code point
// with the Unicode property Default_Ignorable_Code_Point (zero-width and
// format characters, bidirectional controls, variation selectors, tag
// characters, Hangul fillers and the code points reserved as ignorable),
// and the interlinear annotation characters, which mark text some
// renderers never show.
//
// Every review surface escapes exactly these (review.Printable), so what
// drift reports as hidden is what a reviewer is shown as an escape.
func Hidden(r rune) string {
	if r < 0x80 {
		if r == '\n' || r == '\t' || (r >= 0x20 && r < 0x7f) {
			return ""
		}
		return control
	}
	switch {
	case r <= 0x9f:
		return control
	case r >= 0xE0000 && r <= 0xE007F:
		return tag
	case r == 0x200E || r == 0x200F || r == 0x061C || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069):
		return bidi
	case (r >= 0x200B && r <= 0x200D) || (r >= 0x2060 && r <= 0x2064) || r == 0xFEFF || r == 0x180E || r == 0x00AD || r == 0x034F:
		return zeroWidth
	case unicode.Is(unicode.Variation_Selector, r):
		return variation
	case r >= 0xFFF9 && r <= 0xFFFB:
		return defaultIgnored
	case defaultIgnorable(r):
		return defaultIgnored
	}
	return ""
}

// defaultIgnorable reports the Unicode property Default_Ignorable_Code_Point,
// derived as the Unicode Character Database derives it
// (DerivedCoreProperties.txt): Other_Default_Ignorable_Code_Point, format
// characters (Cf) and variation selectors, less white space, the
// interlinear annotation characters, the Egyptian hieroglyph format
// controls and the prepended concatenation marks (format characters that
// are meant to be seen).
func defaultIgnorable(r rune) bool {
	switch {
	case unicode.Is(unicode.White_Space, r),
		r >= 0xFFF9 && r <= 0xFFFB,
		r >= 0x13430 && r <= 0x1343F,
		unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Variation_Selector, r)
}

// isControl reports the characters the import removes from a server's
// text: C0 and C1 controls and DEL, except newline and tab.
func isControl(r rune) bool {
	return Hidden(r) == control
}

// StripControls is s without its C0 and C1 controls and DEL, newline and
// tab excepted, and whether it had any. The import stores a server's text
// this way, so that no escape sequence reaches what is stored, served or
// shown; only the control characters go, the text between them stays,
// for reviewer and model alike.
func StripControls(s string) (string, bool) {
	if strings.IndexFunc(s, isControl) < 0 {
		return s, false
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s), true
}
