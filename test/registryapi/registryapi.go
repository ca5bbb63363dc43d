// Package registryapi checks JSON answers against the MCP Registry's
// published OpenAPI document (openapi.yaml beside this file; its source and
// licence are in README.md). Tests of the registry client and of whatever
// serves the v0.1 API (the registry handler, the gateway that mounts it)
// share it, so every side is held to the same document.
package registryapi

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var document []byte

// Schema names a schema of the document.
type Schema string

// The schemas of the v0.1 read API's answers.
const (
	// ServerList: GET /v0.1/servers and /v0.1/servers/{serverName}/versions.
	ServerList Schema = "ServerList"
	// ServerResponse: GET /v0.1/servers/{serverName}/versions/{version}.
	ServerResponse Schema = "ServerResponse"
	// Error: the body of a 404 (an object whose error is a string).
	Error Schema = "Error"
)

var pointers = map[Schema]string{
	ServerList:     "#/components/schemas/ServerList",
	ServerResponse: "#/components/schemas/ServerResponse",
	Error:          "#/paths/~1v0.1~1servers~1{serverName}~1versions/get/responses/404/content/application~1json/schema",
}

const location = "file:///registry-openapi.json"

var (
	once     sync.Once
	compiled map[Schema]*jsonschema.Schema
	errLoad  error
)

// load compiles the document's schemas once: JSON Schema 2020-12 (the
// document's jsonSchemaDialect), with formats (date-time, uri) asserted.
func load() error {
	once.Do(func() {
		js, err := yaml.YAMLToJSON(document)
		if err != nil {
			errLoad = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			errLoad = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource(location, doc); err != nil {
			errLoad = err
			return
		}
		compiled = map[Schema]*jsonschema.Schema{}
		for name, ptr := range pointers {
			s, err := c.Compile(location + ptr)
			if err != nil {
				errLoad = err
				return
			}
			compiled[name] = s
		}
	})
	return errLoad
}

// Check says whether body is JSON that schema allows.
func Check(schema Schema, body []byte) error {
	if err := load(); err != nil {
		return fmt.Errorf("compiling the OpenAPI document: %w", err)
	}
	s := compiled[schema]
	if s == nil {
		return fmt.Errorf("no schema %s", schema)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}

// Validate fails tb unless body is JSON that schema allows.
func Validate(tb testing.TB, schema Schema, body []byte) {
	tb.Helper()
	if err := Check(schema, body); err != nil {
		tb.Fatalf("the answer does not match %s of the registry's OpenAPI document: %v\n%s", schema, err, body)
	}
}
