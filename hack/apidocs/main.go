// Command apidocs writes the API reference (docs/api.md) from the generated
// CRDs, so the reference always says what the API server enforces.
//
//	go run ./hack/apidocs config/crd/bases > docs/api.md
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: apidocs <crd directory>")
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

// kindOrder puts the kinds in the order a reader meets them.
var kindOrder = map[string]int{"McpServer": 0, "McpTool": 1, "McpDelegationProfile": 2, "McpAccessPolicy": 3}

func run(w io.Writer, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	sort.Slice(crds, func(i, j int) bool {
		return kindOrder[crds[i].Spec.Names.Kind] < kindOrder[crds[j].Spec.Names.Kind]
	})

	fmt.Fprintln(w, "# API reference")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "<!-- Generated from config/crd/bases by hack/apidocs (make manifests). Do not edit. -->")
	fmt.Fprintln(w)
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			fmt.Fprintf(w, "- [%s](#%s) (`%s/%s`)\n", crd.Spec.Names.Kind, strings.ToLower(crd.Spec.Names.Kind), crd.Spec.Group, v.Name)
		}
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			writeKind(w, &crd, &v)
		}
	}
	return nil
}

func writeKind(w io.Writer, crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) {
	n := crd.Spec.Names
	fmt.Fprintf(w, "\n## %s\n\n", n.Kind)
	fmt.Fprintf(w, "`%s/%s`, %s, short name%s %s, categories %s.\n\n", crd.Spec.Group, v.Name, strings.ToLower(string(crd.Spec.Scope)),
		plural(len(n.ShortNames)), code(n.ShortNames), code(n.Categories))
	root := v.Schema.OpenAPIV3Schema
	if d := strings.TrimSpace(root.Description); d != "" {
		fmt.Fprintf(w, "%s\n\n", oneLine(d))
	}
	for _, rule := range root.XValidations {
		fmt.Fprintf(w, "Object rule: %s\n\n", oneLine(rule.Message))
	}
	for _, part := range []string{"spec", "status"} {
		s, ok := root.Properties[part]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n", part)
		for _, rule := range s.XValidations {
			fmt.Fprintf(w, "Rule: %s\n\n", oneLine(rule.Message))
		}
		fmt.Fprintln(w, "| field | type | required | default | validation | description |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		walk(w, part, s, nil)
		fmt.Fprintln(w)
	}
}

func walk(w io.Writer, path string, s apiextensionsv1.JSONSchemaProps, required map[string]bool) {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	for _, name := range names {
		p := s.Properties[name]
		field := path + "." + name
		writeField(w, field, p, req[name])
		switch {
		case p.Type == "object" && len(p.Properties) > 0:
			walk(w, field, p, nil)
		case p.Type == "array" && p.Items != nil && p.Items.Schema != nil && len(p.Items.Schema.Properties) > 0 && !isCondition(*p.Items.Schema):
			walk(w, field+"[]", *p.Items.Schema, nil)
		}
	}
}

func isCondition(s apiextensionsv1.JSONSchemaProps) bool {
	_, a := s.Properties["lastTransitionTime"]
	_, b := s.Properties["reason"]
	return a && b
}

func writeField(w io.Writer, field string, p apiextensionsv1.JSONSchemaProps, required bool) {
	typ := p.Type
	if typ == "array" && p.Items != nil && p.Items.Schema != nil {
		typ = "[]" + p.Items.Schema.Type
		if isCondition(*p.Items.Schema) {
			typ = "[]Condition"
		}
	}
	if typ == "" && p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields {
		typ = "JSON"
	}
	def := ""
	if p.Default != nil {
		def = "`" + string(p.Default.Raw) + "`"
	}
	req := ""
	if required {
		req = "yes"
	}
	fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s |\n", field, typ, req, def, escape(validation(p)), escape(oneLine(p.Description)))
}

func validation(p apiextensionsv1.JSONSchemaProps) string {
	var v []string
	if len(p.Enum) > 0 {
		var vals []string
		for _, e := range p.Enum {
			vals = append(vals, strings.Trim(string(e.Raw), `"`))
		}
		v = append(v, "one of "+strings.Join(vals, ", "))
	}
	if p.MinLength != nil {
		v = append(v, fmt.Sprintf("min length %d", *p.MinLength))
	}
	if p.MaxLength != nil {
		v = append(v, fmt.Sprintf("max length %d", *p.MaxLength))
	}
	if p.Minimum != nil {
		v = append(v, fmt.Sprintf("≥ %g", *p.Minimum))
	}
	if p.Maximum != nil {
		v = append(v, fmt.Sprintf("≤ %g", *p.Maximum))
	}
	if p.MinItems != nil {
		v = append(v, fmt.Sprintf("min items %d", *p.MinItems))
	}
	if p.MaxItems != nil {
		v = append(v, fmt.Sprintf("max items %d", *p.MaxItems))
	}
	if p.Pattern != "" {
		v = append(v, "pattern `"+p.Pattern+"`")
	}
	if p.Items != nil && p.Items.Schema != nil && p.Items.Schema.Pattern != "" {
		v = append(v, "items match `"+p.Items.Schema.Pattern+"`")
	}
	for _, r := range p.XValidations {
		v = append(v, oneLine(r.Message))
	}
	return strings.Join(v, "; ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func code(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
