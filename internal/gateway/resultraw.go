package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// The parts of a result that are not text (images, audio, the blobs of
// embedded resources) pass through the gateway as the base64 text the
// upstream sent: their size is counted from its length, they are never
// decoded, and the answer is written around them from the upstream's body
// (docs/adr/062-typed-results.md). Decoded and encoded again, a 1 MiB
// image cost about 13 MiB of allocations on its way through.

// binaryPart is a content block carrying bytes that are not text, read
// in place from the upstream's result. It is an sdk.Content so that the
// stages and the SDK's path handle it like any block; its encoding is its
// own (MarshalJSON), the SDK's bytes for the same block.
type binaryPart struct {
	// Content gives the SDK's interface its unexported method; the part
	// is never decoded into, and this block is never encoded.
	sdk.Content

	kind mcpv1alpha1.ResultContentType
	// mime is the media type the server named.
	mime string
	// uri is an embedded resource's address, screened as text is.
	uri         string
	annotations *sdk.Annotations
	// data is the base64 text as sent, without its quotes: slices of the
	// upstream's body, never written to. It is one slice of the result,
	// or, for a long string of a body the client read in blocks, several
	// of those blocks' (mcp.CallOutcome.Segments).
	data [][]byte
	// size is what data decodes to.
	size int64
	// raw is the block as the upstream sent it.
	raw []byte
}

// readBinary reads a block of a kind that carries bytes (image, audio, an
// embedded resource with a blob and no text) when it has the plain shape
// servers send: no member the SDK would read differently, and data in
// canonical base64 (no line breaks, no escapes, padded, no stray bits).
// ok is false for anything else, which the SDK then reads as before
// (readBlock): the outcome is the same, only its cost differs. raw is a
// block of out's result (out nil: of a result read whole).
func readBinary(raw json.RawMessage, out *mcp.CallOutcome) (*binaryPart, bool) {
	m, err := mcp.ObjectMembers(raw)
	if err != nil || !onlyMembers(m, "type", "mimeType", "data", "resource", "annotations", "_meta") || !metaShape(m["_meta"]) {
		return nil, false
	}
	p := &binaryPart{raw: raw}
	var dataRaw []byte
	switch string(m["type"]) {
	case `"image"`, `"audio"`:
		if m["resource"] != nil {
			return nil, false
		}
		p.kind, p.Content = mcpv1alpha1.ResultContentImage, &sdk.ImageContent{}
		if string(m["type"]) == `"audio"` {
			p.kind, p.Content = mcpv1alpha1.ResultContentAudio, &sdk.AudioContent{}
		}
		if !stringMember(m["mimeType"], &p.mime) {
			return nil, false
		}
		dataRaw = m["data"]
	case `"resource"`:
		if m["mimeType"] != nil || m["data"] != nil {
			return nil, false
		}
		r, err := mcp.ObjectMembers(m["resource"])
		if err != nil || !onlyMembers(r, "uri", "mimeType", "blob", "_meta") || !metaShape(r["_meta"]) ||
			!stringMember(r["uri"], &p.uri) || !stringMember(r["mimeType"], &p.mime) {
			return nil, false
		}
		p.kind, p.Content = mcpv1alpha1.ResultContentResource, &sdk.EmbeddedResource{}
		dataRaw = r["blob"]
	default:
		return nil, false
	}
	if a := m["annotations"]; a != nil && string(a) != "null" {
		// Read by the SDK's own rules, on a block that carries nothing
		// else.
		b := make([]byte, 0, len(a)+len(`{"type":"text","text":"","annotations":}`))
		b = append(append(append(b, `{"type":"text","text":"","annotations":`...), a...), '}')
		t, ok := readBlock(b)
		if !ok {
			return nil, false
		}
		p.annotations = t.(*sdk.TextContent).Annotations
	}
	if len(dataRaw) < 2 || dataRaw[0] != '"' {
		return nil, false
	}
	p.data = [][]byte{dataRaw[1 : len(dataRaw)-1]}
	if out != nil {
		if segs, ok := out.Segments(p.data[0]); ok {
			p.data = segs
		}
	}
	n, ok := canonicalBase64(p.data)
	if !ok || n == 0 {
		// An empty part is read by the SDK, whose rules for it are its
		// own; it costs nothing.
		return nil, false
	}
	p.size = n
	return p, true
}

