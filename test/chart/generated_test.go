package chart

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
)

const keepAnnotation = "helm.sh/resource-policy"

// baseCRDs reads the CRDs controller-gen writes, by name.
func baseCRDs(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		m := readYAMLFile(t, f)
		md, _ := m["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if m["kind"] != "CustomResourceDefinition" || name == "" {
			t.Fatalf("%s is not a named CustomResourceDefinition", f)
		}
		out[name] = m
	}
	return out
}

func baseCRDNames(t *testing.T) []string {
	return slices.Sorted(maps.Keys(baseCRDs(t)))
}

// crdDifference compares a CRD the chart rendered with the one in
// config/crd/bases. The chart may add exactly two things: its labels, and
// helm.sh/resource-policy: keep when keep is set. Everything else must be
// equal. It returns "" when they match.
func crdDifference(rendered, base map[string]any, labels map[string]string, keep bool) string {
	got := runtime.DeepCopyJSON(rendered)
	md, _ := got["metadata"].(map[string]any)
	if md == nil {
		return "rendered CRD has no metadata"
	}
	ann, _ := md["annotations"].(map[string]any)
	switch v, ok := ann[keepAnnotation]; {
	case keep && v != "keep":
		return fmt.Sprintf("annotation %s is %v, want keep", keepAnnotation, v)
	case !keep && ok:
		return fmt.Sprintf("annotation %s is set though crds.keep is false", keepAnnotation)
	}
	delete(ann, keepAnnotation)

	baseMD, _ := base["metadata"].(map[string]any)
	wantLabels := map[string]any{}
	if bl, ok := baseMD["labels"].(map[string]any); ok {
		maps.Copy(wantLabels, bl)
	}
	for k, v := range labels {
		wantLabels[k] = v
	}
	if gotLabels, _ := md["labels"].(map[string]any); !reflect.DeepEqual(gotLabels, wantLabels) {
		return fmt.Sprintf("labels %v, want %v", gotLabels, wantLabels)
	}
	// With the chart's additions checked, put back what the base has.
	if bl, ok := baseMD["labels"]; ok {
		md["labels"] = bl
	} else {
		delete(md, "labels")
	}
	if _, ok := baseMD["annotations"]; !ok && len(ann) == 0 {
		delete(md, "annotations")
	}
	if !reflect.DeepEqual(got, base) {
		return diff.Diff(base, got)
	}
	return ""
}

// TestChartCRDsMatchConfig fails when the CRDs the chart installs differ in
// anything but the chart's own labels and keep annotation from the CRDs
// controller-gen wrote: run `make manifests`.
func TestChartCRDsMatchConfig(t *testing.T) {
	base := baseCRDs(t)
	labels := chartLabels(t)
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			objs := render(t, fmt.Sprintf("crds:\n  keep: %v\n", keep), floorKubeVersion)
			rendered := map[string]map[string]any{}
			for _, o := range byKind(objs, "CustomResourceDefinition") {
				rendered[o.GetName()] = o.Object
			}
			if got, want := slices.Sorted(maps.Keys(rendered)), slices.Sorted(maps.Keys(base)); !slices.Equal(got, want) {
				t.Fatalf("chart CRDs %v, config/crd/bases %v: run `make manifests`", got, want)
			}
			for name, want := range base {
				if d := crdDifference(rendered[name], want, labels, keep); d != "" {
					t.Errorf("chart CRD %s differs from config/crd/bases (run `make manifests`):\n%s", name, d)
				}
			}
		})
	}
}

// TestCRDDifferenceDetectsDrift shows that the comparison above can fail: a
// changed field, an extra annotation or label, and a missing keep
// annotation are all reported.
func TestCRDDifferenceDetectsDrift(t *testing.T) {
	base := baseCRDs(t)
	name := slices.Sorted(maps.Keys(base))[0]
	labels := chartLabels(t)
	chartCopy := func() map[string]any {
		c := runtime.DeepCopyJSON(base[name])
		md := c["metadata"].(map[string]any)
		ls := map[string]any{}
		for k, v := range labels {
			ls[k] = v
		}
		md["labels"] = ls
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann[keepAnnotation] = "keep"
		return c
	}
	if d := crdDifference(chartCopy(), base[name], labels, true); d != "" {
		t.Fatalf("an exact copy plus the chart's additions differs: %s", d)
	}
	drifts := map[string]func(map[string]any){
		"spec field changed": func(c map[string]any) { c["spec"].(map[string]any)["scope"] = "Cluster" },
		"annotation added": func(c map[string]any) {
			c["metadata"].(map[string]any)["annotations"].(map[string]any)["example.com/x"] = "y"
		},
		"label added": func(c map[string]any) {
			c["metadata"].(map[string]any)["labels"].(map[string]any)["example.com/x"] = "y"
		},
		"keep annotation missing": func(c map[string]any) {
			delete(c["metadata"].(map[string]any)["annotations"].(map[string]any), keepAnnotation)
		},
	}
	for what, mutate := range drifts {
		c := chartCopy()
		mutate(c)
		if crdDifference(c, base[name], labels, true) == "" {
			t.Errorf("%s: not detected", what)
		}
	}
}

