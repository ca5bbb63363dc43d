package gateway

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Output schemas are compiled once per schema (the hash of its bytes: the
// status holding it is writable by others than the importer, so the
// definition's hash does not name it), and at most
// maxCompiledSchemas are kept: a cache that is full is emptied, and the
// schemas still in use are compiled again.
const maxCompiledSchemas = 1024

// outputSchemas compiles the output schemas of approved definitions.
type outputSchemas struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]compiledSchema
}

// compiledOutputSchemas is every gateway's: a schema compiles the same
// for all of them.
var compiledOutputSchemas outputSchemas

type compiledSchema struct {
	s   *jsonschema.Schema
	err error
}

// errSchemaUnloadable is why a schema naming a document outside itself
// does not compile: the gateway loads nothing a server's schema points at
// (a file of the gateway's, a URL it would fetch).
var errSchemaUnloadable = errors.New("the output schema refers to a document outside itself")

type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errSchemaUnloadable }

// schemaLocation is where a compiled output schema says it is; relative
// references resolve against it, and nothing is there to load.
const schemaLocation = "urn:mcp-catalog:output-schema"

// get is the compiled schema raw. A schema that does not compile gives an
// error every time: no structured result is checked against half a
// schema.
func (o *outputSchemas) get(raw []byte) (*jsonschema.Schema, error) {
	hash := sha256.Sum256(raw)
	o.mu.Lock()
	if c, ok := o.m[hash]; ok {
		o.mu.Unlock()
		return c.s, c.err
	}
	o.mu.Unlock()
	s, err := compileOutputSchema(raw)
	o.mu.Lock()
	if o.m == nil || len(o.m) >= maxCompiledSchemas {
		o.m = make(map[[sha256.Size]byte]compiledSchema)
	}
	o.m[hash] = compiledSchema{s: s, err: err}
	o.mu.Unlock()
	return s, err
}

// compileOutputSchema compiles a server's output schema as JSON Schema
// 2020-12 where it names no dialect, the default of the 2026-07-28
// revision. Formats are annotations, as the dialect says; references
// resolve within the schema only.
func compileOutputSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaLocation, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaLocation)
}