// onlyMembers reports whether every member of m is one of names.
func onlyMembers(m map[string]json.RawMessage, names ...string) bool {
	n := 0
	for _, name := range names {
		if m[name] != nil {
			n++
		}
	}
	return n == len(m)
}

// metaShape reports whether a _meta member (nil: absent) is of the shape
// the SDK reads, which it then drops: an object, or null.
func metaShape(raw json.RawMessage) bool {
	return raw == nil || string(raw) == "null" || raw[0] == '{'
}

// stringMember reads a member that must be a string when present (null
// and absence read as ""), as the SDK reads it.
func stringMember(raw json.RawMessage, into *string) bool {
	if raw == nil || string(raw) == "null" {
		return true
	}
	return raw[0] == '"' && json.Unmarshal(raw, into) == nil
}

// base64Alphabet marks the bytes of the standard base64 alphabet.
var base64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// canonicalBase64 is the number of bytes the text of segs, in order,
// decodes to when it is base64 as encoding/json writes it (the standard
// alphabet, padded, without line breaks, the unused bits of the last
// group zero); ok is false otherwise. Nothing is decoded but the last
// group.
func canonicalBase64(segs [][]byte) (int64, bool) {
	size := 0
	for _, s := range segs {
		size += len(s)
	}
	if size%4 != 0 {
		return 0, false
	}
	if size == 0 {
		return 0, true
	}
	// The last group may lie across segments.
	var group [4]byte
	k, left := 4, size-4
	for _, s := range segs {
		body := s[:min(len(s), max(left, 0))]
		for _, c := range body {
			if !base64Alphabet[c] {
				return 0, false
			}
		}
		left -= len(body)
		for _, c := range s[len(body):] {
			group[4-k] = c
			k--
		}
	}
	var last [3]byte
	n, err := base64.StdEncoding.Strict().Decode(last[:], group[:])
	if err != nil {
		return 0, false
	}
	return int64((size-4)/4*3 + n), true
}

// pieces is the part's encoding as the SDK writes the block it stands
// for: head, the base64 text, tail. The first and last are small and
// new.
func (p *binaryPart) pieces() (head []byte, data [][]byte, tail []byte, err error) {
	var b bytes.Buffer
	switch p.kind {
	case mcpv1alpha1.ResultContentResource:
		b.WriteString(`{"type":"resource","resource":{"uri":`)
		if err := writeJSON(&b, p.uri); err != nil {
			return nil, nil, nil, err
		}
		if p.mime != "" {
			b.WriteString(`,"mimeType":`)
			if err := writeJSON(&b, p.mime); err != nil {
				return nil, nil, nil, err
			}
		}
		b.WriteString(`,"blob":"`)
	default:
		typ := "image"
		if p.kind == mcpv1alpha1.ResultContentAudio {
			typ = "audio"
		}
		b.WriteString(`{"type":"` + typ + `","mimeType":`)
		if err := writeJSON(&b, p.mime); err != nil {
			return nil, nil, nil, err
		}
		b.WriteString(`,"data":"`)
	}
	head = bytes.Clone(b.Bytes())
	b.Reset()
	b.WriteByte('"')
	if p.kind == mcpv1alpha1.ResultContentResource {
		b.WriteByte('}')
	}
	if p.annotations != nil {
		b.WriteString(`,"annotations":`)
		if err := writeJSON(&b, p.annotations); err != nil {
			return nil, nil, nil, err
		}
	}
	b.WriteByte('}')
	return head, p.data, b.Bytes(), nil
}

// writeJSON appends v's encoding by encoding/json (HTML characters
// escaped, as the SDK's encoding escapes them).
func writeJSON(b *bytes.Buffer, v any) error {
	enc, err := json.Marshal(v)
	b.Write(enc)
	return err
}

