// Package release tests `make release` end to end: it checks each artifact
// of a release the way its consumer would — the image by opening its bytes
// (not through the library that wrote it), install.yaml against a real API
// server, the krew manifest against the archives it names.
//
// `make test` builds the release before `go test` runs (cross-platform
// builds, more than a test should spend of go test's time on a machine with
// an empty build cache) and names it in RELEASE_DIST, with the version, image
// repository and plugin platforms it was built with in RELEASE_VERSION,
// RELEASE_IMAGE_REPO and RELEASE_CLI_PLATFORMS. Without RELEASE_DIST the test
// builds a release itself with hack/release.sh, for this machine's platform
// only.
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/manifests"
)

// What the release under test was built as: by `make test` (the
// environment says), or by this test.
var (
	version   = envOr("RELEASE_VERSION", "v0.0.0-releasetest.1")
	imageRepo = envOr("RELEASE_IMAGE_REPO", "registry.example.test/mcp-catalog-operator")
	// prebuilt is the release make test built, "" when the test builds one.
	prebuilt = os.Getenv("RELEASE_DIST")
	// everyCLIPlatform is what every release ships the plugin for.
	everyCLIPlatform = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}
	// cliPlatforms and imagePlatforms are those of the release under test:
	// what make test built it for, or, for a release this test builds, this
	// machine's alone.
	cliPlatforms   = strings.Fields(envOr("RELEASE_CLI_PLATFORMS", strings.Join(everyCLIPlatform, " ")))
	imagePlatforms = []string{"linux/amd64", "linux/arm64"}
)

