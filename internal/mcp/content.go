package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The names a dropped content block is counted under. Only the protocol's own
// non-text block types are named; any other type the server invents is
// "other", so the note is written entirely by this client.
const (
	DroppedImage        = "image"
	DroppedAudio        = "audio"
	DroppedResource     = "resource"
	DroppedResourceLink = "resource_link"
	DroppedOther        = "other"
)

var droppedOrder = []string{DroppedImage, DroppedAudio, DroppedResource, DroppedResourceLink, DroppedOther}

// textSeparator joins consecutive text blocks. Blocks are separate
// paragraphs of one answer; gluing them without a break would merge words.
const textSeparator = "\n"

// callResult is the part of a tools/call result this client reads.
type callResult struct {
	Text    string
	Dropped map[string]int
	// Raw is the result as sent, when the caller asked for it.
	Raw json.RawMessage
	// split holds the long strings of Raw left where they were read.
	split   *splice
	IsError bool
	// InputRequired marks a 2026-07-28 input_required result (Raw).
	InputRequired bool
	// Task marks a CreateTaskResult (Raw) of a task-augmented call.
	Task bool
}

// flattenCallResult reads a tools/call result: text blocks concatenated,
// everything else dropped and counted, isError kept. When content held no
// text block at all, structuredContent (if any) is rendered as compact JSON
// text instead: the specification asks servers to mirror structured output
// into a text block, and a server that did not still answered. The note on
// dropped blocks leads the text, because tool output is cut to a byte bound
// before a model sees it and a trailing note would be the first thing cut.
func flattenCallResult(result json.RawMessage) (*callResult, error) {
	t, ok := parseTape(result)
	if !ok {
		return nil, protoErr(KindInvalidResponse, "tools/call result is malformed")
	}
	defer t.release()
	return flattenResultAt(t, 0)
}

// flattenResultAt is flattenCallResult of the result at entry at of t, read
// from the tape the response was parsed into rather than scanned again. Its
// reading is encoding/json's: a member absent and a member null are alike
// where json.Unmarshal makes them alike, and a repeated member name makes
// the object malformed, as decodeObject has it.
func flattenResultAt(t *tape, at int) (*callResult, error) {
	if t.e[at].kind != kObject || t.hasDuplicate(at) {
		return nil, protoErr(KindInvalidResponse, "tools/call result is malformed")
	}
	out := &callResult{}
	if v := t.member(at, "isError"); v >= 0 {
		switch t.e[v].kind {
		case kTrue:
			out.IsError = true
		case kFalse, kNull:
		default:
			return nil, protoErr(KindInvalidResponse, "isError is not a boolean")
		}
	}
	var texts []string
	if v := t.member(at, "content"); v >= 0 && t.e[v].kind != kNull {
		if t.e[v].kind != kArray {
			return nil, protoErr(KindInvalidResponse, "content is not a list")
		}
		// The blocks are read in place: an image's base64 is not copied.
		for b, end := v+1, t.next(v); b < end; b = t.next(b) {
			typ, text, ok := textBlockAt(t, b)
			if ok {
				texts = append(texts, text)
				continue
			}
			if out.Dropped == nil {
				out.Dropped = make(map[string]int)
			}
			out.Dropped[typ]++
		}
	}
	body := strings.Join(texts, textSeparator)
	if len(texts) == 0 {
		if sc := t.member(at, "structuredContent"); sc >= 0 && t.e[sc].kind != kNull {
			var buf bytes.Buffer
			if err := json.Compact(&buf, t.raw(sc)); err == nil {
				body = buf.String()
			}
		}
	}
	out.Text = droppedNote(out.Dropped) + body
	return out, nil
}

// textBlockAt classifies the content block at entry b of t. ok is true for a
// well-formed text block; otherwise typ is the name the block is counted
// under. As json.Unmarshal reads them, a type that is not a string makes the
// block other, and a text of null is an empty text.
func textBlockAt(t *tape, b int) (typ, text string, ok bool) {
	if t.e[b].kind != kObject || t.hasDuplicate(b) {
		return DroppedOther, "", false
	}
	tv := t.member(b, "type")
	if tv < 0 || t.e[tv].kind != kString {
		return DroppedOther, "", false
	}
	switch {
	case t.is(tv, "text"):
		v := t.member(b, "text")
		switch {
		case v < 0:
			return DroppedOther, "", false
		case t.e[v].kind == kNull:
			return "text", "", true
		}
		if text, ok = t.stringAt(v); !ok {
			return DroppedOther, "", false
		}
		return "text", text, true
	case t.is(tv, DroppedImage):
		return DroppedImage, "", false
	case t.is(tv, DroppedAudio):
		return DroppedAudio, "", false
	case t.is(tv, DroppedResource):
		return DroppedResource, "", false
	case t.is(tv, DroppedResourceLink):
		return DroppedResourceLink, "", false
	}
	return DroppedOther, "", false
}

// droppedNote renders the counts as one line, or "" when nothing was dropped.
func droppedNote(dropped map[string]int) string {
	if len(dropped) == 0 {
		return ""
	}
	parts := make([]string, 0, len(droppedOrder))
	total := 0
	for _, k := range droppedOrder {
		if n := dropped[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
			total += n
		}
	}
	noun := "blocks"
	if total == 1 {
		noun = "block"
	}
	return fmt.Sprintf("[Note: %d non-text content %s dropped (%s); only text is returned.]\n",
		total, noun, strings.Join(parts, ", "))
}
