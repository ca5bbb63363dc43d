package inspect

import (
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
	cHigh    // the first byte of a multi-byte UTF-8 sequence, or a stray one
	cControl // a C0 control or DEL, other than tab, newline and carriage return
	cLess    // '<', which may open pseudo-markup
	cDash    // '-', which may open a PEM block
	cStop    // the end of a sentence, which breaks a phrase
)

var class [256]uint8

func init() {
	for b := 0; b < 256; b++ {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
			class[b] = cLetter
		case b >= '0' && b <= '9':
			class[b] = cDigit
		case b >= 0x80:
			class[b] = cHigh
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
}

// Scan screens text in one pass.
func Scan(text string) Result {
	var r Result
	var w words
	n := len(text)
	for i := 0; i < n; {
		switch class[text[i]] {
		case cLetter:
			j := i + 1
			for j < n && class[text[j]] == cLetter {
				j++
			}
			// A credential starts at a word; its format decides where it
			// ends.
			if j-i >= 2 && secretStart(text[i], text[i+1]) {
				if end, detail := secretAt(text, i); end > 0 {
					r.add(Secret, detail, i, end)
					w.reset()
					i = end
					continue
				}
			}
			// Most words are of no phrase: their signature's bit is clear,
			// and they are counted without a call.
			if l := j - i; l <= maxWord && firstLast[text[i]&31][text[j-1]&31] {
				sig := sigOf(text[i:j])
				if k := presentBit(sig); present[k/64]&(1<<(k%64)) != 0 {
					w.push(&r, text, i, j, sig)
					i = j
					continue
				}
			}
			w.other()
			i = j
		case cDigit:
			j := i + 1
			for j < n && (class[text[j]] == cDigit || class[text[j]] == cLetter) {
				j++
			}
			w.other()
			i = j
		case cHigh:
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
			i++
		default:
			// Spaces and other punctuation separate words without
			// breaking a phrase.
			i++
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