func init() {
	if prebuilt == "" {
		cliPlatforms = []string{runtime.GOOS + "/" + runtime.GOARCH}
		imagePlatforms = []string{"linux/" + runtime.GOARCH}
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runRelease runs hack/release.sh with a changelog of the test's choosing and
// returns its combined output and error.
func runRelease(t *testing.T, dist, changelog string) (string, error) {
	t.Helper()
	cl := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(cl, []byte(changelog), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(repoRoot(t), "hack", "release.sh"))
	cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "CHANGELOG="+cl, "IMAGE_REPO="+imageRepo,
		"CLI_PLATFORMS="+strings.Join(cliPlatforms, " "), "IMAGE_PLATFORMS="+strings.Join(imagePlatforms, " "))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestEveryReleaseShipsThePluginForSixPlatforms checks the platforms a
// release builds when nobody narrows them, as `make release` does: the
// release make test checks may hold fewer (see the Makefile).
func TestEveryReleaseShipsThePluginForSixPlatforms(t *testing.T) {
	out, err := exec.Command(filepath.Join(repoRoot(t), "hack", "release.sh"), "--platforms").CombinedOutput()
	if err != nil {
		t.Fatalf("hack/release.sh --platforms: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, everyCLIPlatform) {
		t.Errorf("a release builds the plugin for %v, want %v", got, everyCLIPlatform)
	}
	for _, p := range cliPlatforms {
		if !slices.Contains(everyCLIPlatform, p) {
			t.Errorf("the release under test has %s, which no release ships", p)
		}
	}
}

func TestReleaseRefusesWithoutAChangelogEntry(t *testing.T) {
	dist := t.TempDir()
	out, err := runRelease(t, dist, "# Changelog\n\n## v0.0.0-other\n")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("want exit code 2, got %v; output:\n%s", err, out)
	}
	if !strings.Contains(out, "no entry for "+version) {
		t.Errorf("the refusal does not say what is missing:\n%s", out)
	}
	entries, _ := os.ReadDir(dist)
	if len(entries) != 0 {
		t.Errorf("a refused release wrote %d entries into the dist directory", len(entries))
	}
}

// TestRelease checks every artifact of one release: the one make test
// built, or one it builds.
func TestRelease(t *testing.T) {
	dist := prebuilt
	if dist == "" {
		if testing.Short() {
			t.Skip("builds a whole release")
		}
		dist = t.TempDir()
		t.Logf("building a release for %s with hack/release.sh (make test builds and checks every platform)", cliPlatforms[0])
		if out, err := runRelease(t, dist, "# Changelog\n\n## "+version+"\n\nA test release.\n"); err != nil {
			t.Fatalf("hack/release.sh: %v\n%s", err, out)
		}
	}
	t.Run("image", func(t *testing.T) { checkImage(t, dist) })
	digest := imageIndexDigest(t, filepath.Join(dist, "image"))
	t.Run("install.yaml pins the image and a real API server accepts it", func(t *testing.T) { checkInstallYAML(t, dist, digest) })
	t.Run("chart pins the image digest", func(t *testing.T) { checkChart(t, dist, digest) })
	t.Run("krew manifest names every archive with its real digest", func(t *testing.T) { checkKrew(t, dist) })
	t.Run("checksums.txt matches the files", func(t *testing.T) { checkChecksums(t, dist) })
	t.Run("the plugin archives hold a stamped kubectl-mcp", func(t *testing.T) { checkCLIArchive(t, dist) })
}

// --- the image, read as plain OCI layout bytes ---

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type index struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// blob reads a blob and checks that its bytes have the digest it is named by.
func blob(t *testing.T, layout string, d descriptor) []byte {
	t.Helper()
	algo, hexDigest, ok := strings.Cut(d.Digest, ":")
	if !ok || algo != "sha256" {
		t.Fatalf("unexpected digest %q", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(layout, "blobs", "sha256", hexDigest))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexDigest {
		t.Fatalf("blob %s does not hash to its name", d.Digest)
	}
	if d.Size != 0 && int64(len(b)) != d.Size {
		t.Fatalf("blob %s is %d bytes, its descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func imageIndexDigest(t *testing.T, layout string) string {
	t.Helper()
	top := decode[index](t, readFile(t, filepath.Join(layout, "index.json")))
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json lists %d entries, want the one image index", len(top.Manifests))
	}
	return top.Manifests[0].Digest
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkImage(t *testing.T, dist string) {
	layout := filepath.Join(dist, "image")
	if got := string(readFile(t, filepath.Join(layout, "oci-layout"))); !strings.Contains(got, `"imageLayoutVersion"`) {
		t.Fatalf("oci-layout: %s", got)
	}
	top := decode[index](t, readFile(t, filepath.Join(layout, "index.json")))
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("index.json: want one OCI image index, got %+v", top.Manifests)
	}
	if ref := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; ref != version {
		t.Errorf("image index is tagged %q, want %q", ref, version)
	}
	idx := decode[index](t, blob(t, layout, top.Manifests[0]))
	var platforms []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s has no platform", m.Digest)
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, p)
		t.Run(p, func(t *testing.T) { checkPlatformImage(t, layout, m, dist) })
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, imagePlatforms) {
		t.Errorf("platforms %v, want %v", platforms, imagePlatforms)
	}
	// The tar archive is the same layout.
	archive := filepath.Join(dist, "mcp-catalog-operator_"+version+".oci.tar")
	files := tarFiles(t, archive, false)
	if !bytes.Equal(files["index.json"], readFile(t, filepath.Join(layout, "index.json"))) {
		t.Errorf("%s does not hold the layout's index.json", filepath.Base(archive))
	}
}

func checkPlatformImage(t *testing.T, layout string, d descriptor, dist string) {
	m := decode[manifest](t, blob(t, layout, d))
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type %q", m.MediaType)
	}
	cfg := decode[imageConfig](t, blob(t, layout, m.Config))
	if cfg.OS+"/"+cfg.Architecture != d.Platform.OS+"/"+d.Platform.Architecture {
		t.Errorf("config says %s/%s, the index says %s/%s", cfg.OS, cfg.Architecture, d.Platform.OS, d.Platform.Architecture)
	}
	// Kubernetes' runAsNonRoot can only verify a numeric user.
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.Config.User)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/manager"}) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/manager] and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != version {
		t.Errorf("version label %q", cfg.Config.Labels["org.opencontainers.image.version"])
	}

	files := map[string][]byte{}
	for _, l := range m.Layers {
		for name, b := range tarFilesFrom(t, bytes.NewReader(blob(t, layout, l)), true) {
			files[name] = b
		}
	}
	for name := range files {
		base := path.Base(name)
		if slices.Contains([]string{"sh", "bash", "ash", "dash", "busybox"}, base) || strings.HasPrefix(name, "bin/") {
			t.Errorf("the image holds %s; it must have no shell", name)
		}
	}
	if !strings.Contains(string(files["etc/passwd"]), ":65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", files["etc/passwd"])
	}
	if len(files["etc/ssl/certs/ca-certificates.crt"]) == 0 {
		t.Error("no CA certificates")
	}
	sbom := decode[struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name string `json:"name"`
		} `json:"packages"`
	}](t, files["usr/share/sbom/manager.spdx.json"])
	var names []string
	for _, p := range sbom.Packages {
		names = append(names, p.Name)
	}
	if sbom.SPDXVersion != "SPDX-2.3" || !slices.Contains(names, "sigs.k8s.io/controller-runtime") ||
		!slices.Contains(names, "github.com/mcp-catalog/operator") {
		t.Errorf("the SBOM does not describe the manager's modules: %s, %v", sbom.SPDXVersion, names)
	}
	outside := readFile(t, filepath.Join(dist, "sbom", fmt.Sprintf("manager_%s_%s.spdx.json", cfg.OS, cfg.Architecture)))
	if !bytes.Equal(outside, files["usr/share/sbom/manager.spdx.json"]) {
		t.Error("the SBOM beside the image differs from the one inside it")
	}

	bin := files["manager"]
	if len(bin) == 0 {
		t.Fatal("no /manager in the image")
	}
	if cfg.Architecture != runtime.GOARCH || cfg.OS != runtime.GOOS {
		return
	}
	// Run the binary taken out of the image.
	exe := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("manager --version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), version) {
		t.Errorf("manager --version printed %q, want %s in it", out, version)
	}
}

