package inspect

import (
	"math/bits"
	"unicode/utf8"

	"github.com/mcp-catalog/operator/internal/drift"
)

// Kind is what a finding is.
type Kind string

const (
	// HiddenCharacters: a control, format, bidirectional, variation or
	// tag character, or another a person does not see.
	HiddenCharacters Kind = "HiddenCharacters"
	// InstructionLike: a phrase that addresses the model reading the text.
	InstructionLike Kind = "InstructionLike"
	// Secret: a credential in a known format.
	Secret Kind = "Secret"
)

// Details of Secret findings: the format recognised.
const (
	SecretGitHubToken   = "github-token"
	SecretGitLabToken   = "gitlab-token"
	SecretSlackToken    = "slack-token"
	SecretAWSAccessKey  = "aws-access-key-id"
	SecretGoogleAPIKey  = "google-api-key"
	SecretAPIKey        = "api-key"
	SecretStripeKey     = "stripe-key"
	SecretJWT           = "jwt"
	SecretPrivateKey    = "private-key"
	detailInstruction   = "instruction-like phrase"
	detailInstructTag   = "pseudo-markup tag"
	detailHiddenControl = "control character"
)

// Finding is one thing found: its kind, a detail from a fixed vocabulary
// (never text of the result), and the bytes [Start, End) it spans.
type Finding struct {
	Kind       Kind
	Detail     string
	Start, End int
}

// MaxFindings bounds the findings of one text: past it, Scan stops
// recording (Truncated says so) but the text is still known to hold each
// kind found so far.
const MaxFindings = 256

// Result is what Scan found in a text.
type Result struct {
	Findings []Finding
	// Truncated reports that more was found than MaxFindings.
	Truncated bool
}

// Has reports whether a finding of kind k was made.
func (r *Result) Has(k Kind) bool {
	for i := range r.Findings {
		if r.Findings[i].Kind == k {
			return true
		}
	}
	return false
}

func (r *Result) add(k Kind, detail string, start, end int) {
	if len(r.Findings) >= MaxFindings {
		r.Truncated = true
		return
	}
	// Neighbouring hidden characters of one kind are one finding.
	if n := len(r.Findings); n > 0 {
		last := &r.Findings[n-1]
		if last.Kind == k && last.Detail == detail && last.End == start {
			last.End = end
			return
		}
	}
	r.Findings = append(r.Findings, Finding{Kind: k, Detail: detail, Start: start, End: end})
}

// byte classes of the scanner.
const (
	cOther = iota
	cLetter
	cDigit
	cHigh    // the first byte of a multi-byte UTF-8 sequence that may encode a hidden character
	cControl // a C0 control or DEL, other than tab, newline and carriage return
	cLess    // '<', which may open pseudo-markup
	cDash    // '-', which may open a PEM block
	cStop    // the end of a sentence, which breaks a phrase
)

var class [256]uint8

// hiddenBlocks has, for each first byte 0xC0 to 0xEF of a two- or
// three-byte UTF-8 sequence, the bit of each second byte (its low six
// bits) after which the sequence may encode a hidden character: the
// sequences whose bit is clear (most of every script) are passed without
// decoding them.
var hiddenBlocks [0xF0 - 0xC0]uint64

// secretPairs has, for each ASCII letter (its low six bits) and each byte
// after it, the bit of the pair when a word may begin a credential with
// them (secretStart): a word is tested with one load, whatever follows its
// first letter.
var secretPairs [64][4]uint64