// managerClusterRole returns the manager ClusterRole the chart renders.
func managerClusterRole(t *testing.T, values string) *rbacv1.ClusterRole {
	t.Helper()
	return one[rbacv1.ClusterRole](t, render(t, values, floorKubeVersion), "ClusterRole", fullname+"-manager")
}

// TestManagerClusterRoleMatchesGeneratedRules fails when the chart's manager
// ClusterRole grants anything other than what the kubebuilder markers
// generated into config/rbac/role.yaml.
func TestManagerClusterRoleMatchesGeneratedRules(t *testing.T) {
	var generated rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(readYAMLFile(t, "../../config/rbac/role.yaml"), &generated); err != nil {
		t.Fatal(err)
	}
	if len(generated.Rules) == 0 {
		t.Fatal("config/rbac/role.yaml has no rules")
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			got := managerClusterRole(t, vs.values)
			if !reflect.DeepEqual(got.Rules, generated.Rules) {
				t.Errorf("chart manager rules differ from config/rbac/role.yaml (run `make manifests`):\n%s",
					diff.Diff(generated.Rules, got.Rules))
			}
		})
	}
}

// TestSecretsAreReadOnlyByName checks that no role the chart renders lets
// the manager list or watch Secrets: it reads the Secrets McpServers
// reference, one by name, and nothing else. The gateway alone may also
// create and update Secrets, by name, for people's authorizations of
// per-person servers (ADR 056); it never lists, watches or deletes them.
func TestSecretsAreReadOnlyByName(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := render(t, vs.values, floorKubeVersion)
			var roles []*rbacv1.ClusterRole
			for _, u := range byKind(objs, "ClusterRole") {
				roles = append(roles, convert[rbacv1.ClusterRole](t, u))
			}
			for _, u := range byKind(objs, "Role") {
				r := convert[rbacv1.Role](t, u)
				roles = append(roles, &rbacv1.ClusterRole{ObjectMeta: r.ObjectMeta, Rules: r.Rules})
			}
			var getsSecrets bool
			for _, r := range roles {
				for _, rule := range r.Rules {
					if !coversSecrets(rule) {
						continue
					}
					allowed := []string{"get"}
					if r.Name == fullname+"-gateway" {
						allowed = []string{"get", "create", "update"}
					}
					if slices.ContainsFunc(rule.Verbs, func(v string) bool { return !slices.Contains(allowed, v) }) {
						t.Errorf("%s grants %v on Secrets; only %v is allowed", r.Name, rule.Verbs, allowed)
					}
					getsSecrets = getsSecrets || r.Name == fullname+"-manager"
				}
			}
			if !getsSecrets {
				t.Error("the manager ClusterRole does not grant get on Secrets; credential resolution needs it")
			}
		})
	}
}

// coversSecrets reports whether a rule applies to core Secrets, directly or
// through a wildcard.
func coversSecrets(r rbacv1.PolicyRule) bool {
	core := slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")
	res := slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")
	return core && res
}

func TestCoversSecrets(t *testing.T) {
	for _, c := range []struct {
		rule rbacv1.PolicyRule
		want bool
	}{
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}}, true},
		{rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}}, true},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}}, false},
		{rbacv1.PolicyRule{APIGroups: []string{"mcp.catalog.dev"}, Resources: []string{"secrets"}}, false},
	} {
		if got := coversSecrets(c.rule); got != c.want {
			t.Errorf("coversSecrets(%+v) = %v, want %v", c.rule, got, c.want)
		}
	}
}
