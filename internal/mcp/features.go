package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// Prompts, resources and resource templates (docs/adr/065-prompts-and-resources.md):
// listed by an import, one prompt got and one resource read by the gateway.
// Each is one operation of its own under one budget, with the rules of
// every other: the handshake, the era, the body cap, typed errors that
// carry no server bytes.

// Bounds of what ListFeatures keeps.
const (
	// MaxFeatures bounds the prompts, resources and templates one
	// ListFeatures keeps, each; more fails the operation.
	MaxFeatures = 500
	// MaxFeatureText bounds a kept title or name (in bytes); a description
	// is bounded by MaxFeatureDescription. Longer text is clipped.
	MaxFeatureText        = 256
	MaxFeatureDescription = 8192
	// MaxURI bounds a resource's URI or URI template; a longer one is
	// skipped.
	MaxURI = 2048
	// MaxPromptArguments bounds the arguments of one prompt; a prompt with
	// more is skipped.
	MaxPromptArguments = 64
	// MaxAppReads bounds the ui:// resources whose content one
	// ListFeatures reads to hash it; later ones are kept without a
	// content hash, which the gateway never serves.
	MaxAppReads = 32
	// DefaultMaxReadBytes bounds a resources/read result when the caller
	// gives no bound.
	DefaultMaxReadBytes = 1 << 20
)

// AppScheme is the URI scheme of MCP Apps' user-interface resources.
const AppScheme = "ui://"

// Prompt is one prompt a server offers.
type Prompt struct {
	Name, Title, Description string
	Arguments                []PromptArgument
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name, Title, Description string
	Required                 bool
}

// Resource is one resource (URI set) or resource template (URITemplate
// set) a server offers.
type Resource struct {
	URI, URITemplate                   string
	Name, Title, Description, MimeType string
	// ContentHash is "sha256:<hex>" of a ui:// resource's content as read
	// (ContentDigest), empty for other resources and for a ui:// resource
	// not read.
	ContentHash string
}

// App reports whether r is an MCP Apps ui:// resource.
func (r Resource) App() bool { return r.URI != "" && strings.HasPrefix(r.URI, AppScheme) }

// Features are the prompts, resources and templates a server offers, and
// how many of each were offered but not kept (with a reason each).
type Features struct {
	Probe     ProbeResult
	Prompts   []Prompt
	Resources []Resource
	Templates []Resource
	Skipped   []SkippedTool
	// PromptsOffered and ResourcesOffered say whether the server declared
	// the capability at all.
	PromptsOffered, ResourcesOffered bool
}