func init() {
	for b := 0; b < 256; b++ {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
			class[b] = cLetter
		case b >= '0' && b <= '9':
			class[b] = cDigit
		case b >= 0x80:
			// A byte that begins no hidden character (continuation bytes
			// among them) is passed like punctuation: a sequence is either
			// decoded whole from its first byte, or none of its bytes
			// matters.
			class[b] = cOther
		case b == '\n':
			class[b] = cStop
		case b == '\t' || b == '\r':
			class[b] = cOther
		case b < 0x20 || b == 0x7f:
			class[b] = cControl
		case b == '<':
			class[b] = cLess
		case b == '-':
			class[b] = cDash
		case b == '.' || b == '!' || b == '?' || b == ';' || b == ':':
			class[b] = cStop
		}
	}
	var buf [utf8.UTFMax]byte
	for r := rune(0x80); r <= 0xFFFF; r++ {
		if !maybeHidden(r) || !utf8.ValidRune(r) {
			continue
		}
		utf8.EncodeRune(buf[:], r)
		class[buf[0]] = cHigh
		hiddenBlocks[buf[0]-0xC0] |= 1 << (buf[1] & 63)
	}
	// Every rune past U+FFFF may be hidden (maybeHidden): the first bytes
	// of four-byte sequences are always decoded.
	for b := 0xF0; b <= 0xF4; b++ {
		class[b] = cHigh
	}
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			if class[a] == cLetter && class[b] == cLetter && secretStart(byte(a), byte(b)) {
				secretPairs[a&63][b>>6] |= 1 << (b & 63)
			}
		}
	}
}

// plainPair reports whether a two- or three-byte sequence beginning with
// b (0xC0 to 0xEF) and c (a continuation byte) encodes no hidden
// character, whatever follows.
func plainPair(b, c byte) bool { return hiddenBlocks[b-0xC0]>>(c&63)&1 == 0 }

// load64 is the eight bytes of s from i, the first lowest.
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// letterRun is how many of the eight bytes of x, from the lowest, are
// ASCII letters before the first that is not: the bytes are compared all
// at once, with the top bit of each byte as its result. A byte of 0x80 or
// more may carry into the bytes above it, which it is before. (The word's
// end is on the path from one word to the next, so the operations are
// few and mostly side by side.)
func letterRun(x uint64) int {
	const top = 0x8080808080808080
	y := x | 0x2020202020202020                              // lower case
	belowA := ^uint64((0x80-'a')*0x0101010101010101) - y     // top bit set when y < 'a': ^(y + c)
	pastZOrHigh := (y + (0x80-'z'-1)*0x0101010101010101) | x // top bit set when y > 'z' or x >= 0x80
	return bits.TrailingZeros64((belowA|pastZOrHigh)&top) / 8
}

// longKey is the key (keyOf) of a word of nine to sixteen letters whose
// first eight bytes are x and the rest x2, with the bytes after the word
// zero: the low five bits of each byte, packed without a loop.
func longKey(x, x2 uint64) uint64 {
	return 1<<63 | pack5(x) | pack5(x2)<<40
}

// pack5 packs the low five bits of each of the eight bytes of x, the first
// lowest, into 40 bits.
func pack5(x uint64) uint64 {
	x &= 0x1f1f1f1f1f1f1f1f
	x = x&0x001f001f001f001f | x&0x1f001f001f001f00>>3 // ten bits in each two bytes
	x = x&0x000003ff000003ff | x&0x03ff000003ff0000>>6 // twenty bits in each four bytes
	return x&0xfffff | x>>32&0xfffff<<20
}

// wordMask keeps the first l bytes of eight, for l up to 8.
var wordMask = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, 0xffffffffffffffff}

// skipOther is the first byte from i that is not of class cOther, or the
// end of the text.
func skipOther(text string, i int) int {
	for i < len(text) && class[text[i]] == cOther {
		i++
	}
	return i
}

