package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// The registry's published OpenAPI document (testdata/README.md), compiled
// once: its components are JSON Schema 2020-12, the document's dialect.
var (
	openAPIOnce    sync.Once
	openAPISchemas map[string]*jsonschema.Schema
	openAPIErr     error
)

const openAPILocation = "file:///registry-openapi.json"

// openAPISchema returns the compiled component schema name
// (ServerList, ServerResponse, ...), or the 404 body's schema for "Error".
func openAPISchema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	openAPIOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join("testdata", "openapi.yaml"))
		if err != nil {
			openAPIErr = err
			return
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			openAPIErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			openAPIErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		// date-time, uri: checked, not only annotated.
		c.AssertFormat()
		if err := c.AddResource(openAPILocation, doc); err != nil {
			openAPIErr = err
			return
		}
		openAPISchemas = map[string]*jsonschema.Schema{}
		for name, ptr := range map[string]string{
			"ServerList":     "#/components/schemas/ServerList",
			"ServerResponse": "#/components/schemas/ServerResponse",
			"Error":          "#/paths/~1v0.1~1servers~1{serverName}~1versions/get/responses/404/content/application~1json/schema",
		} {
			s, err := c.Compile(openAPILocation + ptr)
			if err != nil {
				openAPIErr = err
				return
			}
			openAPISchemas[name] = s
		}
	})
	if openAPIErr != nil {
		t.Fatalf("compiling the OpenAPI document: %v", openAPIErr)
	}
	s := openAPISchemas[name]
	if s == nil {
		t.Fatalf("no schema %s", name)
	}
	return s
}

// validateAgainst checks body against the named schema of the document.
func validateAgainst(t testing.TB, name string, body []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: not JSON: %v", name, err)
	}
	if err := openAPISchema(t, name).Validate(v); err != nil {
		t.Fatalf("the answer does not match %s of the OpenAPI document: %v\n%s", name, err, body)
	}
}

func recorded(t testing.TB, file string) []byte {
	t.Helper()
	b, err := readRecorded(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readRecorded(file string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", "recorded", file))
}

// The recorded answers are answers the document allows, and the schemas
// really check: a broken copy of each is refused.
func TestRecordedAnswersMatchTheOpenAPIDocument(t *testing.T) {
	for file, schema := range map[string]string{
		"list-page-1.json":      "ServerList",
		"list-page-2.json":      "ServerList",
		"search-weather.json":   "ServerList",
		"weather-versions.json": "ServerList",
		"weather-latest.json":   "ServerResponse",
		"weather-1.0.1.json":    "ServerResponse",
		"not-found.json":        "Error",
	} {
		t.Run(file, func(t *testing.T) {
			validateAgainst(t, schema, recorded(t, file))
		})
	}
	t.Run("the schemas refuse what the document forbids", func(t *testing.T) {
		for name, body := range map[string]string{
			"ServerList":     `{"servers": [{"server": {"name": "no-slash", "description": "d", "version": "1"}}]}`,
			"ServerResponse": `{"server": {"name": "a.b/c", "description": "d", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"isLatest": true, "extra": 1}}}`,
		} {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if openAPISchema(t, name).Validate(v) == nil {
				t.Errorf("%s accepted %s", name, body)
			}
		}
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"server": {"name": "a.b/c", "description": "d", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"publishedAt": "yesterday"}}}`))
		if openAPISchema(t, "ServerResponse").Validate(v) == nil {
			t.Error("a date-time that is not one was accepted: formats are not asserted")
		}
	})
}
