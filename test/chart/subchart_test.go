package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAsSubchart installs the chart the way an umbrella chart does: copied
// under a parent's charts/, with the parent's `global` values passed down
// (Helm gives every subchart the parent's `global`, whether or not it reads
// it) and the chart's own values under its name.
func TestAsSubchart(t *testing.T) {
	parent := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(parent, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n"+
		"  - name: mcp-catalog-operator\n    version: \""+chartMeta(t).Version+"\"\n    repository: file://charts/mcp-catalog-operator\n")
	write("values.yaml", `global:
  imageRegistry: registry.example.test
  labels: {team: platform}
mcp-catalog-operator:
  watchNamespaces: [team-a]
`)
	copyDir(t, chartDir, filepath.Join(parent, "charts", "mcp-catalog-operator"))

	for _, args := range [][]string{
		{"lint", parent, "--namespace", releaseNS, "--kube-version", floorKubeVersion},
		{"template", releaseName, parent, "--namespace", releaseNS, "--kube-version", floorKubeVersion},
	} {
		out, stderr, err := helm(t, args...)
		if err != nil {
			t.Fatalf("helm %s of a parent chart: %v\n%s%s", args[0], err, out, stderr)
		}
		if args[0] != "template" {
			continue
		}
		objs := parseManifests(t, out)
		_, c := manager(t, objs)
		if !strings.Contains(strings.Join(c.Args, " "), "team-a") {
			t.Errorf("the parent's values for the subchart did not reach the manager: %v", c.Args)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
