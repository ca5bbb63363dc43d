package mcp

import (
	"strings"
	"testing"
)

// FuzzFeatureDecoders feeds anything to the decoders of prompts,
// resources and read results: none panics, and what they keep holds to
// its bounds.
func FuzzFeatureDecoders(f *testing.F) {
	f.Add([]byte(`{"name":"review","description":"d","arguments":[{"name":"a","required":true}]}`))
	f.Add([]byte(`{"uri":"ui://a","name":"a","mimeType":"text/html"}`))
	f.Add([]byte(`{"uriTemplate":"docs://{x}","name":"x"}`))
	f.Add([]byte(`{"contents":[{"uri":"u","blob":"AAEC"}]}`))
	f.Add([]byte(`[1,2,{"name":null}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fs Features
		fs.addPrompt(raw)
		fs.addResource(raw, false)
		fs.addResource(raw, true)
		_, _ = ContentDigest(raw)
		for _, p := range fs.Prompts {
			if !ValidToolName(p.Name) || len(p.Title) > MaxFeatureText || len(p.Description) > MaxFeatureDescription || len(p.Arguments) > MaxPromptArguments {
				t.Fatalf("a prompt beyond its bounds was kept: %+v", p)
			}
		}
		for _, r := range append(fs.Resources, fs.Templates...) {
			u := r.URI + r.URITemplate
			if !ValidURI(u) || strings.ContainsAny(u, " \n") || len(r.Description) > MaxFeatureDescription {
				t.Fatalf("a resource beyond its bounds was kept: %+v", r)
			}
		}
	})
}
