package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// checkSplit reads body, cut into blocks, as a body read in blocks is
// read with strings of minLen bytes or more left in the blocks, and checks
// it against the body read whole: the body is exactly what was sent
// (joined, or with every placeholder replaced by its string); the strings
// left are exactly the strings of the body, as the tape reads it, that
// are plain printable ASCII of minLen bytes or more, each with the text
// encoding/json decodes for it; and the buffer parsed is well formed
// exactly when the body is.
func checkSplit(t *testing.T, body []byte, blocks [][]byte, minLen int) {
	t.Helper()
	buf, sp := splitBodyFrom(blocks, minLen)
	if sp == nil {
		if !bytes.Equal(buf, body) {
			t.Fatalf("%q in %d blocks: joined to %q", body, len(blocks), buf)
		}
	} else {
		if j := sp.join(); !bytes.Equal(j, body) {
			t.Fatalf("%q in %d blocks: joined to %q", body, len(blocks), j)
		}
		var back []byte
		from := 0
		for i, h := range sp.holes {
			ph := "!" + itoa(i)
			if string(buf[h.at:h.at+len(ph)]) != ph || buf[h.at-1] != '"' || buf[h.at+len(ph)] != '"' {
				t.Fatalf("%q: hole %d's placeholder is not at %d of %q", body, i, h.at, buf)
			}
			back = append(back, buf[from:h.at]...)
			text := bytes.Join(h.segs, nil)
			back = append(back, text...)
			from = h.at + len(ph)
			var want string
			if err := json.Unmarshal(body[h.start-1:h.end+1], &want); err != nil || want != string(text) {
				t.Fatalf("%q: hole %d reads %q, encoding/json %q (%v)", body, i, text, want, err)
			}
		}
		back = append(back, buf[from:]...)
		if !bytes.Equal(back, body) {
			t.Fatalf("%q in %d blocks: put back as %q", body, len(blocks), back)
		}
	}
	whole, wholeOK := parseTape(body)
	_, splitOK := parseTape(buf)
	if wholeOK != splitOK {
		t.Fatalf("%q in %d blocks: well formed %v, split %v (%q)", body, len(blocks), wholeOK, splitOK, buf)
	}
	if !wholeOK {
		return
	}
	var want [][2]int
	for i, e := range whole.e {
		if e.kind == kString && e.plain && int(e.end-e.start)-2 >= minLen && printable(whole.raw(i)) {
			want = append(want, [2]int{int(e.start) + 1, int(e.end) - 1})
		}
	}
	var got [][2]int
	if sp != nil {
		for _, h := range sp.holes {
			got = append(got, [2]int{h.start, h.end})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%q in %d blocks: left %v, want %v", body, len(blocks), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q in %d blocks: left %v, want %v", body, len(blocks), got, want)
		}
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// cutAt cuts b into blocks at the offsets given, in order.
func cutAt(b []byte, cuts ...int) [][]byte {
	var blocks [][]byte
	from := 0
	for _, c := range cuts {
		blocks = append(blocks, b[from:c:c])
		from = c
	}
	return append(blocks, b[from:])
}

// Bodies whose strings end, escape, or hold a character of several bytes
// at every place a block can end: cut once and twice everywhere, and
// into single bytes, each reads exactly as it reads whole.
func TestSplitBodyAtEveryCut(t *testing.T) {
	bodies := []string{
		`{"a":"ABCDEFGH","b":"x\"y","c":"ABCD+/=="}`,
		`{"data":"ABCDEFGH\\","n":1}`,
		`{"t":"ABCD\"EFGH","d":"QUJDREVGR0g="}`,
		`{"t":"ABCDé€😀EFGH","d":"QUJDREVGR0g="}`,
		`{"t":"ABCD\u00e9EFGH\ud83d\ude00","d":"QUJDREVGR0g="}`,
		`["ABCDEFGH",["ABCDEFGH"],{"ABCDEFGH":"ABCDEFGH"}]`,
		`{"a":"ABC","b":"ABCD","c":"ABCDE","d":"\\\\\\\\\\"}`,
		`{"a":"ABCD` + "\x7f" + `EFGH","b":"ABCDEFGH` + "\t" + `"}`,
		`{"a":"ABCDEFGH"` + `,"b":"ABCDEFGH}`,
		`{"a":"ABCDEFGH\","b":1}`,
		`{"a":ABCDEFGH"}`,
		`"ABCDEFGHIJ"`,
		`{"a":"ABCDEFGH","a":"ABCDEFGH"}`,
	}
	for _, s := range bodies {
		body := []byte(s)
		checkSplit(t, body, [][]byte{body}, 4)
		for i := range len(body) + 1 {
			checkSplit(t, body, cutAt(body, i), 4)
			for j := i; j <= len(body); j++ {
				checkSplit(t, body, cutAt(body, i, j), 4)
			}
		}
		checkSplit(t, body, bytes.SplitAfter(body, nil), 4)
	}
}

// Any bytes, cut anywhere, read split as they read whole.
func FuzzSplitBody(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"image","data":"QUJDREVGR0g="}]}`), []byte{3, 40, 2}, byte(4))
	f.Add([]byte(`{"a":"x\"yABCDEFGH\\","b":"é€ABCDEFGH"}`), []byte{5, 0, 7, 1}, byte(2))
	f.Add([]byte(`["ABCDEFGH\u0041",{"k":"ABCDEFGH"}]`), []byte{1, 1, 1, 1, 1, 1, 1}, byte(8))
	f.Fuzz(func(t *testing.T, body, steps []byte, minLen byte) {
		var cuts []int
		at := 0
		for _, s := range steps {
			at += int(s % 32)
			if at > len(body) {
				break
			}
			cuts = append(cuts, at)
		}
		checkSplit(t, body, cutAt(body, cuts...), 1+int(minLen%16))
	})
}

// A string is left in the blocks only when it is long enough.
func TestSplitBodyLeavesLongStringsOnly(t *testing.T) {
	long := strings.Repeat("QUJD", spliceString/4)
	body := []byte(`{"a":"` + long[:spliceString-1] + `","b":"` + long + `"}`)
	buf, sp := splitBody(cutAt(body, 100, 70000, 70001))
	if sp == nil || len(sp.holes) != 1 || sp.holes[0].start != len(`{"a":"`)+spliceString-1+len(`","b":"`) {
		t.Fatalf("left %+v", sp)
	}
	if want := len(body) - spliceString + len("!0"); len(buf) != want {
		t.Fatalf("parsed %d bytes, want %d", len(buf), want)
	}
}
