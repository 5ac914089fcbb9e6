// Package gitenv is the environment of every git process Flotilla's tools start (fixtures, the example
// repository, the benchmark's workloads, the test git server). git finds its repository through the
// environment before the working directory: run from a hook or under `git bisect run`, which export
// GIT_DIR and its kin, a `git init` or `git commit` meant for a folder of our own went to the enclosing
// repository instead (it once set core.bare there and committed a benchmark workload onto its HEAD).
package gitenv

import (
	"os"
	"strings"
)

// locating are git's repository-locating variables, as `git rev-parse --local-env-vars` lists them: the
// ones a hook or bisect may export, and that must not follow a process into a repository of its own.
var locating = []string{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
	"GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
	"GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
	"GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM",
}

// Environ is this process's environment without git's repository-locating variables (and the numbered
// GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n pairs GIT_CONFIG_COUNT announces), followed by extra.
func Environ(extra ...string) []string {
	drop := make(map[string]bool, len(locating))
	for _, k := range locating {
		drop[k] = true
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}
