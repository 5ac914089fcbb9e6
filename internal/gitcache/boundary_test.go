package gitcache

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/gitserver"
)

// A repository on the worker's own disk is refused unless the operator allows it: any workspace could
// name another's checkout in this cache, or any folder the worker reads. The refusal says why and how.
func TestALocalRepositoryIsRefusedUnlessAllowed(t *testing.T) {
	root, commit := servedRepo(t)
	local := filepath.Join(root, "web")
	c := &Cache{Dir: t.TempDir()}
	for _, url := range []string{"file://" + local, local} {
		_, err := c.Resolve(context.Background(), Remote{URL: url}, "main", "")
		require.ErrorIs(t, err, ErrLocalRepo, url)
		require.ErrorContains(t, err, "--allow-local-repos")
		_, err = c.Checkout(context.Background(), Remote{URL: url}, commit)
		require.ErrorIs(t, err, ErrLocalRepo, url)
	}
	// The cache's own checkouts are exactly what a workspace must not name.
	_, err := c.Checkout(context.Background(), Remote{URL: "file://" + c.Dir}, commit)
	require.ErrorIs(t, err, ErrLocalRepo)

	allowed := &Cache{Dir: t.TempDir(), AllowLocal: true}
	got, err := allowed.Resolve(context.Background(), Remote{URL: "file://" + local}, "main", "")
	require.NoError(t, err)
	require.Equal(t, commit, got)
}

// One GitRepo clones a private repository with its credentials. Another names the same URL, and the
// commit it learnt, without credentials: it does not get the first one's checkout from the cache.
func TestACheckoutIsKeptForTheCredentialsThatClonedIt(t *testing.T) {
	root, commit := servedRepo(t)
	srv, err := gitserver.StartHTTPS(root, gitUser, gitPassword)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{"git": {"username": gitUser, "password": gitPassword}})}
	requireFetches(t, c, Remote{URL: srv.RepoURL("web"), Secret: "git", CABundle: srv.CA}, commit)

	_, err = c.Checkout(context.Background(), Remote{URL: srv.RepoURL("web"), CABundle: srv.CA}, commit)
	require.ErrorContains(t, err, "authentication failed", "an anonymous caller must clone, and cannot")
	dir, err := c.Checkout(context.Background(), Remote{URL: srv.RepoURL("web"), Secret: "git", CABundle: srv.CA}, commit)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
}
