package upgrade

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// removedSinceV010 are the fields of v0.1.0's CRDs the current ones no
// longer have, each with where its migration is written down. Anything
// else v0.1.0 stored must still be there, with its type.
var removedSinceV010 = map[string]string{
	"McpTool status.enabledDefinitionHash": "docs/adr/013-tool-lifetime.md; docs/upgrading.md pins it into spec.approvedDefinitionHash before the upgrade",
}

// TestCRDsAdditiveSinceV010 checks, from the CRDs alone, that every object
// v0.1.0 could store is one the current API stores and reads the same way:
// the same kinds, in the same group, with the same storage version, and
// every field v0.1.0's schema had is in the current schema with the same
// type and format (besides the removals written down above). Validation
// that changed is not compared here: an object stored before a tightening
// stays readable, and the API server's validation ratcheting lets it be
// updated as long as the offending field is left as it is.
func TestCRDsAdditiveSinceV010(t *testing.T) {
	commit := v010(t)
	out, err := git(t, "ls-tree", "--name-only", commit, "config/crd/bases/")
	if err != nil {
		t.Fatalf("listing v0.1.0's CRDs (needs the git history): %v", err)
	}
	var kinds []string
	seenRemoved := map[string]bool{}
	for _, path := range strings.Fields(out) {
		old := decodeCRD(t, path, gitShow(t, commit, path))
		kinds = append(kinds, old.Spec.Names.Kind)
		b, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Errorf("v0.1.0's CRD %s has no current counterpart: %v", path, err)
			continue
		}
		cur := decodeCRD(t, path, b)
		if cur.Spec.Group != old.Spec.Group || cur.Spec.Names.Kind != old.Spec.Names.Kind || cur.Spec.Names.Plural != old.Spec.Names.Plural ||
			cur.Spec.Scope != old.Spec.Scope {
			t.Errorf("%s: group, kind, plural or scope changed: %s %s %s %s, v0.1.0 had %s %s %s %s", path,
				cur.Spec.Group, cur.Spec.Names.Kind, cur.Spec.Names.Plural, cur.Spec.Scope,
				old.Spec.Group, old.Spec.Names.Kind, old.Spec.Names.Plural, old.Spec.Scope)
		}
		ov, cv := storageVersion(old), storageVersion(cur)
		if ov == nil || cv == nil || ov.Name != cv.Name {
			t.Errorf("%s: the storage version changed (v0.1.0 %v, now %v) with no conversion written down", path, ov, cv)
			continue
		}
		var missing []string
		compareSchema(old.Spec.Names.Kind, "", ov.Schema.OpenAPIV3Schema, cv.Schema.OpenAPIV3Schema, &missing)
		for _, m := range missing {
			if _, ok := removedSinceV010[m]; ok {
				seenRemoved[m] = true
				continue
			}
			if !strings.Contains(m, ":") {
				m += ": in v0.1.0's CRD and not in the current one; keep it, or write its migration down in removedSinceV010 and docs/upgrading.md"
			}
			t.Errorf("%s", m)
		}
	}
	if want := v010Kinds; !slices.Equal(slices.Sorted(slices.Values(kinds)), want) {
		t.Errorf("v0.1.0's CRDs are of %v, want %v (the kinds the upgrade test names)", kinds, want)
	}
	for m, why := range removedSinceV010 {
		if !seenRemoved[m] {
			t.Errorf("%q is listed as removed since v0.1.0 (%s), but it is not: drop it from the list", m, why)
		}
	}
}

func decodeCRD(t *testing.T, path string, b []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// compareSchema appends to out every field of old that cur lacks or
// types differently, as "<Kind> <path>: ..." (a field cur lacks is
// reported as "<Kind> <path>" alone, the key of removedSinceV010).
func compareSchema(kind, path string, old, cur *apiextensionsv1.JSONSchemaProps, out *[]string) {
	if old == nil {
		return
	}
	if cur == nil {
		*out = append(*out, kind+" "+path)
		return
	}
	where := path
	if where == "" {
		where = "(root)"
	}
	if old.Type != cur.Type || old.Format != cur.Format {
		*out = append(*out, fmt.Sprintf("%s %s: type %q format %q, v0.1.0 had type %q format %q", kind, where, cur.Type, cur.Format, old.Type, old.Format))
	}
	if old.XPreserveUnknownFields != nil && *old.XPreserveUnknownFields && (cur.XPreserveUnknownFields == nil || !*cur.XPreserveUnknownFields) {
		*out = append(*out, fmt.Sprintf("%s %s: no longer keeps unknown fields, which v0.1.0 stored", kind, where))
	}
	if old.XIntOrString != cur.XIntOrString || old.XEmbeddedResource != cur.XEmbeddedResource {
		*out = append(*out, fmt.Sprintf("%s %s: int-or-string or embedded-resource changed", kind, where))
	}
	for _, name := range slices.Sorted(maps.Keys(old.Properties)) {
		o := old.Properties[name]
		c, ok := cur.Properties[name]
		p := strings.TrimPrefix(path+"."+name, ".")
		if !ok {
			*out = append(*out, kind+" "+p)
			continue
		}
		compareSchema(kind, p, &o, &c, out)
	}
	if old.Items != nil && old.Items.Schema != nil {
		var c *apiextensionsv1.JSONSchemaProps
		if cur.Items != nil {
			c = cur.Items.Schema
		}
		compareSchema(kind, path+"[]", old.Items.Schema, c, out)
	}
	if old.AdditionalProperties != nil && old.AdditionalProperties.Schema != nil {
		var c *apiextensionsv1.JSONSchemaProps
		if cur.AdditionalProperties != nil {
			c = cur.AdditionalProperties.Schema
		}
		compareSchema(kind, path+"{}", old.AdditionalProperties.Schema, c, out)
	}
}
