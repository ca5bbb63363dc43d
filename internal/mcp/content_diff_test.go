package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// legacyFlatten is the reading of a tools/call result as it was before it
// read the response's tape: members by decodeObject, values by
// json.Unmarshal. It is kept as the oracle flattenResultAt is held to.
func legacyFlatten(result json.RawMessage) (*callResult, error) {
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
		if blocks, ok = decodeArray(v); !ok {
			return nil, protoErr(KindInvalidResponse, "content is not a list")
		}
	}
	var texts []string
	for _, raw := range blocks {
		typ, text, ok := legacyTextBlock(raw)
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

func legacyTextBlock(raw json.RawMessage) (typ, text string, ok bool) {
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

// checkFlattenMatchesLegacy holds the tape's reading of in, as the client
// reads a response's result, to the oracle's: the same error or none, and
// the same text, flags and counts.
func checkFlattenMatchesLegacy(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := legacyFlatten(in)
	got, gotErr := flattenCallResult(in)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("%q: error %v, the oracle's %v", in, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if got.Text != want.Text || got.IsError != want.IsError || fmt.Sprint(got.Dropped) != fmt.Sprint(want.Dropped) {
		t.Fatalf("%q: read as %+v, the oracle as %+v", in, got, want)
	}
}

// flattenSeeds are results that reach each rule: absent, null and wrong
// members, escaped names and texts, repeated members, odd blocks.
var flattenSeeds = []string{
	`{}`, `[]`, `null`, `"x"`, `{"content":null}`, `{"content":[]}`, `{"content":{}}`, `{"content":"x"}`,
	`{"isError":true}`, `{"isError":false}`, `{"isError":null}`, `{"isError":"yes"}`, `{"isError":1}`,
	`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
	`{"content":[{"type":"text","text":null}]}`, `{"content":[{"type":"text"}]}`,
	`{"content":[{"type":"text","text":5}]}`, `{"content":[{"type":null,"text":"x"}]}`,
	`{"content":[{"type":"te\u0078t","text":"\u00e9\ud83d\ude00\n"}]}`,
	`{"content":[{"type":"text","text":"a","text":"b"}]}`, `{"content":[{"type":"text","t\u0065xt":"a","text":"b"}]}`,
	`{"content":[],"content":[]}`, `{"isError":true,"isErr\u006fr":false}`,
	`{"content":[7,"s",null,[],{"type":"image","data":"AA=="},{"type":"audio"},{"type":"resource"},{"type":"resource_link"},{"type":"evil"}]}`,
	`{"structuredContent":{"a": [1, 2]}}`, `{"structuredContent":null}`, `{"content":[{"type":"image"}],"structuredContent":{"b":true}}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"b":true}}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]}", ` { "content" : [ { "type" : "text" , "text" : "sp" } ] } `,
}

// genFlattenResult builds a result of random blocks and members.
func genFlattenResult(r *rand.Rand) string {
	types := []string{`"text"`, `"image"`, `"audio"`, `"resource"`, `"resource_link"`, `"other"`, `null`, `3`, `"te\u0078t"`}
	texts := []string{`"plain"`, `"esc\"aped\\"`, `null`, `7`, `"\u00e9"`, `""`, `{}`}
	var blocks []string
	for range r.IntN(5) {
		var members []string
		if r.IntN(6) > 0 {
			members = append(members, `"type":`+types[r.IntN(len(types))])
		}
		if r.IntN(4) > 0 {
			members = append(members, `"text":`+texts[r.IntN(len(texts))])
		}
		if r.IntN(8) == 0 {
			members = append(members, `"text":"again"`)
		}
		blocks = append(blocks, "{"+strings.Join(members, ",")+"}")
	}
	var members []string
	if r.IntN(3) > 0 {
		members = append(members, `"content":[`+strings.Join(blocks, ",")+`]`)
	}
	if r.IntN(3) == 0 {
		members = append(members, `"isError":`+[]string{"true", "false", "null", `"no"`}[r.IntN(4)])
	}
	if r.IntN(3) == 0 {
		members = append(members, `"structuredContent":`+[]string{`{"n": 1}`, `null`, `[ ]`}[r.IntN(3)])
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + "}"
}

// TestFlattenMatchesLegacy holds the tape's reading to the oracle on the
// seeds and on generated results, each also cut and with a byte changed.
func TestFlattenMatchesLegacy(t *testing.T) {
	for _, s := range flattenSeeds {
		checkFlattenMatchesLegacy(t, []byte(s))
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		s := []byte(genFlattenResult(r))
		checkFlattenMatchesLegacy(t, s)
		checkFlattenMatchesLegacy(t, s[:r.IntN(len(s))])
		d := bytes.Clone(s)
		d[r.IntN(len(d))] = `{}[]",:\ntx0`[r.IntN(12)]
		checkFlattenMatchesLegacy(t, d)
	}
}

func FuzzFlattenMatchesLegacy(f *testing.F) {
	for _, s := range flattenSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFlattenMatchesLegacy)
}
