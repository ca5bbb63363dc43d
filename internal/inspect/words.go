package inspect

import "math/bits"

// The instruction-like phrases of the drift detectors, matched word by
// word: each word of the vocabulary belongs to groups, and a phrase is a
// sequence of groups, some optional, ending at the word just read. A word
// outside the vocabulary is a word that belongs to no group; a sentence's
// end forgets the words before it.

// Groups of words.
const (
	gIgnore uint64 = 1 << iota
	gAllAny
	gTheYour
	gPrev
	gInstr
	gYou
	gMust
	gHaveNeed
	gTo
	gAdv
	gDo
	gNot
	gDont
	gDon
	gT
	gNever
	gTell
	gWithout
	gTelling
	gSystem
	gPrompt
	gBefore
	gUsing
	gThis
	gAlwaysFirst
	gCall
	gSend
	gObj
	gThe
	gRead
	gContents
	gOf
	gCred
	gAPI
	gKeys
)

var vocabulary = map[string]uint64{
	"ignore": gIgnore, "disregard": gIgnore, "forget": gIgnore, "override": gIgnore,
	"all": gAllAny | gObj, "any": gAllAny | gThis,
	"the": gTheYour | gThis | gThe, "your": gTheYour,
	"previous": gPrev, "prior": gPrev, "above": gPrev, "earlier": gPrev, "other": gPrev, "system": gPrev | gSystem,
	"instruction": gInstr, "instructions": gInstr, "prompt": gInstr | gPrompt, "prompts": gInstr,
	"rule": gInstr, "rules": gInstr, "message": gInstr, "messages": gInstr,
	"you": gYou, "must": gMust, "should": gMust, "have": gHaveNeed, "need": gHaveNeed, "to": gTo,
	"always": gAdv | gAlwaysFirst, "never": gAdv | gNever, "first": gAdv | gAlwaysFirst, "also": gAdv, "now": gAdv,
	"do": gDo, "not": gNot, "dont": gDont, "don": gDon, "t": gT,
	"tell": gTell, "mention": gTell, "inform": gTell, "reveal": gTell, "show": gTell, "notify": gTell,
	"without": gWithout, "telling": gTelling, "informing": gTelling, "asking": gTelling, "notifying": gTelling,
	"before": gBefore, "using": gUsing, "calling": gUsing, "invoking": gUsing, "this": gThis | gObj,
	"call": gCall, "invoke": gCall, "run": gCall, "use": gCall,
	"send": gSend, "forward": gSend, "upload": gSend, "post": gSend, "exfiltrate": gSend, "copy": gSend,
	"it": gObj, "them": gObj, "that": gObj, "everything": gObj,
	"read": gRead, "include": gRead, "attach": gRead, "contents": gContents, "content": gContents, "of": gOf,
	"credentials": gCred, "passwords": gCred, "password": gCred, "tokens": gCred, "secrets": gCred,
	"api": gAPI, "keys": gKeys,
}

// elem is one place of a phrase: a word of the groups of mask (any word
// when mask is 0), optional when opt.
type elem struct {
	mask uint64
	opt  bool
}

var phrases = [][]elem{
	{{mask: gIgnore}, {mask: gAllAny, opt: true}, {mask: gTheYour, opt: true}, {mask: gPrev}, {mask: gInstr}},
	{{mask: gYou}, {mask: gMust}, {mask: gAdv}},
	{{mask: gYou}, {mask: gHaveNeed}, {mask: gTo}, {mask: gAdv}},
	{{mask: gDo}, {mask: gNot}, {mask: gTell}},
	{{mask: gDont}, {mask: gTell}},
	{{mask: gDon}, {mask: gT}, {mask: gTell}},
	{{mask: gNever}, {mask: gTell}},
	{{mask: gWithout}, {mask: gTelling}},
	{{mask: gSystem}, {mask: gPrompt}},
	{{mask: gBefore}, {mask: gUsing}, {mask: gThis}},
	{{mask: gAlwaysFirst}, {mask: gCall}},
	{{mask: gSend}, {mask: gObj}, {mask: gTo}},
	{{mask: gSend}, {mask: gThe}, {}, {mask: gTo}},
	{{mask: gRead}, {mask: gThe, opt: true}, {mask: gContents, opt: true}, {mask: gOf, opt: true}, {mask: gCred}},
	{{mask: gRead}, {mask: gThe, opt: true}, {mask: gContents, opt: true}, {mask: gOf, opt: true}, {mask: gAPI}, {mask: gKeys}},
}

// maxWord is the longest word of the vocabulary: longer words are not
// looked up.
const maxWord = 12

// entry is a word of the vocabulary: its signature (sigOf), its groups
// and the phrases (by bit, in the order of phrases) it can end.
type entry struct {
	word string
	sig  uint32
	mask uint64
	ends uint32
}

