package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDiscoverFindsFuzzTargetsOutsideTestdata(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	write("a/a_test.go", "package a\n\nfunc FuzzOne(f *testing.F) {}\n\nfunc FuzzTwo(ff *testing.F) {}\n\nfunc TestX(t *testing.T) {}\n")
	write("b/c/c_test.go", "package c\n\nfunc FuzzThree(f *testing.F) {}\n")
	write("b/c/c.go", "package c\n\nfunc FuzzNotATest(f *testing.F) {}\n")
	write("a/testdata/x_test.go", "package x\n\nfunc FuzzIgnored(f *testing.F) {}\n")

	got, err := discover(root)
	require.NoError(t, err)
	require.Equal(t, []Target{
		{Package: "./a", Name: "FuzzOne"},
		{Package: "./a", Name: "FuzzTwo"},
		{Package: "./b/c", Name: "FuzzThree"},
	}, got)
}

func TestProgressReadsTheEnginesStatusLine(t *testing.T) {
	m := progress.FindStringSubmatch("fuzz: elapsed: 15s, execs: 1234567 (82304/sec), new interesting: 3 (total: 41)")
	require.Equal(t, []string{"1234567", "3", "41"}, m[1:])
	m = failingInput.FindStringSubmatch("    Failing input written to testdata/fuzz/FuzzOne/5f1e2a")
	require.Equal(t, "testdata/fuzz/FuzzOne/5f1e2a", m[1])
}
