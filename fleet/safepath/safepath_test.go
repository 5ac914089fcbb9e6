package safepath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// worker lays out a worker's disk: a secret beside a checkout, as the git-credentials file or a kubeconfig
// would be.
func worker(t *testing.T) (repo, secretDir string) {
	t.Helper()
	base := t.TempDir()
	secretDir = filepath.Join(base, "worker-home")
	repo = filepath.Join(base, "checkouts", "repo")
	require.NoError(t, os.MkdirAll(secretDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secretDir, "creds.yaml"), []byte("token: hunter2\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "app"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "app", "real.yaml"), []byte("a: 1\n"), 0o644))
	return repo, secretDir
}

func link(t *testing.T, target, at string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(at), 0o755))
	require.NoError(t, os.Symlink(target, at))
}

// The probe's attack: a folder link that leaves the checkout, and a file linked through it whose own target
// reads as a path inside the repository.
func TestAChainOfSymlinksCannotReadOutsideTheRepository(t *testing.T) {
	repo, _ := worker(t)
	link(t, "../../worker-home", filepath.Join(repo, "hostdir"))
	link(t, "../hostdir/creds.yaml", filepath.Join(repo, "app", "values.yaml"))

	_, err := ReadFile(repo, "app/values.yaml")
	var esc *EscapeError
	require.ErrorAs(t, err, &esc)
	require.Contains(t, err.Error(), `"app/values.yaml"`)
	require.Contains(t, err.Error(), "resolves outside the repository")
	require.NotContains(t, err.Error(), "hunter2")

	_, err = Stat(repo, "app/values.yaml")
	require.ErrorAs(t, err, &esc)

	err = WalkFiles(repo, "app", func(string, []byte) error { return nil })
	require.ErrorAs(t, err, &esc, "walking a folder that holds the link")
}

func TestEveryWayOutIsRefused(t *testing.T) {
	repo, secretDir := worker(t)
	link(t, filepath.Join(secretDir, "creds.yaml"), filepath.Join(repo, "abs.yaml"))
	link(t, "../../worker-home/creds.yaml", filepath.Join(repo, "rel.yaml"))
	link(t, "../../worker-home", filepath.Join(repo, "dirlink"))
	link(t, filepath.Join(repo, "app", "real.yaml"), filepath.Join(repo, "abs-inside.yaml"))

	for rel, reason := range map[string]string{
		"/etc/passwd":              "absolute path",
		"../worker-home/creds.yml": "leaves the repository",
		"app/../../x":              "leaves the repository",
		"abs.yaml":                 "resolves outside the repository",
		"rel.yaml":                 "resolves outside the repository",
		"dirlink/creds.yaml":       "resolves outside the repository",
		// An absolute link names a place on some machine, never a place in the repository.
		"abs-inside.yaml": "resolves outside the repository",
	} {
		_, err := ReadFile(repo, rel)
		require.ErrorContains(t, err, reason, rel)
		require.Error(t, Check(repo, rel), rel)
	}
}

func TestLinksThatStayInsideAreFollowed(t *testing.T) {
	repo, _ := worker(t)
	link(t, "real.yaml", filepath.Join(repo, "app", "alias.yaml"))
	link(t, "../app", filepath.Join(repo, "shared", "app"))

	for _, rel := range []string{"app/alias.yaml", "shared/app/real.yaml", "./app/../app/real.yaml"} {
		data, err := ReadFile(repo, rel)
		require.NoError(t, err, rel)
		require.Equal(t, "a: 1\n", string(data), rel)
	}
	require.NoError(t, Check(repo, "app/not-there.yaml"), "a missing file inside is not an escape")

	var seen []string
	require.NoError(t, WalkFiles(repo, ".", func(rel string, _ []byte) error {
		seen = append(seen, rel)
		return nil
	}))
	require.Equal(t, []string{"app/alias.yaml", "app/real.yaml"}, seen, "linked folders are not entered twice")
}

func TestAFileOverTheLimitIsRefusedWithoutReadingIt(t *testing.T) {
	repo, _ := worker(t)
	f, err := os.Create(filepath.Join(repo, "app", "huge.yaml"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxFileSize+1)) // sparse: costs no disk
	require.NoError(t, f.Close())

	_, err = ReadFile(repo, "app/huge.yaml")
	var big *TooLargeError
	require.ErrorAs(t, err, &big)
	require.True(t, strings.Contains(err.Error(), "16 MiB"), err.Error())
}

func TestAFolderIsListedOnlyInsideTheRepository(t *testing.T) {
	repo, _ := worker(t)
	link(t, "../app", filepath.Join(repo, "shared", "app"))
	link(t, "../../worker-home", filepath.Join(repo, "hostdir"))
	r, err := Open(repo)
	require.NoError(t, err)
	defer r.Close()

	entries, err := r.ReadDir("shared/app")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "real.yaml", entries[0].Name())

	for _, rel := range []string{"hostdir", "../worker-home", "/etc"} {
		_, err := r.ReadDir(rel)
		var esc *EscapeError
		require.ErrorAs(t, err, &esc, rel)
	}
}
