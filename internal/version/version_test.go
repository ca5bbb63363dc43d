package version_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/version"
)

// A test binary is neither stamped nor built from a module version.
func TestUnstampedBuildFallsBack(t *testing.T) {
	if got := version.Get(); got != version.Fallback {
		t.Fatalf("Get() = %q, want %q", got, version.Fallback)
	}
}

// TestBuiltBinariesPrintStampedVersion builds the manager and the plugin
// with `make build`, as a release does, and runs them: the version the
// Makefile stamps is what --version and `kubectl mcp version` print.
func TestBuiltBinariesPrintStampedVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	const stamped = "v9.8.7-stamp.1"
	bin := t.TempDir()
	build := exec.Command("make", "-s", "build", "VERSION="+stamped, "BIN="+bin)
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"manager", "--version"},
		{"kubectl-mcp", "--version"},
		{"kubectl-mcp", "version"},
	} {
		out, err := exec.Command(filepath.Join(bin, args[0]), args[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		if string(out) != stamped+"\n" {
			t.Errorf("%s printed %q, want %q", strings.Join(args, " "), out, stamped+"\n")
		}
	}
}