// table is the vocabulary by the hash of its signature, with linear
// probing: a word is looked up with a few arithmetic operations, and
// compared letter by letter only when its signature matches.
var table = func() (t [tableSize]entry) {
	for w, m := range vocabulary {
		var ends uint32
		for i, p := range phrases {
			if p[len(p)-1].mask&m != 0 {
				ends |= 1 << i
			}
		}
		sig := sigOf(w)
		h := slotOf(sig)
		for t[h].word != "" {
			h = (h + 1) % tableSize
		}
		t[h] = entry{word: w, sig: sig, mask: m, ends: ends}
	}
	return t
}()

const tableSize = 512

// firstLast says, by a word's first and last letters (either case: the
// low five bits of an ASCII letter), whether it may be of the vocabulary:
// the cheapest test, made on every word.
var firstLast = func() (t [32][32]bool) {
	for w := range vocabulary {
		t[w[0]&31][w[len(w)-1]&31] = true
	}
	return t
}()

// present has the bit (sig*K)>>20 set for each signature of the
// vocabulary: a word whose bit is clear is not looked up.
var present = func() (b [64]uint64) {
	for w := range vocabulary {
		k := presentBit(sigOf(w))
		b[k/64] |= 1 << (k % 64)
	}
	return b
}()

func presentBit(sig uint32) uint32 { return (sig * 2246822519) >> 20 }

// sigOf is a word's length and its first, middle and last letters, in
// lower case.
func sigOf(w string) uint32 {
	l := len(w)
	return uint32(l) | uint32(w[0]|0x20)<<8 | uint32(w[l/2]|0x20)<<16 | uint32(w[l-1]|0x20)<<24
}

func slotOf(sig uint32) uint32 { return (sig * 2654435761) >> 23 % tableSize }

// lookupSig is the vocabulary's entry for word (ASCII letters, in any
// case) whose signature (sigOf) is sig, or nil.
func lookupSig(word string, sig uint32) *entry {
	for h := slotOf(sig); ; h = (h + 1) % tableSize {
		e := &table[h]
		if e.word == "" {
			return nil
		}
		if e.sig == sig && equalFold(e.word, word) {
			return e
		}
	}
}

// equalFold compares a lower-case word with an ASCII-letter word in any
// case.
func equalFold(lower, word string) bool {
	if len(lower) != len(word) {
		return false
	}
	for i := 0; i < len(word); i++ {
		if lower[i] != word[i]|0x20 {
			return false
		}
	}
	return true
}

// ringSize is how many words back a phrase may reach.
const ringSize = 8

// words are the last words read in the current sentence.
type words struct {
	masks  [ringSize]uint64
	starts [ringSize]int
	n      int // words read since the last reset
}

func (w *words) reset() { w.n = 0 }

// other records a word outside the vocabulary (a number, say).
func (w *words) other() {
	w.masks[w.n%ringSize] = 0
	w.n++
}

// push records the word text[start:end] (ASCII letters) of signature sig,
// and a finding
// when it ends an instruction-like phrase.
func (w *words) push(r *Result, text string, start, end int, sig uint32) {
	e := lookupSig(text[start:end], sig)
	slot := w.n % ringSize
	w.starts[slot] = start
	w.n++
	if e == nil {
		w.masks[slot] = 0
		return
	}
	w.masks[slot] = e.mask
	for ends := e.ends; ends != 0; ends &= ends - 1 {
		p := phrases[bits.TrailingZeros32(ends)]
		if first, ok := w.match(p, len(p)-1, w.n-1); ok {
			r.add(InstructionLike, detailInstruction, w.starts[first%ringSize], end)
			w.reset()
			return
		}
	}
}

// match reports whether the words up to the one numbered at end the
// phrase's places up to k, and the number of the word the phrase starts
// at.
func (w *words) match(p []elem, k, at int) (int, bool) {
	if k < 0 {
		return at + 1, true
	}
	e := p[k]
	if at >= 0 && at > w.n-1-ringSize {
		m := w.masks[at%ringSize]
		if e.mask == 0 || m&e.mask != 0 {
			if first, ok := w.match(p, k-1, at-1); ok {
				return first, true
			}
		}
	}
	if e.opt {
		return w.match(p, k-1, at)
	}
	return 0, false
}

// tagWords are the names of pseudo-markup that imitates a system prompt.
var tagWords = map[string]bool{"important": true, "system": true, "instruction": true, "instructions": true, "secret": true, "hidden": true, "admin": true}

// tagAt recognises pseudo-markup at i ('<'): <system>, </important >,
// < admin>, in any case; the end of it, or 0.
func tagAt(text string, i int) int {
	j := i + 1
	if j < len(text) && text[j] == '/' {
		j++
	}
	if j < len(text) && text[j] == ' ' {
		j++
	}
	start := j
	for j < len(text) && class[text[j]] == cLetter && j-start <= maxWord {
		j++
	}
	l := j - start
	if l < 5 || l > maxWord {
		return 0
	}
	var buf [maxWord]byte
	for k := 0; k < l; k++ {
		buf[k] = text[start+k] | 0x20
	}
	if !tagWords[string(buf[:l])] {
		return 0
	}
	if j < len(text) && text[j] == ' ' {
		j++
	}
	if j < len(text) && text[j] == '>' {
		return j + 1
	}
	return 0
}
