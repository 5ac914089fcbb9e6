package devenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Run from a git hook or under `git bisect run`, which export GIT_DIR and its kin, making a repository of
// our own must not touch the enclosing one: no commit on its HEAD, no change to its config or index.
func TestARepositoryOfOurOwnLeavesTheEnclosingOneAlone(t *testing.T) {
	enclosing := t.TempDir()
	plainGit(t, enclosing, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(enclosing, "a.txt"), []byte("a"), 0o644))
	plainGit(t, enclosing, "add", "a.txt")
	plainGit(t, enclosing, "-c", "user.name=u", "-c", "user.email=u@example.invalid", "commit", "-q", "-m", "theirs")
	head := plainGit(t, enclosing, "rev-parse", "HEAD")
	config := read(t, filepath.Join(enclosing, ".git", "config"))
	index := read(t, filepath.Join(enclosing, ".git", "index"))

	t.Setenv("GIT_DIR", filepath.Join(enclosing, ".git"))
	t.Setenv("GIT_WORK_TREE", enclosing)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(enclosing, ".git", "index"))
	t.Setenv("GIT_OBJECT_DIRECTORY", filepath.Join(enclosing, ".git", "objects"))
	t.Setenv("GIT_COMMON_DIR", filepath.Join(enclosing, ".git"))

	ours := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ours, "b.txt"), []byte("b"), 0o644))
	first, err := InitRepo(ours, "")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ours, "b.txt"), []byte("bb"), 0o644))
	second, err := Commit(ours, "ours")
	require.NoError(t, err)
	require.NotEqual(t, first, second)

	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"} {
		require.NoError(t, os.Unsetenv(k))
	}
	require.Equal(t, head, plainGit(t, enclosing, "rev-parse", "HEAD"), "no commit landed on the enclosing repository")
	require.Equal(t, config, read(t, filepath.Join(enclosing, ".git", "config")), "its config is unchanged (core.bare among it)")
	require.Equal(t, index, read(t, filepath.Join(enclosing, ".git", "index")))
	require.Equal(t, second, plainGit(t, ours, "rev-parse", "HEAD"), "our commits are in our repository")
	require.DirExists(t, filepath.Join(ours, ".git"))
}

// plainGit runs git as a user would, with whatever the environment holds.
func plainGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
