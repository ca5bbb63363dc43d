package upgrade

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	repoRoot = "../.."
	// v010Commit is the commit whose CHANGELOG first names v0.1.0, the
	// first release. The test finds it from the history and checks it
	// against this, so that a rewritten CHANGELOG history is noticed
	// rather than silently compared against another commit.
	v010Commit = "ca030ed5e4d909be9e940522c803382855805734"
	// chartPath is where the chart lives in every version of the tree.
	chartPath = "charts/mcp-catalog-operator"
)

// v010 returns the commit that released v0.1.0, failing (never skipping)
// when the history is not there: CI runs on a full clone, and a shallow
// one must say what it lacks.
func v010(t *testing.T) string {
	t.Helper()
	const need = "the upgrade test needs the git history back to the v0.1.0 release (a full clone, or `git fetch --unshallow`)"
	shallow, err := git(t, "rev-parse", "--is-shallow-repository")
	if err != nil {
		t.Fatalf("%s: %v", need, err)
	}
	if strings.TrimSpace(shallow) != "false" {
		t.Fatalf("this checkout is a shallow clone: %s", need)
	}
	out, err := git(t, "log", "--reverse", "-S## v0.1.0", "--format=%H", "--", "CHANGELOG.md")
	if err != nil {
		t.Fatalf("%s: %v", need, err)
	}
	commit, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if commit == "" {
		t.Fatalf("no commit in this checkout's history adds \"## v0.1.0\" to CHANGELOG.md: %s", need)
	}
	if commit != v010Commit {
		t.Fatalf("the commit that first names v0.1.0 in CHANGELOG.md is %s, want %s: the history was rewritten, or "+
			"the release is another commit now; check which one v0.1.0 was built from and update v010Commit", commit, v010Commit)
	}
	return commit
}

// git runs git in the repository and returns its standard output.
func git(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = repoRoot
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// gitShow returns a file as it was at commit.
func gitShow(t *testing.T, commit, path string) []byte {
	t.Helper()
	out, err := git(t, "show", commit+":"+path)
	if err != nil {
		t.Fatalf("reading %s at v0.1.0 (needs the git history): %v", path, err)
	}
	return []byte(out)
}

// extract writes the tree of commit into dir, as a release's source
// archive holds it.
func extract(t *testing.T, commit, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	cmd.Dir = repoRoot
	var archive, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &archive, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("git archive %s (needs the git history): %v: %s", commit, err, errOut.String())
	}
	if err := untar(&archive, dir); err != nil {
		t.Fatalf("extracting v0.1.0: %v", err)
	}
}

// untar writes the regular files and directories of a tar stream under
// dir; git archive writes nothing else that a build needs.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// managers are the two versions' manager binaries.
type managers struct {
	old, current string
}

// startBuilds builds v0.1.0's manager from its tree and this tree's
// manager, one after the other in the background (two go builds at once
// would only share the same cores), and returns a function that waits
// for both. v0.1.0's build uses the module cache like any other: its
// dependencies are a subset of this tree's, so a warm cache has them.
func startBuilds(t *testing.T, oldTree, dir string) func() managers {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := managers{old: filepath.Join(dir, "manager-v0.1.0"), current: filepath.Join(dir, "manager-current")}
	done := make(chan error, 1)
	var log bytes.Buffer
	var took [2]time.Duration
	go func() {
		for i, b := range []struct{ tree, out string }{{oldTree, m.old}, {repoRoot, m.current}} {
			start := time.Now()
			cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, "./cmd/manager")
			cmd.Dir = b.tree
			// The extracted tree is no git checkout, and the build must
			// not look for one above it.
			cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"), "GOWORK=off")
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Run(); err != nil {
				done <- fmt.Errorf("go build ./cmd/manager in %s: %w\n%s", b.tree, err, log.String())
				return
			}
			took[i] = time.Since(start)
		}
		done <- nil
	}()
	var result error
	waited := false
	wait := func() error {
		if !waited {
			result, waited = <-done, true
		}
		return result
	}
	t.Cleanup(func() {
		cancel()
		_ = wait()
	})
	return func() managers {
		t.Helper()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		t.Logf("built v0.1.0's manager in %s and the current one in %s",
			took[0].Round(100*time.Millisecond), took[1].Round(100*time.Millisecond))
		return m
	}
}
