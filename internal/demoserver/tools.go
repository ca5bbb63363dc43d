package demoserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sync"
	"time"
)

// Names of the built-in tools every server offers.
const (
	ToolEcho         = "echo"
	ToolFail         = "fail"
	ToolImageAndText = "image_and_text"
	ToolSlow         = "slow"
	ToolNested       = "create_ticket"
)

// Fixed texts of the built-in tools, for tests to compare against.
const (
	// FailText is the text of fail's isError result.
	FailText = "the fail tool failed, as asked"
	// ImageCaption is the text block image_and_text returns after its image.
	ImageCaption = "a one-pixel image"
	// SlowDefault is how long slow blocks when given no "seconds" argument.
	SlowDefault = time.Minute
)

// BuiltinTools returns the names of the built-in tools, sorted.
func BuiltinTools() []string {
	return []string{ToolNested, ToolEcho, ToolFail, ToolImageAndText, ToolSlow}
}

// CatalogToolName is the name of the i-th generated catalog tool (from 1):
// tool_0001 … tool_9999, then wider. The zero padding keeps the library's
// name order equal to the numeric order.
func CatalogToolName(i int) string { return fmt.Sprintf("tool_%04d", i) }

func catalogDescription(i int) string {
	return fmt.Sprintf("Catalog tool number %d.", i)
}

// toolSpec is a tool independent of the library that serves it.
type toolSpec struct {
	name        string
	title       string
	description string
	schema      json.RawMessage
	readOnly    bool // offered as the readOnlyHint annotation
	run         func(ctx context.Context, args map[string]any) toolResult
}

// toolResult is what a tool returns; the backends map it to their types.
type toolResult struct {
	isError bool
	image   []byte // PNG; when set, sent as an image block before the text
	text    string
}

const catalogSchema = `{"type":"object","properties":{"q":{"type":"string","description":"What to look up."}}}`

// nestedSchema is deliberately richer than a tool needs: nested objects, an
// array, an enum, and keywords ($schema, additionalProperties, format,
// minLength, default, examples) that a normaliser keeping only what a tool
// input schema needs is expected to drop.
const nestedSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "description": "The ticket to open.",
  "properties": {
    "ticket": {
      "type": "object",
      "description": "Ticket fields.",
      "properties": {
        "title": {"type": "string", "description": "One-line summary.", "minLength": 1},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "labels": {"type": "array", "items": {"type": "string"}},
        "reporter": {
          "type": "object",
          "properties": {
            "id": {"type": "integer"},
            "email": {"type": "string", "format": "email"}
          },
          "required": ["id"]
        }
      },
      "required": ["title"],
      "additionalProperties": false
    },
    "dry_run": {"type": "boolean", "default": false}
  },
  "required": ["ticket"],
  "additionalProperties": false,
  "examples": [{"ticket": {"title": "Printer on fire"}}]
}`

func (s *Server) catalogTool(name, description string) toolSpec {
	return toolSpec{
		name:        name,
		description: description,
		schema:      json.RawMessage(catalogSchema),
		readOnly:    true,
		run: func(_ context.Context, args map[string]any) toolResult {
			s.countCall(name)
			q, _ := args["q"].(string)
			return toolResult{text: name + ": " + q}
		},
	}
}

func (s *Server) builtinTools() []toolSpec {
	return []toolSpec{
		{
			name:        ToolEcho,
			title:       "Echo",
			description: "Returns its text argument.",
			schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"Text to return."}},"required":["text"]}`),
			readOnly:    true,
			run: func(_ context.Context, args map[string]any) toolResult {
				s.countCall(ToolEcho)
				text, _ := args["text"].(string)
				return toolResult{text: text}
			},
		},
		{
			name:        ToolFail,
			description: "Always returns a tool error.",
			schema:      json.RawMessage(`{"type":"object","properties":{}}`),
			run: func(context.Context, map[string]any) toolResult {
				s.countCall(ToolFail)
				return toolResult{isError: true, text: FailText}
			},
		},
		{
			name:        ToolImageAndText,
			description: "Returns an image block, then a text block.",
			schema:      json.RawMessage(`{"type":"object","properties":{}}`),
			readOnly:    true,
			run: func(context.Context, map[string]any) toolResult {
				s.countCall(ToolImageAndText)
				return toolResult{image: onePixelPNG(), text: ImageCaption}
			},
		},
		{
			name:        ToolSlow,
			description: "Blocks until cancelled or until its seconds argument elapses.",
			schema:      json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","description":"How long to block."}}}`),
			run:         s.runSlow,
		},
		{
			name:        ToolNested,
			title:       "Create ticket",
			description: "Opens a ticket (nothing is stored).",
			schema:      json.RawMessage(nestedSchema),
			run: func(_ context.Context, args map[string]any) toolResult {
				s.countCall(ToolNested)
				ticket, _ := args["ticket"].(map[string]any)
				title, _ := ticket["title"].(string)
				if title == "" {
					return toolResult{isError: true, text: "ticket.title is required"}
				}
				return toolResult{text: "ticket created: " + title}
			},
		},
	}
}

// runSlow blocks until the handler's context ends, the requested duration
// elapses, or the server closes; the counters tell a test which it was.
func (s *Server) runSlow(ctx context.Context, args map[string]any) toolResult {
	s.countCall(ToolSlow)
	d := SlowDefault
	if secs, ok := args["seconds"].(float64); ok && secs > 0 {
		d = time.Duration(secs * float64(time.Second))
	}
	s.mu.Lock()
	s.stats.SlowStarted++
	s.mu.Unlock()

	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		s.mu.Lock()
		s.stats.SlowCancelled++
		s.mu.Unlock()
		return toolResult{isError: true, text: "cancelled"}
	case <-timer.C:
		s.mu.Lock()
		s.stats.SlowCompleted++
		s.mu.Unlock()
		return toolResult{text: "done after " + d.String()}
	case <-s.stop:
		return toolResult{isError: true, text: "server closing"}
	}
}

// onePixelPNG is a valid, deterministic PNG: a client that decodes image
// blocks gets a real image.
var onePixelPNG = sync.OnceValue(func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 0x33, G: 0x66, B: 0x99, A: 0xff})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return b.Bytes()
})
