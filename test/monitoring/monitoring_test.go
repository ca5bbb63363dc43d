// Package monitoring checks the alert rules and the Grafana dashboard the
// chart ships against Prometheus' own parsers and against the metrics the
// operator exports. It is a module of its own so that the Prometheus server
// module, which these parsers live in, stays out of the operator's
// dependencies.
package monitoring

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mcp-catalog/operator/internal/metrics"
)

const filesDir = "../../charts/mcp-catalog-operator/files"

// promql is Prometheus' own parser with its default functions.
var promql = parser.NewParser(parser.Options{})

// fqName reads a descriptor's metric name. client_golang exposes it only in
// Desc's String form, which has begun with the quoted fqName since the
// package's first release.
var fqName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// exported is every metric name the operator's collectors describe, each
// checked to be registered with controller-runtime's registry (the one the
// manager's /metrics serves).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, c := range metrics.Collectors() {
		var are prometheus.AlreadyRegisteredError
		if err := crmetrics.Registry.Register(c); !errors.As(err, &are) {
			t.Fatalf("collector %T is not registered with controller-runtime's registry (Register: %v)", c, err)
		}
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			names[m[1]] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d metric names found: %v", len(names), names)
	}
	return names
}

// known reports whether a selector's name is an exported metric, or a
// histogram's _bucket, _sum or _count series of one.
func known(names map[string]bool, name string) bool {
	if names[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

// metricNames lists the metric names an expression selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q does not parse: %v", expr, err)
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("%q selects without a metric name", expr)
			}
			out = append(out, vs.Name)
		}
		return nil
	})
	if len(out) == 0 {
		t.Errorf("%q selects no metric", expr)
	}
	return out
}

func TestAlertRules(t *testing.T) {
	groups, errs := rulefmt.ParseFile(filepath.Join(filesDir, "prometheus-rules.yaml"), false, model.UTF8Validation, promql)
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	names := exported(t)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			for _, n := range metricNames(t, r.Expr) {
				if !known(names, n) {
					t.Errorf("alert %s uses %s, which the operator does not export", r.Alert, n)
				}
			}
			if r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("alert %s lacks a summary or a severity", r.Alert)
			}
		}
	}
	// The alerts the chart promises.
	for _, want := range []string{
		"McpServerUnreachable", "McpCatalogImportsFailing", "McpToolDefinitionAwaitingApproval", "McpToolDefinitionDrifted",
		"McpCallApprovalWaiting", "McpGatewayAuditFailures", "McpGatewayRefusalsSpiking",
	} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}
}

func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(filesDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without uid or panels")
	}
	names := exported(t)
	used := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range metricNames(t, tg.Expr) {
				used[n] = true
				if !known(names, n) {
					t.Errorf("panel %q uses %s, which the operator does not export", p.Title, n)
				}
			}
		}
	}
	// Every operator metric has a place on the dashboard.
	for n := range names {
		if !used[n] && !used[n+"_bucket"] {
			t.Errorf("the dashboard shows nothing of %s", n)
		}
	}
}
