package mcp_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// spliceBytes is n bytes that are not text, different for each seed.
func spliceBytes(n int, seed byte) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return base64.StdEncoding.EncodeToString(b)
}

// callRaw has a server answer tools/call with body, its length not said,
// and returns what a caller keeping the result (WithFullResult) gets; with
// stream set, as the one event of an event stream (its lines ended with
// CRLF), as most servers answer.
func callRaw(t *testing.T, body string, stream bool) (*mcp.CallOutcome, error) {
	t.Helper()
	var p confProfile
	for _, q := range confProfiles() {
		if !q.sse && !q.modern {
			p = q
		}
	}
	srv := newFakeServer(t, p)
	srv.on("tools/call", func(r *seenRequest) *http.Response {
		id, _ := json.Marshal(r.ID)
		msg := strings.Replace(body, "ID", string(id), 1)
		if stream {
			return fakeText(http.StatusOK, "text/event-stream", ": hello\r\nevent: message\r\ndata: "+msg+"\r\n\r\n")
		}
		return fakeText(http.StatusOK, "application/json", msg)
	})
	c := srv.client(mcp.Options{ClientName: "split", ClientVersion: "1.0"})
	return c.CallTool(t.Context(), p.endpoint(), "picture", nil, mcp.WithFullResult(), mcp.WithMaxBodyBytes(16<<20))
}

// A result of unknown length carrying images, audio and a blob arrives
// byte for byte, its long strings left where they were read: Result is
// small, Segments gives each, Expand gives the result as sent. A short
// string of the server's own that reads like a placeholder is its own.
func TestLongStringsOfAResultStayWhereTheyWereRead(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "event stream"}[stream], func(t *testing.T) { longStringsStay(t, stream) })
	}
}

func longStringsStay(t *testing.T, stream bool) {
	image, audio, blob := spliceBytes(1<<20, 1), spliceBytes(300<<10, 2), spliceBytes(200<<10, 3)
	result := `{"content":[{"type":"image","mimeType":"image/png","data":"` + image + `"},` +
		`{"type":"text","text":"a picture"},` +
		`{"type":"audio","data":"` + audio + `","mimeType":"audio/wav"},` +
		`{"type":"resource","resource":{"uri":"file:///a.bin","blob":"` + blob + `"}},` +
		`{"type":"image","mimeType":"image/png","data":"!0"}]}`
	out, err := callRaw(t, `{"jsonrpc":"2.0","id":ID,"result":`+result+`}`, stream)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result) > 64<<10 {
		t.Fatalf("the result was read whole (%d bytes)", len(out.Result))
	}
	if out.Text != "[Note: 4 non-text content blocks dropped (2 image, 1 audio, 1 resource); only text is returned.]\na picture" {
		t.Errorf("text %q", out.Text)
	}
	if got := out.Expand(out.Result); string(got) != result {
		t.Fatalf("expanded to %d bytes, sent %d", len(got), len(result))
	}
	var r struct {
		Content []struct {
			Data     json.RawMessage
			Resource struct{ Blob json.RawMessage }
		}
	}
	if err := json.Unmarshal(out.Result, &r); err != nil || len(r.Content) != 5 {
		t.Fatalf("%.300s: %v", out.Result, err)
	}
	for i, want := range map[int]string{0: image, 2: audio, 3: blob} {
		raw := r.Content[i].Data
		if i == 3 {
			raw = r.Content[i].Resource.Blob
		}
		// The block read from Result, not a copy: Segments knows it by
		// where it is.
		at := bytes.Index(out.Result, raw)
		segs, ok := out.Segments(out.Result[at+1 : at+len(raw)-1])
		if !ok || string(bytes.Join(segs, nil)) != want {
			t.Errorf("block %d: ok %v, %d bytes in %d segments", i, ok, len(bytes.Join(segs, nil)), len(segs))
		}
	}
	last := bytes.LastIndex(out.Result, []byte(`"!0"`))
	if segs, ok := out.Segments(out.Result[last+1 : last+3]); ok {
		t.Errorf("the server's own \"!0\" read as %d segments", len(segs))
	}
	if _, ok := out.Segments([]byte("!0")); ok {
		t.Error("a copy of a placeholder read as one")
	}
}

