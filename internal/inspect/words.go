package inspect

import (
	"math/bits"
	"slices"
)

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

// A word of at most maxWord ASCII letters is known by its key, which
// tells two such words apart exactly whatever their case, so that a word
// is looked up with one comparison and never lower-cased. A word of up to
// eight letters is its bytes in lower case, the first lowest, as the
// scanner loads them eight at a time; a longer one is the low five bits
// of each letter (never zero), five bits a letter, the first lowest, with
// the top bit set, which no key of a shorter word has (its top byte is a
// lower-case letter or zero). A word longer than maxWord has key 0, which
// no word of the vocabulary has.
func keyOf(w string) uint64 {
	var k uint64
	switch {
	case len(w) <= 8:
		for i := len(w) - 1; i >= 0; i-- {
			k = k<<8 | uint64(w[i]|0x20)
		}
	case len(w) <= maxWord:
		k = 1 << 63
		for i := 0; i < len(w); i++ {
			k |= uint64(w[i]&31) << (5 * i)
		}
	}
	return k
}

// vocabBits is the size of the vocabulary's table, which a
// multiplicative hash of a word's key indexes: 1024 slots, in which a
// multiplier that gives each of about a hundred words a slot of its own
// is found in a few hundred tries.
const vocabBits = 10

var (
	// vocabKeys is the key of the word in each slot, 0 in an empty one.
	vocabKeys [1 << vocabBits]uint64
	// vocabInfo is, for the word in each slot, the phrases (by bit, in the
	// order of phrases) it can begin, those it can end, 16 bits each, and
	// the slot's number above them: the word's reference, 0 for a word
	// outside the vocabulary (slot 0 holds no word).
	vocabInfo [1 << vocabBits]uint64
	// vocabOpeners has the bit of each slot whose word may begin a phrase:
	// while no phrase is open, a word whose slot's bit is clear (most
	// words) is not looked up.
	vocabOpeners [1 << vocabBits / 64]uint64
	// vocabGroups are the groups of the word in each slot.
	vocabGroups [1 << vocabBits]uint64
	// vocabMul is the multiplier of the hash, chosen so that no two words
	// of the vocabulary share a slot.
	vocabMul uint64
)

const (
	infoEnds   = 16
	infoRef    = 32
	beginsMask = 1<<infoEnds - 1
)

func slotOf(key uint64) uint64 { return key * vocabMul >> (64 - vocabBits) }

func init() {
	if len(phrases) > 16 {
		panic("inspect: more phrases than the vocabulary's table has bits for")
	}
	list := make([]string, 0, len(vocabulary))
	for w := range vocabulary {
		list = append(list, w)
	}
	slices.Sort(list)
	// Odd multipliers from a fixed sequence, the first that places every
	// word in a slot of its own, never slot 0: the same on every start.
	for mul := uint64(0x9E3779B97F4A7C15); ; mul += 0x2545F4914F6CDD1E {
		vocabMul = mul | 1
		clear(vocabKeys[:])
		perfect := true
		for _, w := range list {
			s := slotOf(keyOf(w))
			if s == 0 || vocabKeys[s] != 0 {
				perfect = false
				break
			}
			vocabKeys[s] = keyOf(w)
		}
		if perfect {
			break
		}
	}
	for _, w := range list {
		m := vocabulary[w]
		s := slotOf(keyOf(w))
		var begins, ends uint64
		for i, p := range phrases {
			if p[0].mask&m != 0 {
				begins |= 1 << i
			}
			if p[len(p)-1].mask&m != 0 {
				ends |= 1 << i
			}
		}
		vocabInfo[s] = begins | ends<<infoEnds | s<<infoRef
		if begins != 0 {
			vocabOpeners[s/64] |= 1 << (s % 64)
		}
		vocabGroups[s] = m
	}
}

// mayOpen reports whether a word of slot s (slotOf) may begin a phrase.
func mayOpen(s uint64) bool { return vocabOpeners[s/64]>>(s%64)&1 != 0 }

// lookup is what the vocabulary's table holds (vocabInfo) for a word whose
// key is key, of slot s (slotOf): 0 for a word outside the vocabulary.
func lookup(key, s uint64) uint64 {
	info := vocabInfo[s]
	if vocabKeys[s] != key {
		info = 0
	}
	return info
}

// ringSize is how many words back a phrase may reach: more than the
// longest phrase has places.
const ringSize = 8

// words are the last words read in the current sentence.
type words struct {
	refs   [ringSize]uint16 // the words' slots in the vocabulary's table, or 0
	starts [ringSize]int
	n      uint // words read since the last reset
	// open are the phrases whose first place a word of the sentence can
	// fill: a phrase not open cannot end at the word just read, and is not
	// matched.
	open uint64
}

func (w *words) reset() { w.n, w.open = 0, 0 }

// push records the word [start, end) of vocabulary information info
// (lookup), and a finding when it ends an instruction-like phrase. While
// no phrase is open, a word that begins none need not be recorded, and
// the scanner does not push it: a phrase matches from its first word on,
// so the words before the first that begins a phrase are never read.
func (w *words) push(r *Result, info uint64, start, end int) {
	slot := w.n % ringSize
	w.refs[slot] = uint16(info >> infoRef)
	w.starts[slot] = start
	w.n++
	w.open |= info & beginsMask
	if ends := info >> infoEnds & w.open; ends != 0 {
		w.ended(r, ends, end)
	}
}

// ended makes a finding when one of the phrases of ends ends at the word
// just read.
func (w *words) ended(r *Result, ends uint64, end int) {
	for ends &= beginsMask; ends != 0; ends &= ends - 1 {
		p := phrases[bits.TrailingZeros64(ends)]
		if first, ok := w.match(p, len(p)-1, int(w.n)-1); ok {
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
	if at >= 0 && at > int(w.n)-1-ringSize {
		m := vocabGroups[w.refs[at%ringSize]]
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
