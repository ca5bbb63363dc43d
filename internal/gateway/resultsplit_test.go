package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// chunkedCall calls a tool of a go-sdk server whose tools/call answer is
// result, written in small pieces without its length (as a server that
// streams its answer writes it), through the gateway's client as the
// gateway calls, and reads the outcome as the gateway does.
func chunkedCall(t *testing.T, result string) (*mcp.CallOutcome, *typedResult) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "picture", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage
			Method string
		}
		if json.Unmarshal(body, &req) != nil || req.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		answer := []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`)
		for len(answer) > 0 {
			n := min(len(answer), 7919)
			_, _ = w.Write(answer[:n])
			w.(http.Flusher).Flush()
			answer = answer[n:]
		}
	}))
	t.Cleanup(up.Close)
	client := mcp.New(mcp.Options{AllowPrivateNetworks: true})
	ep := mcp.Endpoint{Name: "test/up", URL: up.URL, AllowPrivateNetwork: true}
	out, err := client.CallTool(t.Context(), ep, "picture", nil, mcp.WithFullResult(), mcp.WithMaxBodyBytes(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := typedOf(out)
	if err != nil || tr == nil {
		t.Fatalf("typedOf: %v %v", tr, err)
	}
	return out, tr
}

// noise is n bytes that are not text, different for each seed.
func noise(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// Parts that are not text of an answer whose length the upstream did not
// say pass byte for byte, never made one buffer: each is written from
// the blocks it was read into, in the gateway's pieces as in the SDK's
// encoding.
func TestChunkedBinaryPartsPassByteForByte(t *testing.T) {
	image, audio, blob := noise(1<<20, 1), noise(400<<10, 2), noise(300<<10, 3)
	b64 := base64.StdEncoding.EncodeToString
	result := `{"content":[{"type":"image","mimeType":"image/png","data":"` + b64(image) + `"},` +
		`{"type":"text","text":"a picture"},` +
		`{"type":"audio","mimeType":"audio/wav","data":"` + b64(audio) + `","annotations":{"priority":0.5}},` +
		`{"type":"resource","resource":{"uri":"file:///a.bin","mimeType":"application/octet-stream","blob":"` + b64(blob) + `"}}]}`
	out, tr := chunkedCall(t, result)
	if len(out.Result) > 64<<10 {
		t.Fatalf("the result was made one buffer (%d bytes)", len(out.Result))
	}
	if len(tr.content) != 4 {
		t.Fatalf("content %+v", tr.content)
	}
	for i, want := range map[int][]byte{0: image, 2: audio, 3: blob} {
		p, ok := tr.content[i].(*binaryPart)
		if !ok {
			t.Fatalf("block %d read as %T", i, tr.content[i])
		}
		if len(p.data) < 2 || p.size != int64(len(want)) || string(bytes.Join(p.data, nil)) != b64(want) {
			t.Errorf("block %d: %d segments, %d bytes", i, len(p.data), p.size)
		}
	}
	c := typedScope(mcpv1alpha1.DataClassInternal, ptr.To(int64(4<<20)))
	if text, withheld := (&Gateway{}).inspectTyped(typedCaller, c, tr); withheld {
		t.Fatalf("withheld: %s", text)
	}
	g := &Gateway{}
	for _, modern := range []bool{true, false} {
		// The SDK's reading of the result as sent (its encoders add to
		// what they are given: one each).
		var sent sdk.CallToolResult
		if err := json.Unmarshal([]byte(result), &sent); err != nil {
			t.Fatal(err)
		}
		res := &sdk.CallToolResult{Content: tr.content}
		pieces, ok := g.typedAnswer(res, modern)
		if !ok {
			t.Fatal("not written in pieces")
		}
		var whole []byte
		if modern {
			whole, _ = g.callResult(&sent, nil)
		} else {
			whole, _ = eraCallResult(&sent, nil)
		}
		if !bytes.Equal(bytes.Join(pieces, nil), whole) {
			t.Errorf("modern %v: the gateway's pieces differ from the SDK's encoding", modern)
		}
		// The SDK's path (a progress token) encodes each part itself.
		viaSDK, err := json.Marshal(res)
		want, _ := json.Marshal(&sdk.CallToolResult{Content: sent.Content})
		if err != nil || !bytes.Equal(viaSDK, want) {
			t.Errorf("the SDK's path wrote another answer: %v", err)
		}
	}
}

// A block carrying a long string that the gateway does not read in place
// (a member of its own beside its data) is read by the SDK as before,
// from its bytes as sent: the string the client left where it was read is
// copied back in, never read as its placeholder.
func TestChunkedUnusualBlockIsReadAsSent(t *testing.T) {
	image := noise(700<<10, 4)
	data := base64.StdEncoding.EncodeToString(image)
	_, tr := chunkedCall(t, `{"content":[{"type":"image","mimeType":"image/png","data":"`+data+`","title":"x"},{"type":"text","text":"t"}]}`)
	if len(tr.content) != 2 {
		t.Fatalf("content %+v", tr.content)
	}
	img, ok := tr.content[0].(*sdk.ImageContent)
	if !ok || !bytes.Equal(img.Data, image) {
		t.Fatalf("read as %T, not the image sent", tr.content[0])
	}
}

// A long text of an answer of unknown length, beside an image, is read
// whole and screened: the credential in its middle is redacted.
func TestChunkedLongTextIsScreened(t *testing.T) {
	credential := "gh" + "p_" + strings.Repeat("c3", 18)
	text := strings.Repeat("lorem ipsum ", 50<<10) + "key " + credential + " " + strings.Repeat("dolor sit ", 50<<10)
	data := base64.StdEncoding.EncodeToString(noise(600<<10, 5))
	out, tr := chunkedCall(t, `{"content":[{"type":"image","mimeType":"image/png","data":"`+data+`"},{"type":"text","text":"`+text+`"}]}`)
	if !strings.Contains(string(out.Result), credential) {
		t.Fatal("the text is not in the result as sent")
	}
	c := typedScope(mcpv1alpha1.DataClassInternal, nil)
	if msg, withheld := (&Gateway{}).inspectTyped(typedCaller, c, tr); withheld {
		t.Fatalf("withheld: %s", msg)
	}
	var got string
	for _, b := range tr.content {
		if x, ok := b.(*sdk.TextContent); ok {
			got += x.Text
		}
	}
	if strings.Contains(got, credential) || !strings.Contains(got, "key [redacted github-token] dolor") {
		t.Errorf("the long text was not screened (%d bytes)", len(got))
	}
}
