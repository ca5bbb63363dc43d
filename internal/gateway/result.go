package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// A result that is more than text (docs/adr/062-typed-results.md) reaches
// the agent whole: its content blocks (text, image, audio, embedded
// resources, resource links) and its structured content, checked against
// the approved output schema, screened part by part (inspect.go), within
// the tool's bound on what is not text. A result of text alone takes the
// path every result took before: one text block.

// The kinds of failure of an upstream result the gateway finds itself:
// the call is audited as failed with them, and the agent told which.
const (
	// kindOutputSchemaMismatch: the structured content does not conform to
	// the approved output schema, or is missing where it must be there.
	kindOutputSchemaMismatch mcp.Kind = "OutputSchemaMismatch"
	// kindOutputSchemaUnusable: the approved output schema does not
	// compile (or refers outside itself), so nothing can be checked.
	kindOutputSchemaUnusable mcp.Kind = "OutputSchemaUnusable"
)

// resultError is an upstream result the gateway does not pass on.
type resultError struct{ kind mcp.Kind }

func (e *resultError) Error() string {
	return "the upstream result was not passed on: " + string(e.kind)
}

// typedResult is an upstream result that is more than text.
type typedResult struct {
	// content are the blocks, their _meta dropped (nothing in it is
	// screened): those carrying bytes that are not text as binaryParts,
	// the others as the SDK reads them.
	content []sdk.Content
	// structured is the structured content as sent (nil: none).
	structured json.RawMessage
	isError    bool
}

// typedOf reads out's result when it is more than text: a block that is
// not text, or structured content. It returns nil for a result of text
// alone, or when the client was not asked for the result (a test's fake
// client). The parts that are not text stay where the client read them
// (out.Result); nothing of them is decoded or copied.
func typedOf(out *mcp.CallOutcome) (*typedResult, error) {
	if out == nil || out.Result == nil {
		return nil, nil
	}
	m, err := mcp.ObjectMembers(out.Result)
	if err != nil {
		return nil, &mcp.Error{Kind: mcp.KindInvalidResponse, Method: "tools/call", Detail: "result is malformed"}
	}
	sc := m["structuredContent"]
	if string(sc) == "null" {
		sc = nil
	}
	if len(out.Dropped) == 0 && sc == nil {
		return nil, nil
	}
	var blocks []json.RawMessage
	if raw := m["content"]; raw != nil && string(raw) != "null" {
		var ok bool
		if blocks, ok = mcp.ArrayElements(raw); !ok {
			return nil, &mcp.Error{Kind: mcp.KindInvalidResponse, Method: "tools/call", Detail: "content is not a list"}
		}
	}
	content, other := make([]sdk.Content, 0, len(blocks)), 0
	for _, raw := range blocks {
		var c sdk.Content
		p, ok := readBinary(raw, out)
		if ok {
			c = p
		} else {
			// A block of another shape is read whole, a long string
			// the client left where it was read copied back in.
			c, ok = readBlock(out.Expand(raw))
		}
		if !ok {
			other++
			continue
		}
		content = append(content, c)
	}
	if other > 0 {
		// A block the SDK cannot read (a kind it does not know, data that
		// is not base64), or of the kinds sampling uses (tool_use,
		// tool_result), which are not a tool's to return: nothing here
		// screens it, and it is dropped, as every such block was before.
		content = append([]sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("[Note: %d content block(s) of a kind tool results do not carry dropped.]", other)}}, content...)
	}
	return &typedResult{content: content, structured: bytes.Clone(sc), isError: out.IsError}, nil
}

// readBlock reads one content block as the SDK does, without its _meta;
// ok is false for one it cannot read or a tool result does not carry.
func readBlock(raw json.RawMessage) (sdk.Content, bool) {
	var res sdk.CallToolResult
	b := make([]byte, 0, len(raw)+len(`{"content":[]}`))
	b = append(append(append(b, `{"content":[`...), raw...), `]}`...)
	if json.Unmarshal(b, &res) != nil || len(res.Content) != 1 || !stripMeta(res.Content[0]) {
		return nil, false
	}
	return res.Content[0], true
}

// stripMeta drops a block's _meta, the server's own data about it, and
// reports whether the block is of a kind a tool result carries.
func stripMeta(c sdk.Content) bool {
	switch b := c.(type) {
	case *sdk.TextContent:
		b.Meta = nil
	case *sdk.ImageContent:
		b.Meta = nil
	case *sdk.AudioContent:
		b.Meta = nil
	case *sdk.ResourceLink:
		b.Meta = nil
	case *sdk.EmbeddedResource:
		b.Meta = nil
		if b.Resource != nil {
			b.Resource.Meta = nil
		}
	default:
		return false
	}
	return true
}

// checkStructured checks a result's structured content against the
// tool's approved output schema (schema; nil when it has none). A result
// that is not a tool error must carry structured content when there is a
// schema, as the specification requires of servers; one that carries it
// must conform, tool error or not.
func checkStructured(schema []byte, t *typedResult, isError bool) error {
	if len(schema) == 0 {
		return nil
	}
	var structured json.RawMessage
	if t != nil {
		structured = t.structured
	}
	if structured == nil {
		if isError {
			return nil
		}
		return &resultError{kind: kindOutputSchemaMismatch}
	}
	s, err := compiledOutputSchemas.get(schema)
	if err != nil {
		return &resultError{kind: kindOutputSchemaUnusable}
	}
	v, err := decodeNumbers(structured)
	if err != nil {
		return &resultError{kind: kindOutputSchemaMismatch}
	}
	if s.Validate(v) != nil {
		// The validator's message quotes the server's values: it goes
		// nowhere.
		return &resultError{kind: kindOutputSchemaMismatch}
	}
	return nil
}

// decodeNumbers decodes JSON keeping numbers as written.
func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// binaryBytes is what a block carries that is not text, decoded (a
// binaryPart's counted from its base64).
func binaryBytes(c sdk.Content) int64 {
	switch b := c.(type) {
	case *binaryPart:
		return b.size
	case *sdk.ImageContent:
		return int64(len(b.Data))
	case *sdk.AudioContent:
		return int64(len(b.Data))
	case *sdk.EmbeddedResource:
		if b.Resource != nil {
			return int64(len(b.Resource.Blob))
		}
	}
	return 0
}

// droppedBinaryNote says what was dropped of a result whose tool passes
// no non-text parts, as the note of a text-only result does.
func droppedBinaryNote(n int) string {
	noun := "parts"
	if n == 1 {
		noun = "part"
	}
	return fmt.Sprintf("[Note: %d non-text %s dropped; this tool's results carry text only (spec.maxContentBytes).]", n, noun)
}

// texts are the texts of a result, joined as separate paragraphs: what
// the guardrail webhook is asked about.
func (t *typedResult) texts() string {
	var parts []string
	for _, b := range t.content {
		if s := textOf(b); s != "" {
			parts = append(parts, s)
		}
	}
	if t.structured != nil {
		parts = append(parts, string(t.structured))
	}
	return strings.Join(parts, "\n")
}
