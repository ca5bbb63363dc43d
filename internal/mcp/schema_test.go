package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNormalizeSchemaKeeps(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"minimal", `{"type":"object"}`, `{"type":"object"}`},
		{"no parameters", `{"type":"object","additionalProperties":false}`, `{"type":"object"}`},
		{
			"annotations dropped, structure kept",
			`{"type":"object","title":"T","$id":"urn:x","$comment":"c","properties":{"a":{"type":"string","description":"d","title":"A","format":"email","maxLength":9,"pattern":"^x","default":"q"}},"required":["a"]}`,
			`{"properties":{"a":{"description":"d","type":"string"}},"required":["a"],"type":"object"}`,
		},
		{
			"nested objects and arrays",
			`{"type":"object","properties":{"o":{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"type":"number","minimum":0}},"required":["n"]}}}}}}`,
			`{"properties":{"o":{"properties":{"l":{"items":{"properties":{"n":{"type":"number"}},"required":["n"],"type":"object"},"type":"array"}},"type":"object"}},"type":"object"}`,
		},
		{"enum kept verbatim, compacted", `{"type":"object","properties":{"e":{"enum":[ "a", 1.50, null, {"k" : true} ]}}}`, `{"properties":{"e":{"enum":["a",1.50,null,{"k":true}]}},"type":"object"}`},
		{"type list", `{"type":"object","properties":{"s":{"type":["string","null"]}}}`, `{"properties":{"s":{"type":["string","null"]}},"type":"object"}`},
		{"untyped property", `{"type":"object","properties":{"any":{"description":"anything"}}}`, `{"properties":{"any":{"description":"anything"}},"type":"object"}`},
		{"empty required dropped", `{"type":"object","required":[]}`, `{"type":"object"}`},
		{"draft-07 dialect", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, `{"type":"object"}`},
		{"unused $defs dropped", `{"type":"object","$defs":{"x":{"type":"string"}}}`, `{"type":"object"}`},
		{"html not escaped", `{"type":"object","description":"a<b>&c"}`, `{"description":"a<b>&c","type":"object"}`},
		{
			"x-mcp-header on reachable primitive",
			`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"o":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"Tenant-Id"}}}}}`,
			`{"properties":{"o":{"properties":{"n":{"type":"integer","x-mcp-header":"Tenant-Id"}},"type":"object"},"region":{"type":"string","x-mcp-header":"Region"}},"type":"object"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NormalizeSchema(json.RawMessage(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			// Normalising is idempotent: the output is a fixed point.
			again, err := NormalizeSchema(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

func TestNormalizeSchemaRejects(t *testing.T) {
	deep := `{"type":"object"}`
	for range MaxSchemaDepth {
		deep = `{"type":"object","properties":{"d":` + deep + `}}`
	}
	var many strings.Builder
	many.WriteString(`{"type":"object","properties":{`)
	for i := range MaxSchemaNodes {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"p%d":{}`, i)
	}
	many.WriteString(`}}`)
	bigEnum := `{"type":"object","properties":{"e":{"enum":[` + strings.TrimSuffix(strings.Repeat(`1,`, MaxEnumValues+1), ",") + `]}}}`
	huge := `{"type":"object","description":"` + strings.Repeat("x", MaxNormalizedSchemaBytes) + `"}`

	cases := []struct {
		name, in, rule string
	}{
		{"not json", `{`, ruleNotObject},
		{"array root", `[]`, ruleNotObject},
		{"boolean root", `true`, ruleNotObject},
		{"missing root type", `{"properties":{}}`, ruleRootType},
		{"string root type", `{"type":"string"}`, ruleRootType},
		{"root type list", `{"type":["object","null"]}`, ruleRootType},
		{"$ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}`, ruleReference},
		{"root $ref", `{"type":"object","$ref":"https://example.test/s.json"}`, ruleReference},
		{"$dynamicRef", `{"type":"object","$dynamicRef":"#x"}`, ruleReference},
		{"anyOf", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, ruleComposition},
		{"allOf", `{"type":"object","allOf":[{"required":["a"]}]}`, ruleComposition},
		{"oneOf", `{"type":"object","oneOf":[]}`, ruleComposition},
		{"not", `{"type":"object","not":{}}`, ruleComposition},
		{"if", `{"type":"object","if":{},"then":{}}`, ruleComposition},
		{"tuple items", `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}]}}}`, ruleTuple},
		{"prefixItems", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{}]}}}`, ruleTuple},
		{"boolean property", `{"type":"object","properties":{"a":true}}`, ruleBooleanSchema},
		{"boolean items", `{"type":"object","properties":{"a":{"type":"array","items":false}}}`, ruleBooleanSchema},
		{"unknown type", `{"type":"object","properties":{"a":{"type":"date"}}}`, ruleType},
		{"empty type list", `{"type":"object","properties":{"a":{"type":[]}}}`, ruleType},
		{"duplicate type", `{"type":"object","properties":{"a":{"type":["string","string"]}}}`, ruleType},
		{"type number", `{"type":"object","properties":{"a":{"type":7}}}`, ruleType},
		{"properties array", `{"type":"object","properties":[]}`, ruleProperties},
		{"property name with space", `{"type":"object","properties":{"first name":{}}}`, rulePropertyName},
		{"empty property name", `{"type":"object","properties":{"":{}}}`, rulePropertyName},
		{"property name control", `{"type":"object","properties":{"a\u0000":{}}}`, rulePropertyName},
		{"required not list", `{"type":"object","required":"a"}`, ruleRequired},
		{"required null", `{"type":"object","required":null}`, ruleRequired},
		{"required duplicate", `{"type":"object","required":["a","a"]}`, ruleRequired},
		{"required bad name", `{"type":"object","required":["a b"]}`, ruleRequired},
		{"enum empty", `{"type":"object","properties":{"e":{"enum":[]}}}`, ruleEnum},
		{"enum not list", `{"type":"object","properties":{"e":{"enum":"a"}}}`, ruleEnum},
		{"enum too long", bigEnum, ruleEnum},
		{"description not string", `{"type":"object","description":["x"]}`, ruleDescription},
		{"unknown dialect", `{"$schema":"https://example.test/my-dialect","type":"object"}`, ruleDialect},
		{"duplicate member", `{"type":"object","type":"string"}`, ruleDuplicate},
		{"duplicate property", `{"type":"object","properties":{"a":{},"a":{"type":"string"}}}`, ruleDuplicate},
		{"too deep", deep, ruleDepth},
		{"too many nodes", many.String(), ruleNodes},
		{"too large", huge, ruleSize},
		{"header on root", `{"type":"object","x-mcp-header":"Root"}`, ruleHeaderAnnotation},
		{"header under items", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}`, ruleHeaderAnnotation},
		{"header on number", `{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`, ruleHeaderAnnotation},
		{"header on untyped", `{"type":"object","properties":{"n":{"x-mcp-header":"N"}}}`, ruleHeaderAnnotation},
		{"header not token", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":"Bad Name"}}}`, ruleHeaderAnnotation},
		{"header empty", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":""}}}`, ruleHeaderAnnotation},
		{"header crlf", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":"A\r\nB"}}}`, ruleHeaderAnnotation},
		{"header duplicate case-insensitive", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`, ruleHeaderAnnotation},
		{"header inside dropped keyword", `{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"A"}}`, ruleHeaderAnnotation},
		{"escaped header inside dropped keyword", `{"type":"object","additionalProperties":{"type":"string","x-mcp-h\u0065ader":"A"}}`, ruleHeaderAnnotation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := NormalizeSchema(json.RawMessage(c.in))
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("accepted as %s (err %v)", out, err)
			}
			if se.Rule != c.rule {
				t.Fatalf("rule %q, want %q", se.Rule, c.rule)
			}
			if out != nil {
				t.Fatal("output returned with an error")
			}
		})
	}
}

func TestNormalizeSchemaErrorCarriesNoSchemaBytes(t *testing.T) {
	_, err := NormalizeSchema(json.RawMessage(`{"type":"object","properties":{"IGNORE_ALL_RULES now":{}}}`))
	if err == nil || strings.Contains(err.Error(), "IGNORE") {
		t.Fatalf("error %v", err)
	}
}
