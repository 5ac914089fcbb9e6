// Package needs marks the tests that start programs `make tools` or `make build` put in bin/ (etcd, the
// Kubernetes servers, kwok, Temporal, the registry, Flotilla's own binaries). Under -short (`make unit`)
// such a test is skipped, and the skip says what it would have started; otherwise (`make test`) a missing
// program fails it with the command that builds it, so a broken tool build can never pass as a skip.
package needs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BinDir is where the programs are: $FLOTILLA_BIN, or bin/ of this checkout.
func BinDir() string {
	if d := os.Getenv("FLOTILLA_BIN"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "bin")
}

// Binaries skips t under -short and otherwise fails it unless every named program is in BinDir, which it
// returns.
func Binaries(t testing.TB, names ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: starts %v from bin/ (make test runs it)", names)
	}
	dir := BinDir()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("%s missing in %s: run `make tools build` (make test does it)", n, dir)
		}
	}
	return dir
}

// Long skips t under -short: it proves something only a run of many seconds can (a limit reached, a
// timeout passed), and why says what.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s (make test runs it)", why)
	}
}

// Binary is Binaries for one program, returning its path.
func Binary(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Binaries(t, name), name)
}

// LocalClusterPrograms are what a local cluster runs (tests/env/localk8s): etcd, the Kubernetes control
// plane and kwok's fake nodes.
var LocalClusterPrograms = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// LocalClusters is Binaries for LocalClusterPrograms.
func LocalClusters(t testing.TB) string {
	t.Helper()
	return Binaries(t, LocalClusterPrograms...)
}
