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
	IsError bool
	// InputRequired marks a 2026-07-28 input_required result (Raw).
	InputRequired bool
	// Raw is the result as sent, when the caller asked for it.
	Raw json.RawMessage
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
	m, err := decodeObject(result)
	if err != nil {
		return nil, protoErr(KindInvalidResponse, "tools/call result is malformed")
	}
	out := &callResult{}
	if v, ok := m["isError"]; ok && !isJSONNull(v) {
		if json.Unmarshal(v, &out.IsError) != nil {
			return nil, protoErr(KindInvalidResponse, "isError is not a boolean")
		}
	}
	var blocks []json.RawMessage
	if v, ok := m["content"]; ok && !isJSONNull(v) {
		// The blocks are read in place: an image's base64 is not copied.
		if blocks, ok = decodeArray(v); !ok {
			return nil, protoErr(KindInvalidResponse, "content is not a list")
		}
	}
	var texts []string
	for _, raw := range blocks {
		typ, text, ok := textBlock(raw)
		if ok {
			texts = append(texts, text)
			continue
		}
		if out.Dropped == nil {
			out.Dropped = make(map[string]int)
		}
		out.Dropped[typ]++
	}
	body := strings.Join(texts, textSeparator)
	if len(texts) == 0 {
		if sc, ok := m["structuredContent"]; ok && !isJSONNull(sc) {
			var buf bytes.Buffer
			if err := json.Compact(&buf, sc); err == nil {
				body = buf.String()
			}
		}
	}
	out.Text = droppedNote(out.Dropped) + body
	return out, nil
}

// textBlock classifies one content block. ok is true for a well-formed text
// block; otherwise typ is the name the block is counted under.
func textBlock(raw json.RawMessage) (typ, text string, ok bool) {
	m, err := decodeObject(raw)
	if err != nil {
		return DroppedOther, "", false
	}
	var t string
	if json.Unmarshal(m["type"], &t) != nil {
		return DroppedOther, "", false
	}
	switch t {
	case "text":
		if json.Unmarshal(m["text"], &text) != nil {
			return DroppedOther, "", false
		}
		return "text", text, true
	case DroppedImage, DroppedAudio, DroppedResource, DroppedResourceLink:
		return t, "", false
	default:
		return DroppedOther, "", false
	}
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
