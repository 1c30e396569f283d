// Command modproxy writes one version of a Go module in the layout a GOPROXY serves (and a
// file:// GOPROXY reads): <proxy>/<escaped module path>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}.
// The zip is made by golang.org/x/mod/zip, which applies the go command's rules for module zips
// (no nested modules, no vendored packages, no symbolic links, checked names and sizes).
//
//	git ls-files -z -- . | modproxy -dir . -version v0.1.0 -time 2026-11-27T15:00:00Z -proxy OUT/goproxy -zip OUT/name.zip
//
// It reads the module's files from standard input (NUL-separated paths relative to -dir, as
// `git ls-files -z` prints them): a release holds the files version control tracks, never what
// a build or a test left behind. A listed file missing from the folder (deleted, not yet
// committed) is left out. It prints the go.sum line of the zip.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", ".", "the module's folder (holding its go.mod)")
	version := flag.String("version", "", "the version to write, e.g. v0.1.0")
	stamp := flag.String("time", "", "the version's time (RFC 3339), e.g. its commit's")
	proxy := flag.String("proxy", "", "the GOPROXY folder to write into")
	flat := flag.String("zip", "", "also copy the module zip to this file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("modproxy: ")
	if *version == "" || *proxy == "" || *stamp == "" {
		log.Fatal("-version, -time and -proxy are required")
	}
	when, err := time.Parse(time.RFC3339, *stamp)
	if err != nil {
		log.Fatalf("-time %q: %v", *stamp, err)
	}
	paths, err := readPaths(os.Stdin)
	if err != nil {
		log.Fatalf("reading the file list: %v", err)
	}
	line, err := write(*dir, paths, *version, when.UTC(), *proxy, *flat)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(line)
}

// readPaths splits NUL-separated paths.
func readPaths(r io.Reader) ([]string, error) {
	var paths []string
	scanner := bufio.NewScanner(r)
	scanner.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for scanner.Scan() {
		paths = append(paths, scanner.Text())
	}
	return paths, scanner.Err()
}

// write writes the module version into the proxy folder and returns its go.sum line.
func write(dir string, paths []string, version string, when time.Time, proxy, flat string) (string, error) {
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	m := module.Version{Path: modfile.ModulePath(goMod), Version: version}
	if m.Path == "" {
		return "", fmt.Errorf("%s/go.mod names no module", dir)
	}
	if err := module.Check(m.Path, m.Version); err != nil {
		return "", err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	files, err := listed(dir, paths)
	if err != nil {
		return "", err
	}
	at := filepath.Join(proxy, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", err
	}
	zipPath := filepath.Join(at, escVersion+".zip")
	if err := createZip(zipPath, m, files); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, when})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(at, escVersion+".info"), info, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(at, escVersion+".mod"), goMod, 0o644); err != nil {
		return "", err
	}
	if err := addToList(filepath.Join(at, "list"), m.Version); err != nil {
		return "", err
	}
	if flat != "" {
		if err := copyFile(zipPath, flat); err != nil {
			return "", err
		}
	}
	hash, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s", m.Path, m.Version, hash), nil
}

// listed is the module's files named in paths; zip.Create leaves out those the go command would.
func listed(dir string, paths []string) ([]zip.File, error) {
	var files []zip.File
	for _, p := range paths {
		info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, file{dir: dir, path: p, info: info})
	}
	if !slices.ContainsFunc(files, func(f zip.File) bool { return f.Path() == "go.mod" }) {
		return nil, fmt.Errorf("the file list for %s has no go.mod", dir)
	}
	return files, nil
}

func createZip(name string, m module.Version, files []zip.File) error {
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := zip.Create(out, m, files); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// addToList adds version to a proxy's list file (one version a line) unless it is there.
func addToList(name, version string) error {
	raw, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(raw))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func copyFile(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, raw, 0o644)
}

// file is one of the module's files, at a slash-separated path relative to the module's folder.
type file struct {
	dir, path string
	info      fs.FileInfo
}

func (f file) Path() string                { return f.path }
func (f file) Lstat() (fs.FileInfo, error) { return f.info, nil }
func (f file) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.dir, filepath.FromSlash(f.path)))
}
