package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-catalog/operator/test/registryapi"
)

// validateAgainst checks body against the named schema of the registry's
// OpenAPI document.
func validateAgainst(t testing.TB, name string, body []byte) {
	t.Helper()
	registryapi.Validate(t, registryapi.Schema(name), body)
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
		for _, c := range []struct {
			schema registryapi.Schema
			body   string
		}{
			{registryapi.ServerList, `{"servers": [{"server": {"name": "no-slash", "description": "d", "version": "1"}}]}`},
			{registryapi.ServerList, `{"metadata": {"count": 0}}`},
			{registryapi.ServerResponse, `{"server": {"name": "a.b/c", "description": "d", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"isLatest": true, "extra": 1}}}`},
			// date-time is asserted, not only annotated.
			{registryapi.ServerResponse, `{"server": {"name": "a.b/c", "description": "d", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"publishedAt": "yesterday"}}}`},
			{registryapi.ServerResponse, `{"server": {"name": "a.b/c", "description": "", "version": "1"}}`},
			{registryapi.Error, `{"error": 404}`},
		} {
			if registryapi.Check(c.schema, []byte(c.body)) == nil {
				t.Errorf("%s accepted %s", c.schema, c.body)
			}
		}
	})
}