// A long string anywhere but a block's data or blob (a text, structured
// content, an error's data, a name, the id) leaves the body read whole:
// nothing that is read as text is ever a placeholder.
func TestLongStringsElsewhereAreReadWhole(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "event stream"}[stream], func(t *testing.T) { longStringsWhole(t, stream) })
	}
}

func longStringsWhole(t *testing.T, stream bool) {
	long := strings.Repeat("QUJD", 200<<10)
	pad := `{"type":"image","mimeType":"image/png","data":"` + spliceBytes(600<<10, 4) + `"}`
	for name, body := range map[string]string{
		"text":               `{"jsonrpc":"2.0","id":ID,"result":{"content":[` + pad + `,{"type":"text","text":"` + long + `"}]}}`,
		"text of an image":   `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"image","data":"QUJD","text":"` + long + `"}]}}`,
		"structured content": `{"jsonrpc":"2.0","id":ID,"result":{"content":[` + pad + `],"structuredContent":{"data":"` + long + `"}}}`,
		"a name":             `{"jsonrpc":"2.0","id":ID,"result":{"content":[` + pad + `],"_meta":{"` + long + `":1}}}`,
		"a second data":      `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"image","data":"QUJD","data":"` + long + `"}]}}`,
		"a second content":   `{"jsonrpc":"2.0","id":ID,"result":{"content":[],"content":[` + pad + `]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := callRaw(t, body, stream)
			if name == "a second data" || name == "a second content" {
				// What the client refuses or drops, it does as for the
				// body read whole.
				if err == nil && !bytes.Contains(out.Result, []byte(long)) {
					t.Fatal("the repeated member was left split")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out.Result, []byte(long)) {
				t.Fatal("the long string is not in the result as sent")
			}
			if name == "text" && !strings.HasSuffix(out.Text, long) {
				t.Error("the text did not arrive whole")
			}
		})
	}
	_, err := callRaw(t, `{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"no","data":"`+long+`"}}`, stream)
	var e *mcp.Error
	if !errors.As(err, &e) || string(e.RPCData) != `"`+long+`"` {
		t.Fatalf("an error's long data: %v", err)
	}
	_, err = callRaw(t, `{"jsonrpc":"2.0","id":"`+long+`","result":{"content":[]}}`, stream)
	if !errors.As(err, &e) || e.Kind != mcp.KindInvalidResponse {
		t.Fatalf("a long id: %v", err)
	}
}

// cutShort is a body that ends with the error of a connection cut.
type cutShort struct{ r io.Reader }

func (c *cutShort) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// An answer cut short fails alike whether it was read in blocks or whole:
// the end of a block is not taken for the end of the body.
func TestAnswerCutShortFailsAlike(t *testing.T) {
	var p confProfile
	for _, q := range confProfiles() {
		if !q.sse && !q.modern {
			p = q
		}
	}
	kinds := map[int]mcp.Kind{}
	for _, size := range []int{1 << 10, 2 << 20} {
		srv := newFakeServer(t, p)
		srv.on("tools/call", func(r *seenRequest) *http.Response {
			id, _ := json.Marshal(r.ID)
			body := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"image","mimeType":"image/png","data":"` +
				spliceBytes(size, 9) + `"}]}}`
			resp := fakeText(http.StatusOK, "application/json", body)
			resp.Body = io.NopCloser(&cutShort{r: strings.NewReader(body)})
			return resp
		})
		c := srv.client(mcp.Options{ClientName: "cut", ClientVersion: "1.0"})
		_, err := c.CallTool(t.Context(), p.endpoint(), "picture", nil, mcp.WithFullResult(), mcp.WithMaxBodyBytes(16<<20))
		var e *mcp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%d bytes cut short: %v", size, err)
		}
		kinds[size] = e.Kind
	}
	if kinds[1<<10] != kinds[2<<20] || kinds[1<<10] != mcp.KindUnreachable {
		t.Errorf("cut short: %v", kinds)
	}
}