func tarFiles(t *testing.T, p string, gz bool) map[string][]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return tarFilesFrom(t, f, gz)
}

func tarFilesFrom(t *testing.T, r io.Reader, gz bool) map[string][]byte {
	t.Helper()
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	tr := tar.NewReader(r)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "/")
		if h.Typeflag != tar.TypeReg {
			files[name+"/"] = nil
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
}

// --- install.yaml ---

func checkInstallYAML(t *testing.T, dist, digest string) {
	raw := readFile(t, filepath.Join(dist, "install.yaml"))
	if !strings.Contains(string(raw), "image: "+imageRepo+"@"+digest) {
		t.Fatalf("install.yaml does not pin %s@%s", imageRepo, digest)
	}
	objs, err := manifests.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	kinds := manifests.Kinds(objs)
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"} {
		if kinds[k] == 0 {
			t.Errorf("install.yaml has no %s (kinds: %v)", k, kinds)
		}
	}
	// Bare: install.yaml brings the CRDs.
	plane := controlplane.Start(t, controlplane.Bare())
	cfg, c := plane.Config, plane.Client
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, err := range manifests.Apply(ctx, cfg, c, objs, "", "mcp-catalog-release-test") {
		t.Error(err)
	}
}

// --- chart ---

func checkChart(t *testing.T, dist, digest string) {
	semver := strings.TrimPrefix(version, "v")
	files := tarFiles(t, filepath.Join(dist, "mcp-catalog-operator-"+semver+".tgz"), true)
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["mcp-catalog-operator/Chart.yaml"], &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != semver || chart.AppVersion != version {
		t.Errorf("chart version %q appVersion %q, want %q and %q", chart.Version, chart.AppVersion, semver, version)
	}
	var values struct {
		Image struct {
			Digest string `json:"digest"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(files["mcp-catalog-operator/values.yaml"], &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Digest != digest {
		t.Errorf("the packaged chart's image.digest is %q, want %q", values.Image.Digest, digest)
	}
}

// --- krew and checksums ---

func sha256File(t *testing.T, p string) string {
	t.Helper()
	sum := sha256.Sum256(readFile(t, p))
	return hex.EncodeToString(sum[:])
}

func checkKrew(t *testing.T, dist string) {
	var plugin struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(dist, "krew", "mcp.yaml")), &plugin); err != nil {
		t.Fatal(err)
	}
	if plugin.Spec.Version != version {
		t.Errorf("krew version %q, want %q", plugin.Spec.Version, version)
	}
	var seen []string
	for _, p := range plugin.Spec.Platforms {
		osName, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		seen = append(seen, osName+"/"+arch)
		archive := filepath.Join(dist, path.Base(p.URI))
		if !strings.Contains(p.URI, "/"+version+"/") {
			t.Errorf("%s/%s: URI %s does not name the version", osName, arch, p.URI)
		}
		if got := sha256File(t, archive); got != p.SHA256 {
			t.Errorf("%s/%s: manifest sha256 %s, archive %s", osName, arch, p.SHA256, got)
		}
		wantBin := "kubectl-mcp"
		if osName == "windows" {
			wantBin += ".exe"
		}
		if p.Bin != wantBin {
			t.Errorf("%s/%s: bin %q, want %q", osName, arch, p.Bin, wantBin)
		}
		if !archiveHolds(t, archive, wantBin) {
			t.Errorf("%s does not hold %s", filepath.Base(archive), wantBin)
		}
	}
	slices.Sort(seen)
	want := slices.Clone(cliPlatforms)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("krew platforms %v, want %v", seen, want)
	}
}

func archiveHolds(t *testing.T, archive, name string) bool {
	t.Helper()
	if strings.HasSuffix(archive, ".zip") {
		zr, err := zip.OpenReader(archive)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			if f.Name == name {
				return true
			}
		}
		return false
	}
	_, ok := tarFiles(t, archive, true)[name]
	return ok
}

func checkChecksums(t *testing.T, dist string) {
	lines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dist, "checksums.txt")))), "\n")
	listed := map[string]bool{}
	for _, l := range lines {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q", l)
		}
		listed[name] = true
		if got := sha256File(t, filepath.Join(dist, name)); got != sum {
			t.Errorf("%s: listed %s, file %s", name, sum, got)
		}
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && e.Name() != "checksums.txt" && !listed[e.Name()] {
			t.Errorf("%s is not in checksums.txt", e.Name())
		}
	}
}

func checkCLIArchive(t *testing.T, dist string) {
	name := fmt.Sprintf("kubectl-mcp_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	files := tarFiles(t, filepath.Join(dist, name), true)
	exe := filepath.Join(t.TempDir(), "kubectl-mcp")
	if err := os.WriteFile(exe, files["kubectl-mcp"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl-mcp version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), version) {
		t.Errorf("kubectl-mcp version printed %q, want %s in it", out, version)
	}
}
