// Command ociimage builds the operator's container image without a container
// engine: one static binary per platform on an otherwise empty filesystem
// (a passwd entry for the non-root user, CA certificates, an SBOM), written
// as a multi-platform OCI image layout and, optionally, as a tar archive of
// that layout (the oci-archive format skopeo, podman, crane and containerd
// import).
//
// It prints the image index digest on stdout, so a release can pin
// manifests to it.
package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user distroless images call nonroot; Kubernetes' runAsNonRoot needs a
// numeric user in the image config to verify it.
const (
	nonRootUID = 65532
	entrypoint = "/manager"
	sbomPath   = "usr/share/sbom/manager.spdx.json"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
)

type binaries map[string]string // "linux/amd64" -> path

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binaries) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok || strings.Count(platform, "/") != 1 || path == "" {
		return fmt.Errorf("want os/arch=path, got %q", v)
	}
	b[platform] = path
	return nil
}

type options struct {
	out, archive, version, revision, source, ca, sbomDir string
	created                                              time.Time
	bins                                                 binaries
}

func main() {
	o := options{bins: binaries{}}
	var created string
	flag.StringVar(&o.out, "out", "", "directory to write the OCI image layout to (replaced)")
	flag.StringVar(&o.archive, "archive", "", "also write the layout as this tar file (optional)")
	flag.StringVar(&o.sbomDir, "sbom-dir", "", "also write each platform's SBOM into this directory (optional)")
	flag.StringVar(&o.version, "version", "", "version the image is labelled and tagged with (required)")
	flag.StringVar(&o.revision, "revision", "", "source revision (git commit) for the image label")
	flag.StringVar(&o.source, "source", "https://github.com/mcp-catalog/operator", "source repository for the image label")
	flag.StringVar(&o.ca, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to ship at /"+caPath)
	flag.StringVar(&created, "created", "", "creation time, RFC 3339 (default: the Unix epoch, for reproducible images)")
	flag.Var(o.bins, "binary", "os/arch=path of the manager binary for that platform; repeat per platform")
	flag.Parse()
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			fail(fmt.Errorf("-created: %w", err))
		}
		o.created = t.UTC()
	} else {
		o.created = time.Unix(0, 0).UTC()
	}
	if o.out == "" || o.version == "" || len(o.bins) == 0 {
		fail(errors.New("-out, -version and at least one -binary are required"))
	}
	digest, err := build(o)
	if err != nil {
		fail(err)
	}
	fmt.Println(digest)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ociimage:", err)
	os.Exit(1)
}

func build(o options) (string, error) {
	ca, err := os.ReadFile(o.ca)
	if err != nil {
		return "", fmt.Errorf("reading the CA bundle: %w", err)
	}
	platforms := make([]string, 0, len(o.bins))
	for p := range o.bins {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		osName, arch, _ := strings.Cut(p, "/")
		img, sbom, err := platformImage(o, osName, arch, o.bins[p], ca)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		if o.sbomDir != "" {
			if err := os.MkdirAll(o.sbomDir, 0o755); err != nil {
				return "", err
			}
			name := fmt.Sprintf("manager_%s_%s.spdx.json", osName, arch)
			if err := os.WriteFile(filepath.Join(o.sbomDir, name), sbom, 0o644); err != nil {
				return "", err
			}
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}

	if err := os.RemoveAll(o.out); err != nil {
		return "", err
	}
	lp, err := layout.Write(o.out, empty.Index)
	if err != nil {
		return "", fmt.Errorf("writing the layout: %w", err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.version,
	})); err != nil {
		return "", fmt.Errorf("writing the image index: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	if o.archive != "" {
		if err := archiveDir(o.out, o.archive, o.created); err != nil {
			return "", fmt.Errorf("writing the archive: %w", err)
		}
	}
	return digest.String(), nil
}

func platformImage(o options, osName, arch, binPath string, ca []byte) (v1.Image, []byte, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, nil, err
	}
	sbom, err := spdx(binPath, o, osName, arch)
	if err != nil {
		return nil, nil, fmt.Errorf("SBOM: %w", err)
	}
	fsTar, err := rootfs(bin, ca, sbom, o.created)
	if err != nil {
		return nil, nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(fsTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: o.created},
			CreatedBy: "ociimage: static manager binary, passwd, CA certificates, SBOM",
		},
	})
	if err != nil {
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = osName, arch
	cf.Created = v1.Time{Time: o.created}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonRootUID, nonRootUID),
		Entrypoint: []string{entrypoint},
		WorkingDir: "/",
		Env:        []string{"SSL_CERT_FILE=/" + caPath},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "mcp-catalog-operator",
			"org.opencontainers.image.version":  o.version,
			"org.opencontainers.image.revision": o.revision,
			"org.opencontainers.image.source":   o.source,
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, nil, err
	}
	return img, sbom, nil
}

