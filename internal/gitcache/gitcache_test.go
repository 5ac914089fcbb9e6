package gitcache

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/env/gitenv"
)

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitenv.Environ("GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

func TestResolveAndCheckoutFollowTheBranch(t *testing.T) {
	src := t.TempDir()
	runGit(t, src, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("one"), 0o644))
	runGit(t, src, "add", ".")
	runGit(t, src, "commit", "-q", "-m", "one")
	first := runGit(t, src, "rev-parse", "HEAD")
	runGit(t, src, "tag", "-a", "v1", "-m", "v1")

	c := &Cache{Dir: t.TempDir(), AllowLocal: true}
	ctx := context.Background()
	got, err := c.Resolve(ctx, Remote{URL: "file://" + src}, "main", "")
	require.NoError(t, err)
	require.Equal(t, first, got)

	tagged, err := c.Resolve(ctx, Remote{URL: "file://" + src}, "", "v1")
	require.NoError(t, err)
	require.Equal(t, first, tagged, "an annotated tag resolves to its commit")

	dir, err := c.Checkout(ctx, Remote{URL: "file://" + src}, first)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "one", string(data))

	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("two"), 0o644))
	runGit(t, src, "commit", "-q", "-am", "two")
	second := runGit(t, src, "rev-parse", "HEAD")
	got, err = c.Resolve(ctx, Remote{URL: "file://" + src}, "main", "")
	require.NoError(t, err)
	require.Equal(t, second, got)

	again, err := c.Checkout(ctx, Remote{URL: "file://" + src}, first)
	require.NoError(t, err)
	require.Equal(t, dir, again, "a cached commit is not cloned again")

	_, err = c.Resolve(ctx, Remote{URL: "file://" + src}, "nope", "")
	require.ErrorContains(t, err, `branch "nope" not found`)
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf, "callers still tell a missing branch from a git failure")
}