// MarshalJSON is the block as the SDK would encode it, for the SDK's path:
// the upstream's own bytes when they are exactly that (what a server
// writing the block plainly sends), else a copy built once.
func (p *binaryPart) MarshalJSON() ([]byte, error) {
	head, data, tail, err := p.pieces()
	if err != nil {
		return nil, err
	}
	if len(data) == 1 && len(p.raw) == len(head)+len(data[0])+len(tail) && len(data[0]) > 0 && &p.raw[len(head)] == &data[0][0] &&
		bytes.HasPrefix(p.raw, head) && bytes.HasSuffix(p.raw, tail) {
		return p.raw, nil
	}
	n := len(head) + len(tail)
	for _, d := range data {
		n += len(d)
	}
	b := append(make([]byte, 0, n), head...)
	for _, d := range data {
		b = append(b, d...)
	}
	return append(b, tail...), nil
}

// typedAnswer is the encoding of res, a result holding a part that is not
// text, as the SDK encodes it for the 2026-07-28 revision (modern: the
// gateway named in _meta, the result's type last) or for one of the
// initialize era, in pieces: those of the binary parts are slices of the
// upstream's body, the rest small. ok is false for any other result, which
// the encoders of every result write whole.
func (g *Gateway) typedAnswer(res *sdk.CallToolResult, modern bool) (pieces [][]byte, ok bool) {
	if res == nil || res.InputRequests != nil || res.RequestState != "" || !hasBinaryPart(res) {
		return nil, false
	}
	meta := res.Meta
	if modern {
		if _, named := meta[sdk.MetaKeyServerInfo]; !named {
			meta = make(sdk.Meta, len(res.Meta)+1)
			for k, v := range res.Meta {
				meta[k] = v
			}
			meta[sdk.MetaKeyServerInfo] = g.implementation()
		}
	}
	// The members around the content list, encoded as the SDK's result
	// encodes them: _meta before it, structuredContent and isError after.
	before, err := json.Marshal(struct {
		Meta sdk.Meta `json:"_meta,omitempty"`
	}{meta})
	if err != nil {
		return nil, false
	}
	after, err := json.Marshal(struct {
		StructuredContent any  `json:"structuredContent,omitempty"`
		IsError           bool `json:"isError,omitempty"`
	}{res.StructuredContent, res.IsError})
	if err != nil {
		return nil, false
	}
	var head bytes.Buffer
	head.Write(before[:len(before)-1])
	if len(before) > 2 {
		head.WriteByte(',')
	}
	head.WriteString(`"content":[`)
	for i, c := range res.Content {
		if i > 0 {
			head.WriteByte(',')
		}
		if p, ok := c.(*binaryPart); ok {
			h, data, tail, err := p.pieces()
			if err != nil {
				return nil, false
			}
			head.Write(h)
			pieces = append(append(pieces, bytes.Clone(head.Bytes())), data...)
			head.Reset()
			head.Write(tail)
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, false
		}
		head.Write(b)
	}
	head.WriteByte(']')
	if len(after) > 2 {
		head.WriteByte(',')
		head.Write(after[1 : len(after)-1])
	}
	if modern {
		head.WriteString(`,"resultType":"complete"`)
	}
	head.WriteByte('}')
	return append(pieces, head.Bytes()), true
}

func hasBinaryPart(res *sdk.CallToolResult) bool {
	for _, c := range res.Content {
		if _, ok := c.(*binaryPart); ok {
			return true
		}
	}
	return false
}

// writeAnswer writes a JSON-RPC response whose result is pieces, as
// writeResponse writes one result, without joining them: the parts that
// are not text go from the upstream's body to the connection. It returns
// the bytes written.
func writeAnswer(w http.ResponseWriter, id json.RawMessage, pieces [][]byte) int {
	open := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":`)+len(id)+len(pieces[0]))
	open = append(append(append(open, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	open = append(open, pieces[0]...)
	size := len(open) + 1
	for _, p := range pieces[1:] {
		size += len(p)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(open); err != nil {
		return size
	}
	for _, p := range pieces[1:] {
		if _, err := w.Write(p); err != nil {
			return size
		}
	}
	_, _ = w.Write([]byte{'}'})
	return size
}
