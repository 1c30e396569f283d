// Package testrepo finds the holdfast repository around the tests of every Go module in
// clients/go, for the files they share with the other clients (clients/conformance) and the
// scripts that start real servers (test/support).
package testrepo

import (
	"os"
	"path/filepath"
	"testing"
)

// Root is the nearest folder above the test's working directory (its package's folder) that
// holds clients/conformance.
func Root(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for start := dir; ; dir = filepath.Dir(dir) {
		if info, err := os.Stat(filepath.Join(dir, "clients", "conformance")); err == nil && info.IsDir() {
			return dir
		}
		if dir == filepath.Dir(dir) {
			t.Fatalf("no holdfast repository (a folder with clients/conformance) above %s", start)
		}
	}
}
