package cachedir

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o644))
}

// What a worker killed mid-write left (a half clone, a half download, a half stored package) is removed
// when the next process claims the folder; finished entries and a checkout's own files stay.
func TestTheFirstClaimRemovesWhatAKilledProcessLeft(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "0a1b", ".clone-123", "README"))
	write(t, filepath.Join(dir, "charts", "sha256", ".download-9"))
	write(t, filepath.Join(dir, "content", "sha256", "ab", ".put-7"))
	write(t, filepath.Join(dir, "helmops", ".tmp-5", "fleet.yaml"))
	write(t, filepath.Join(dir, "0a1b", "deadbeef", completeMarker))
	write(t, filepath.Join(dir, "0a1b", "deadbeef", "app", ".tmp-but-in-the-repository"))
	write(t, filepath.Join(dir, "charts", "sha256", "cafe"))

	c, removed, err := Take(dir)
	require.NoError(t, err)
	defer c.Release()
	sort.Strings(removed)
	require.Equal(t, []string{
		filepath.Join("0a1b", ".clone-123"),
		filepath.Join("charts", "sha256", ".download-9"),
		filepath.Join("content", "sha256", "ab", ".put-7"),
		filepath.Join("helmops", ".tmp-5"),
	}, removed)
	require.FileExists(t, filepath.Join(dir, "0a1b", "deadbeef", "app", ".tmp-but-in-the-repository"), "a checkout's files are the repository's")
	require.FileExists(t, filepath.Join(dir, "charts", "sha256", "cafe"))
}

// While another process holds the folder, its temporary entries may be writes in progress: a second
// claim leaves them, and sweeps only once every claim is released.
func TestAClaimLeavesTheTemporaryEntriesOfALiveProcess(t *testing.T) {
	dir := t.TempDir()
	first, _, err := Take(dir)
	require.NoError(t, err)
	inProgress := filepath.Join(dir, "0a1b", ".clone-42")
	write(t, filepath.Join(inProgress, "HEAD"))

	second, removed, err := Take(dir)
	require.NoError(t, err)
	require.Empty(t, removed)
	require.DirExists(t, inProgress)

	require.NoError(t, first.Release())
	require.NoError(t, second.Release())
	third, removed, err := Take(dir)
	require.NoError(t, err)
	defer third.Release()
	require.Equal(t, []string{filepath.Join("0a1b", ".clone-42")}, removed)
}