// ListFeatures performs the handshake and, for each capability the server
// declares, the paged prompts/list, resources/list and
// resources/templates/list, and reads the content of the ui:// resources
// to hash it. Any failure fails the whole operation.
func (c *Client) ListFeatures(ctx context.Context, ep Endpoint) (*Features, error) {
	o, err := c.open(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer o.end(ctx)
	f := &Features{Probe: o.probe}
	for _, cp := range o.probe.Capabilities {
		switch cp {
		case "prompts":
			f.PromptsOffered = true
		case "resources":
			f.ResourcesOffered = true
		}
	}
	if f.PromptsOffered {
		if err := o.listPages(ctx, "prompts/list", "prompts", func(raw json.RawMessage) { f.addPrompt(raw) }); err != nil {
			return nil, err
		}
	}
	if f.ResourcesOffered {
		if err := o.listPages(ctx, "resources/list", "resources", func(raw json.RawMessage) { f.addResource(raw, false) }); err != nil {
			return nil, err
		}
		if err := o.listPages(ctx, "resources/templates/list", "resourceTemplates", func(raw json.RawMessage) { f.addResource(raw, true) }); err != nil {
			return nil, err
		}
		reads := 0
		for i := range f.Resources {
			r := &f.Resources[i]
			if !r.App() || reads >= MaxAppReads {
				continue
			}
			reads++
			body, err := o.readResource(ctx, r.URI, DefaultMaxReadBytes)
			var e *Error
			if errors.As(err, &e) && (e.Kind == KindOversized || e.Kind == KindRPCError || e.Kind == KindHTTPStatus || e.Kind == KindInvalidResponse) {
				// This app is kept without a content hash, which no
				// approval covers: the others are still imported.
				continue
			}
			if err != nil {
				return nil, err
			}
			r.ContentHash, _ = ContentDigest(body)
		}
	}
	if len(f.Prompts) > MaxFeatures || len(f.Resources) > MaxFeatures || len(f.Templates) > MaxFeatures {
		return nil, &Error{Kind: KindToolLimit, Server: ep.Name, Method: "resources/list", Limit: MaxFeatures}
	}
	return f, nil
}

// listPages walks a paged list from its first page, handing each element
// of member to add, with the cursor rules of tools/list.
func (o *operation) listPages(ctx context.Context, method, member string, add func(json.RawMessage)) error {
	seen := map[string]bool{}
	var cursor *string
	offered := 0
	for page := 1; ; page++ {
		params := map[string]any{}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		msg, err := o.requestMessage(ctx, o.workLeg(method, params))
		if err != nil {
			return err
		}
		var res struct {
			NextCursor *string
		}
		var members map[string]json.RawMessage
		err = json.Unmarshal(msg.result, &members)
		msg.release()
		if err != nil {
			return o.failDetail(KindInvalidResponse, method, "result is malformed")
		}
		var items []json.RawMessage
		if raw, ok := members[member]; !ok || json.Unmarshal(raw, &items) != nil {
			return o.failDetail(KindInvalidResponse, method, member+" is not a list")
		}
		offered += len(items)
		if offered > MaxFeatures {
			return &Error{Kind: KindToolLimit, Server: o.ep.Name, Method: method, Limit: MaxFeatures}
		}
		for _, it := range items {
			add(it)
		}
		if raw, ok := members["nextCursor"]; ok && string(raw) != "null" {
			var c string
			if json.Unmarshal(raw, &c) != nil {
				return o.failDetail(KindInvalidResponse, method, "nextCursor is not a string")
			}
			res.NextCursor = &c
		}
		if res.NextCursor == nil || (*res.NextCursor == "" && o.era != eraModern) {
			return nil
		}
		if seen[*res.NextCursor] {
			return o.failDetail(KindRepeatedCursor, method, "")
		}
		seen[*res.NextCursor] = true
		if page >= o.ep.MaxPages {
			return &Error{Kind: KindPageLimit, Server: o.ep.Name, Method: method, Limit: o.ep.MaxPages}
		}
		cursor = res.NextCursor
	}
}

// Skip reasons of prompts and resources, beside those of tools.
const (
	// SkipInvalidURI: a resource's URI or template is empty, too long or
	// holds control characters.
	SkipInvalidURI = "InvalidURI"
)

func (f *Features) addPrompt(raw json.RawMessage) {
	var p struct {
		Name        *string `json:"name"`
		Title       string  `json:"title"`
		Description string  `json:"description"`
		Arguments   []struct {
			Name        string `json:"name"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Required    bool   `json:"required"`
		} `json:"arguments"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Name == nil {
		f.Skipped = append(f.Skipped, SkippedTool{Name: "?", Reason: SkipInvalidDefinition})
		return
	}
	if !ValidToolName(*p.Name) {
		f.Skipped = append(f.Skipped, SkippedTool{Name: printableName(*p.Name), Reason: SkipInvalidName})
		return
	}
	if len(p.Arguments) > MaxPromptArguments {
		f.Skipped = append(f.Skipped, SkippedTool{Name: *p.Name, Reason: SkipDefinitionTooLarge})
		return
	}
	out := Prompt{Name: *p.Name, Title: clipText(p.Title, MaxFeatureText), Description: clipText(p.Description, MaxFeatureDescription)}
	for _, a := range p.Arguments {
		if a.Name == "" || len(a.Name) > 128 {
			f.Skipped = append(f.Skipped, SkippedTool{Name: *p.Name, Reason: SkipInvalidDefinition})
			return
		}
		out.Arguments = append(out.Arguments, PromptArgument{Name: a.Name, Title: clipText(a.Title, MaxFeatureText), Description: clipText(a.Description, 2048), Required: a.Required})
	}
	f.Prompts = append(f.Prompts, out)
}

func (f *Features) addResource(raw json.RawMessage, template bool) {
	var r struct {
		URI         string `json:"uri"`
		URITemplate string `json:"uriTemplate"`
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		MimeType    string `json:"mimeType"`
	}
	if json.Unmarshal(raw, &r) != nil {
		f.Skipped = append(f.Skipped, SkippedTool{Name: "?", Reason: SkipInvalidDefinition})
		return
	}
	uri := r.URI
	if template {
		uri = r.URITemplate
	}
	if !ValidURI(uri) {
		f.Skipped = append(f.Skipped, SkippedTool{Name: printableName(uri), Reason: SkipInvalidURI})
		return
	}
	out := Resource{Name: clipText(r.Name, MaxFeatureText), Title: clipText(r.Title, MaxFeatureText),
		Description: clipText(r.Description, MaxFeatureDescription), MimeType: clipText(r.MimeType, MaxFeatureText)}
	if template {
		out.URITemplate = uri
		f.Templates = append(f.Templates, out)
		return
	}
	out.URI = uri
	f.Resources = append(f.Resources, out)
}

// ValidURI reports whether a resource URI or template is kept: 1 to MaxURI
// bytes of valid UTF-8 without control characters or spaces.
func ValidURI(s string) bool {
	if s == "" || len(s) > MaxURI || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c <= 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) {
			return false
		}
	}
	return true
}

// clipText clips s to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// GetPrompt performs the handshake and one prompts/get of name with
// arguments, and returns the result as the server sent it (an object).
func (c *Client) GetPrompt(ctx context.Context, ep Endpoint, name string, args map[string]string) (json.RawMessage, error) {
	o, err := c.open(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer o.end(ctx)
	if !ValidToolName(name) {
		return nil, o.failDetail(KindInvalidArgument, "prompts/get", "prompt name is invalid")
	}
	if args == nil {
		args = map[string]string{}
	}
	l := o.workLeg("prompts/get", map[string]any{"name": name, "arguments": args})
	l.name = name
	msg, err := o.requestMessage(ctx, l)
	if err != nil {
		return nil, err
	}
	defer msg.release()
	return append(json.RawMessage(nil), msg.result...), nil
}

// ReadResource performs the handshake and one resources/read of uri, and
// returns the result as the server sent it. A result larger than maxBytes
// (0: DefaultMaxReadBytes) fails with KindOversized.
func (c *Client) ReadResource(ctx context.Context, ep Endpoint, uri string, maxBytes int64) (json.RawMessage, error) {
	o, err := c.open(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer o.end(ctx)
	return o.readResource(ctx, uri, maxBytes)
}

func (o *operation) readResource(ctx context.Context, uri string, maxBytes int64) (json.RawMessage, error) {
	const method = "resources/read"
	if !ValidURI(uri) {
		return nil, o.failDetail(KindInvalidArgument, method, "resource URI is invalid")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxReadBytes
	}
	// The body holds the envelope besides the result.
	o.maxBody = maxBytes + 4<<10
	l := o.workLeg(method, map[string]any{"uri": uri})
	l.name = uri
	msg, err := o.requestMessage(ctx, l)
	if err != nil {
		return nil, err
	}
	defer msg.release()
	if int64(len(msg.result)) > maxBytes {
		return nil, &Error{Kind: KindOversized, Server: o.ep.Name, Method: method, Limit: int(maxBytes)}
	}
	return append(json.RawMessage(nil), msg.result...), nil
}

// ContentDigest is "sha256:<hex>" over the contents of a resources/read
// result: each part's URI, MIME type and decoded text or blob, in order,
// length-prefixed, so that the same content encoded differently (member
// order, escapes) hashes the same. ok is false when the result has no
// contents list or a blob is not base64.
func ContentDigest(result json.RawMessage) (string, bool) {
	var r struct {
		Contents []struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"contents"`
	}
	if json.Unmarshal(result, &r) != nil || r.Contents == nil {
		return "", false
	}
	h := sha256.New()
	field := func(kind byte, s []byte) {
		var n [9]byte
		n[0] = kind
		for i := 0; i < 8; i++ {
			n[1+i] = byte(uint64(len(s)) >> (8 * i))
		}
		h.Write(n[:])
		h.Write(s)
	}
	for _, c := range r.Contents {
		field('u', []byte(c.URI))
		field('m', []byte(c.MimeType))
		switch {
		case c.Text != nil:
			field('t', []byte(*c.Text))
		case c.Blob != nil:
			b, err := base64.StdEncoding.DecodeString(*c.Blob)
			if err != nil {
				return "", false
			}
			field('b', b)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), true
}
