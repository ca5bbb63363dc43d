package mcp_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// A large result a caller keeps (WithFullResult) stays in the buffer it
// was read into, which is then the caller's: the next call, which reads
// a body of the same size, must not be given that buffer and write over
// the first result. In every profile's framing (a JSON body, an event
// stream), with and without the body's length said.
func TestKeptResultIsNotReused(t *testing.T) {
	image := func(seed byte) string {
		b := make([]byte, 300<<10)
		for i := range b {
			b[i] = byte(i) ^ seed
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, p := range confProfiles() {
		for _, length := range []bool{false, true} {
			if length && p.sse {
				continue
			}
			t.Run(p.name+"/length="+strconv.FormatBool(length), func(t *testing.T) {
				srv := newFakeServer(t, p)
				data := image(1)
				srv.callResult = map[string]any{"content": []any{
					map[string]any{"type": "image", "mimeType": "image/png", "data": data},
					map[string]any{"type": "text", "text": "a picture"},
				}}
				if length {
					srv.on("tools/call", func(r *seenRequest) *http.Response {
						res := map[string]any{"content": srv.callResult["content"]}
						if p.modern {
							res["resultType"] = "complete"
						}
						body := confJSON(map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": res})
						resp := fakeText(http.StatusOK, "application/json", body)
						resp.ContentLength = int64(len(body))
						return resp
					})
				}
				c := srv.client(mcp.Options{ClientName: "kept", ClientVersion: "1.0"})
				first, err := c.CallTool(t.Context(), p.endpoint(), "picture", nil, mcp.WithFullResult(), mcp.WithMaxBodyBytes(4<<20))
				if err != nil {
					t.Fatal(err)
				}
				kept := bytes.Clone(first.Result)
				if imageOf(t, first.Result) != data {
					t.Fatal("the first image did not arrive byte for byte")
				}
				for seed := byte(2); seed < 6; seed++ {
					data := image(seed)
					srv.callResult["content"].([]any)[0].(map[string]any)["data"] = data
					out, err := c.CallTool(t.Context(), p.endpoint(), "picture", nil, mcp.WithFullResult(), mcp.WithMaxBodyBytes(4<<20))
					if err != nil {
						t.Fatal(err)
					}
					if imageOf(t, out.Result) != data {
						t.Fatalf("call %d: the image did not arrive byte for byte", seed)
					}
				}
				if !bytes.Equal(first.Result, kept) {
					t.Error("a later call wrote over the result the first one kept")
				}
			})
		}
	}
}

func imageOf(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct{ Content []struct{ Data string } }
	if err := json.Unmarshal(result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %.200s: %v", result, err)
	}
	return r.Content[0].Data
}
