package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/util/jsonpath"

	"github.com/mcp-catalog/operator/internal/review"
)

// ResultGroupVersion is the apiVersion of what kubectl-mcp prints that is
// not an API object (a probe, a server's tool list, a call's result, the
// outcome of an import request). Nothing serves this group: it only gives
// those results the apiVersion/kind/metadata shape kubectl's printers and
// jsonpath expressions expect. See docs/cli.md.
const ResultGroupVersion = "cli.mcp.catalog.dev/v1alpha1"

// printFlags are kubectl's output flags: -o json|yaml|name|jsonpath=...|
// go-template=...|custom-columns=...|wide, with the command's own table as
// the default. json, yaml, name, jsonpath and go-template are cli-runtime's
// printers; custom-columns and wide are built here (cli-runtime leaves them
// to kubectl itself), custom-columns on client-go's jsonpath as kubectl does.
type printFlags struct {
	flags *genericclioptions.PrintFlags
}

func newPrintFlags(operation string) *printFlags {
	return &printFlags{flags: genericclioptions.NewPrintFlags(operation)}
}

func (p *printFlags) bind(cmd *cobra.Command) {
	p.flags.AddFlags(cmd)
	// cli-runtime's help lists only its own formats.
	cmd.Flags().Lookup("output").Usage = "Output format: json, yaml, name, jsonpath=..., jsonpath-as-json=..., go-template=..., custom-columns=..., wide. The default is a table."
}

func (p *printFlags) format() string {
	if p.flags.OutputFormat == nil {
		return ""
	}
	return *p.flags.OutputFormat
}

// validate refuses an unknown format or a template that does not parse
// before the command does any work, as a usage error naming -o.
func (p *printFlags) validate() error {
	switch f := p.format(); {
	case f == "" || f == "wide":
		return nil
	case strings.HasPrefix(f, "custom-columns="):
		_, err := parseColumns(strings.TrimPrefix(f, "custom-columns="))
		return err
	}
	if _, err := p.flags.ToPrinter(); err != nil {
		return usageErr("-o/--output: %v", err)
	}
	return nil
}

// print writes obj in the chosen format; the default and wide formats are
// the command's table.
func (p *printFlags) print(w io.Writer, obj runtime.Object, table func(wide bool) error) error {
	switch f := p.format(); {
	case f == "":
		return table(false)
	case f == "wide":
		return table(true)
	case strings.HasPrefix(f, "custom-columns="):
		cols, err := parseColumns(strings.TrimPrefix(f, "custom-columns="))
		if err != nil {
			return err
		}
		return printColumns(w, cols, obj)
	}
	pr, err := p.flags.ToPrinter()
	if err != nil {
		return usageErr("-o/--output: %v", err)
	}
	return pr.PrintObj(obj, w)
}

// resultObject is a result with the apiVersion/kind/metadata shape: v's
// JSON fields at the top level next to them.
func resultObject(kind, namespace, name string, v any) (*unstructured.Unstructured, error) {
	m, err := toMap(v)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(ResultGroupVersion)
	u.SetKind(kind)
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u, nil
}

// resultList is a List of results; extra fields (for example how many
// pages a listing took) sit next to items.
func resultList(items []*unstructured.Unstructured, extra map[string]any) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]any{}}
	for k, v := range extra {
		l.Object[k] = v
	}
	l.SetAPIVersion(ResultGroupVersion)
	l.SetKind("List")
	for _, it := range items {
		l.Items = append(l.Items, *it)
	}
	if l.Items == nil {
		l.Items = []unstructured.Unstructured{}
	}
	return l
}

// objectList turns API objects into a List for the printers: each item
// keeps its apiVersion and kind (name printing needs them) and loses its
// managedFields, as kubectl shows them.
func objectList(gvkObjects []runtime.Object) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{Object: map[string]any{}}
	l.SetAPIVersion("v1")
	l.SetKind("List")
	l.Items = []unstructured.Unstructured{}
	for _, o := range gvkObjects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		u := unstructured.Unstructured{Object: m}
		u.SetManagedFields(nil)
		l.Items = append(l.Items, u)
	}
	return l, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	// apimachinery's decoder keeps integers int64, which unstructured
	// content requires.
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// column is one custom column: a header and a jsonpath expression.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// parseColumns reads kubectl's custom-columns spec, HEADER:.json.path,...
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, usageErr("-o custom-columns= needs at least one HEADER:.json.path column")
	}
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || header == "" || expr == "" {
			return nil, usageErr("-o custom-columns: %q is not HEADER:.json.path", part)
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse(relaxedPath(expr)); err != nil {
			return nil, usageErr("-o custom-columns: column %s: %v", header, err)
		}
		cols = append(cols, column{header: header, path: jp})
	}
	return cols, nil
}

// relaxedPath accepts .a.b, a.b and {.a.b}, as kubectl does.
func relaxedPath(expr string) string {
	if strings.HasPrefix(expr, "{") && strings.HasSuffix(expr, "}") {
		return expr
	}
	if !strings.HasPrefix(expr, ".") {
		expr = "." + expr
	}
	return "{" + expr + "}"
}

// printColumns prints one row per item of a list (or one for an object);
// a path that finds nothing prints <none>.
func printColumns(w io.Writer, cols []column, obj runtime.Object) error {
	var items []any
	switch o := obj.(type) {
	case *unstructured.UnstructuredList:
		for _, it := range o.Items {
			items = append(items, it.Object)
		}
	case *unstructured.Unstructured:
		items = append(items, o.Object)
	default:
		m, err := toMap(obj)
		if err != nil {
			return err
		}
		items = append(items, m)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, it := range items {
		cells := make([]string, len(cols))
		for i, c := range cols {
			results, err := c.path.FindResults(it)
			if err != nil {
				return fmt.Errorf("column %s: %w", c.header, err)
			}
			var vals []string
			for _, r := range results {
				for _, v := range r {
					vals = append(vals, cellValue(v))
				}
			}
			cells[i] = "<none>"
			if len(vals) > 0 {
				cells[i] = strings.Join(vals, ",")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cellValue(v reflect.Value) string {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "<none>"
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(v.Interface()); err == nil {
			return review.OneLine(b.String(), 200)
		}
	}
	return review.OneLine(fmt.Sprint(v.Interface()), 200)
}
