// Package layers_test checks the import rules docs/architecture.md states
// for the packages that talk to the outside: which of the operator's
// packages each may depend on, and that none of them depends on
// Kubernetes. The rules hold for what is built: test files are not
// followed.
package layers_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mcp-catalog/operator/"

// deps returns the import path of every package pkg depends on, directly
// or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./"+pkg)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return slices.DeleteFunc(strings.Fields(string(out)), func(p string) bool { return p == module+pkg })
}

func TestLayers(t *testing.T) {
	leaves := []string{"internal/egress", "internal/secret"}
	cases := []struct {
		pkg string
		// only lists every operator package pkg may depend on; nil: any.
		// A package with a list depends on nothing from Kubernetes either.
		only []string
		// not lists operator packages pkg must not depend on.
		not []string
	}{
		// The egress guard with CA trust, and the credential value: leaves.
		{pkg: "internal/egress", only: []string{}},
		{pkg: "internal/secret", only: []string{}},
		// The two clients build on the leaves and never on each other.
		{pkg: "internal/mcp", only: leaves},
		{pkg: "internal/tokenexchange", only: leaves},
		// Resolving credentials needs the token exchange, not the MCP client.
		{pkg: "internal/credentials", not: []string{"internal/mcp"}},
		// The gateway's stages below its wire never import the wire: the
		// record and its words, who calls, what RBAC allows.
		{pkg: "internal/gateway/audit", not: []string{"internal/gateway", "internal/gateway/authn", "internal/gateway/authz"}},
		{pkg: "internal/gateway/authn", not: []string{"internal/gateway", "internal/gateway/authz"}},
		{pkg: "internal/gateway/authz", not: []string{"internal/gateway"}},
		{pkg: "internal/gateway/budget", not: []string{"internal/gateway", "internal/gateway/authz"}},
		{pkg: "internal/gateway/approvals", not: []string{"internal/gateway", "internal/gateway/authn", "internal/gateway/authz"}},
		// People's upstream authorizations are the gateway's to use: they
		// know nothing of who calls or what RBAC allows, nor the MCP client.
		{pkg: "internal/gateway/personauth", not: []string{"internal/gateway", "internal/gateway/authn", "internal/gateway/authz", "internal/mcp"}},
		// The protected resource is the gateway's to call, never the
		// other way round: it stands alone while the gateway changes.
		{pkg: "internal/oauthresource", not: []string{"internal/gateway", "internal/manager"}},
	}
	for _, c := range cases {
		t.Run(c.pkg, func(t *testing.T) {
			for _, dep := range deps(t, c.pkg) {
				rel, own := strings.CutPrefix(dep, module)
				kube := strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, "sigs.k8s.io/")
				switch {
				case own && slices.Contains(c.not, rel):
					t.Errorf("%s depends on %s", c.pkg, rel)
				case c.only == nil:
				case own && !slices.Contains(c.only, rel):
					t.Errorf("%s depends on %s; it may depend only on %v", c.pkg, rel, c.only)
				case kube:
					t.Errorf("%s depends on %s", c.pkg, dep)
				}
			}
		})
	}
}
