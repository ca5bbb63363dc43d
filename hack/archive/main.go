// Command archive packs files into a .tar.gz or .zip with fixed timestamps,
// owners and modes, so a release archive depends only on its contents.
//
//	go run ./hack/archive -o kubectl-mcp_linux_amd64.tar.gz kubectl-mcp=bin/kubectl-mcp README.md=README.md
//
// Each argument is NAME=PATH: the file at PATH is stored as NAME. A name
// starting with "kubectl-mcp" or "kubectl_complete-mcp" is stored executable.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	out := flag.String("o", "", "archive to write; .tar.gz or .zip")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: archive -o OUT.tar.gz|OUT.zip NAME=PATH...")
		os.Exit(2)
	}
	if err := write(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		os.Exit(1)
	}
}

type entry struct{ name, path string }

func write(out string, args []string) (err error) {
	entries := make([]entry, 0, len(args))
	for _, a := range args {
		name, path, ok := strings.Cut(a, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("want NAME=PATH, got %q", a)
		}
		entries = append(entries, entry{name, path})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	switch {
	case strings.HasSuffix(out, ".tar.gz"):
		return writeTarGz(f, entries)
	case strings.HasSuffix(out, ".zip"):
		return writeZip(f, entries)
	default:
		return fmt.Errorf("%s: want a .tar.gz or .zip name", out)
	}
}

// The zip format cannot say 1970; 1980-01-01 is its earliest date.
var mtime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func mode(name string) int64 {
	if strings.HasPrefix(name, "kubectl-mcp") || strings.HasPrefix(name, "kubectl_complete-mcp") {
		return 0o755
	}
	return 0o644
}

func writeTarGz(w io.Writer, entries []entry) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		data, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: mode(e.name),
			Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return errors.Join(tw.Close(), gz.Close())
}

func writeZip(w io.Writer, entries []entry) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		data, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(os.FileMode(mode(e.name)))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}