// Scan screens text in one pass.
func Scan(text string) Result {
	var r Result
	var w words
	n := len(text)
scan:
	for i := 0; i < n; {
		b := text[i]
		switch class[b] {
		case cLetter:
			// Words, and the words after them that spaces or punctuation
			// separate, without returning to the switch.
			for {
				// The word's end and key (keyOf): of a word of up to eight
				// letters, from its eight bytes loaded at once.
				var key, pair uint64
				j, fast := i, false
				if i+16 <= n {
					x := load64(text, i)
					if l := letterRun(x); l < 8 {
						j, fast = i+l, true
						key, pair = (x|0x2020202020202020)&wordMask[l], x
					} else {
						// Eight letters or more: the next eight bytes too.
						x2 := load64(text, i+8)
						if l2 := letterRun(x2); l2 < 8 {
							j, fast, pair = i+8+l2, true, x
							switch {
							case l2 == 0:
								key = x | 0x2020202020202020
							case l2 <= maxWord-8:
								key = longKey(x, x2&wordMask[l2])
							}
						}
					}
				}
				if !fast {
					for j < n && class[text[j]] == cLetter {
						j++
					}
					key = keyOf(text[i:j])
					pair = uint64(text[i])
					if i+1 < n {
						pair |= uint64(text[i+1]) << 8
					}
				}
				// A credential starts at a word; its format decides where
				// it ends.
				if secretPairs[pair&63][pair>>14&3]>>(pair>>8&63)&1 != 0 {
					if end, detail := secretAt(text, i); end > 0 {
						r.add(Secret, detail, i, end)
						w.reset()
						i = end
						continue scan
					}
				}
				// Until a word that may begin a phrase, words are not
				// recorded (words.push), and most are not looked up.
				if s := slotOf(key); w.open != 0 || mayOpen(s) {
					if info := lookup(key, s); w.open|info&beginsMask != 0 {
						// w.push(&r, info, i, j), written out.
						slot := w.n % ringSize
						w.refs[slot] = uint16(info >> infoRef)
						w.starts[slot] = i
						w.n++
						w.open |= info & beginsMask
						if ends := info >> infoEnds & w.open; ends != 0 {
							w.ended(&r, ends, j)
						}
					}
				}
				// Spaces and punctuation that neither end a sentence nor
				// open anything; a word after them is read here.
				i = skipOther(text, j)
				if i >= n || class[text[i]] != cLetter {
					continue scan
				}
			}
		case cDigit:
			j := i + 1
			for j < n && (class[text[j]] == cDigit || class[text[j]] == cLetter) {
				j++
			}
			if w.open != 0 {
				w.push(&r, 0, i, j)
			}
			i = skipOther(text, j)
		case cHigh:
			if b < 0xF0 && i+1 < n {
				if c := text[i+1]; c&0xC0 == 0x80 && plainPair(b, c) {
					// The rest of the sequence is continuation bytes,
					// passed as punctuation.
					i = skipOther(text, i+2)
					continue
				}
			}
			c, size := utf8.DecodeRuneInString(text[i:])
			if maybeHidden(c) {
				if kind := drift.Hidden(c); kind != "" {
					r.add(HiddenCharacters, kind, i, i+size)
				}
			}
			i += size
		case cControl:
			r.add(HiddenCharacters, detailHiddenControl, i, i+1)
			i++
		case cLess:
			if end := tagAt(text, i); end > 0 {
				r.add(InstructionLike, detailInstructTag, i, end)
				i = end
				continue
			}
			i++
		case cDash:
			if end := privateKeyAt(text, i); end > 0 {
				r.add(Secret, SecretPrivateKey, i, end)
				i = end
				continue
			}
			i++
		case cStop:
			w.reset()
			i = skipOther(text, i+1)
		default:
			// Spaces, other punctuation and bytes of other scripts
			// separate words without breaking a phrase.
			i = skipOther(text, i+1)
		}
	}
	return r
}

// maybeHidden reports whether r may be a hidden character: false only
// for runes drift.Hidden is known to pass (a test holds the two together
// over every rune), so that common text is not looked up in Unicode
// tables rune by rune.
func maybeHidden(r rune) bool {
	switch {
	case r < 0xA0, r == 0xAD, r == 0x34F, r >= 0x600 && r <= 0x61C, r == 0x6DD, r == 0x70F,
		r >= 0x890 && r <= 0x8E2, r >= 0x115F && r <= 0x1160, r >= 0x17B4 && r <= 0x17B5,
		r >= 0x180B && r <= 0x180F, r >= 0x2000 && r <= 0x206F, r == 0x3164,
		r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF, r == 0xFFA0, r >= 0xFFF0 && r <= 0xFFFB,
		r >= 0x10000:
		return true
	}
	return false
}