// rootfs is the whole filesystem: no shell, no package manager, nothing the
// manager does not read. /tmp exists for libraries that expect it; with a
// read-only root filesystem the chart mounts an emptyDir there.
func rootfs(bin, ca, sbom []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRootUID, nonRootUID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRootUID)
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl", 0o755, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0) },
		func() error { return file(caPath, 0o644, ca) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, nonRootUID) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/share", 0o755, 0) },
		func() error { return dir("usr/share/sbom", 0o755, 0) },
		func() error { return file(sbomPath, 0o644, sbom) },
		func() error { return file(strings.TrimPrefix(entrypoint, "/"), 0o755, bin) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// spdx describes the binary from its own build information: the main module,
// every linked module with its version, and the Go toolchain, as an SPDX 2.3
// document.
func spdx(binPath string, o options, osName, arch string) ([]byte, error) {
	info, err := buildinfo.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	type ref struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	type pkg struct {
		Name             string `json:"name"`
		SPDXID           string `json:"SPDXID"`
		Version          string `json:"versionInfo"`
		Download         string `json:"downloadLocation"`
		FilesAnalyzed    bool   `json:"filesAnalyzed"`
		LicenseConcluded string `json:"licenseConcluded"`
		LicenseDeclared  string `json:"licenseDeclared"`
		Copyright        string `json:"copyrightText"`
		Refs             []ref  `json:"externalRefs,omitempty"`
		Comment          string `json:"comment,omitempty"`
	}
	type rel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
	newPkg := func(id, name, version, comment string) pkg {
		p := pkg{Name: name, SPDXID: id, Version: version, Download: "NOASSERTION",
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", Copyright: "NOASSERTION", Comment: comment}
		if version != "" && version != "(devel)" {
			p.Refs = []ref{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + name + "@" + version}}
		}
		return p
	}
	mainVersion := info.Main.Version
	if mainVersion == "" || mainVersion == "(devel)" {
		mainVersion = o.version
	}
	root := newPkg("SPDXRef-Package-main", info.Main.Path, mainVersion, "the manager binary for "+osName+"/"+arch)
	root.LicenseDeclared = "Apache-2.0"
	pkgs := []pkg{root, newPkg("SPDXRef-Package-go", "go", strings.TrimPrefix(info.GoVersion, "go"), "the Go toolchain and standard library")}
	rels := []rel{
		{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: root.SPDXID},
		{Element: root.SPDXID, Type: "DEPENDS_ON", Related: "SPDXRef-Package-go"},
	}
	for i, d := range info.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		id := fmt.Sprintf("SPDXRef-Package-%d", i+1)
		pkgs = append(pkgs, newPkg(id, m.Path, m.Version, ""))
		rels = append(rels, rel{Element: root.SPDXID, Type: "DEPENDS_ON", Related: id})
	}
	doc := map[string]any{
		"spdxVersion":       "SPDX-2.3",
		"dataLicense":       "CC0-1.0",
		"SPDXID":            "SPDXRef-DOCUMENT",
		"name":              fmt.Sprintf("mcp-catalog-operator-%s-%s-%s", o.version, osName, arch),
		"documentNamespace": fmt.Sprintf("%s/sbom/%s/%s/%s", o.source, o.version, osName, arch),
		"creationInfo": map[string]any{
			"created":  o.created.Format(time.RFC3339),
			"creators": []string{"Tool: mcp-catalog-operator-ociimage"},
		},
		"packages":      pkgs,
		"relationships": rels,
	}
	return json.MarshalIndent(doc, "", "  ")
}

// archiveDir writes dir as a tar file with fixed metadata, so the same layout
// gives the same bytes.
func archiveDir(dir, out string, mtime time.Time) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	return errors.Join(walkErr, tw.Close(), f.Close())
}
