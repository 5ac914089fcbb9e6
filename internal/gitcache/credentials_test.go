package gitcache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/internal/credentials"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/gitserver"
)

const (
	gitUser     = "flotilla"
	gitPassword = "pa55-w0rd-of-the-test"
)

// servedRepo creates the repository "web" under a new folder to serve, and returns the folder and the
// repository's commit.
func servedRepo(t *testing.T) (root, commit string) {
	root = t.TempDir()
	src := filepath.Join(root, "web")
	require.NoError(t, os.Mkdir(src, 0o755))
	runGit(t, src, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("private"), 0o644))
	runGit(t, src, "add", ".")
	runGit(t, src, "commit", "-q", "-m", "one")
	return root, runGit(t, src, "rev-parse", "HEAD")
}

// storeOf writes secrets in the credentials file form and loads it.
func storeOf(t *testing.T, secrets map[string]map[string]any) *credentials.Store {
	data, err := yaml.Marshal(secrets)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "credentials.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	store, err := credentials.Load(path)
	require.NoError(t, err)
	return store
}

// requireFetches resolves main and checks out the commit it points at.
func requireFetches(t *testing.T, c *Cache, r Remote, commit string) {
	t.Helper()
	ctx := context.Background()
	got, err := c.Resolve(ctx, r, "main", "")
	require.NoError(t, err)
	require.Equal(t, commit, got)
	dir, err := c.Checkout(ctx, r, commit)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "private", string(data))
}

// requireFails checks that both an ls-remote and a clone fail with every part of want and none of the
// secrets, in the error and every error it wraps.
func requireFails(t *testing.T, c *Cache, r Remote, want []string, secrets ...string) {
	t.Helper()
	_, err := c.Resolve(context.Background(), r, "main", "")
	t.Logf("ls-remote: %v", err)
	requireNoSecret(t, err, secrets...)
	for _, w := range want {
		require.ErrorContains(t, err, w)
	}
	_, err = c.Checkout(context.Background(), r, strings.Repeat("b", 40))
	requireNoSecret(t, err, secrets...)
	for _, w := range want {
		require.ErrorContains(t, err, w)
	}
}

func TestHTTPSWithBasicAuthAndTheGitRepoCABundle(t *testing.T) {
	root, commit := servedRepo(t)
	srv, err := gitserver.StartHTTPS(root, gitUser, gitPassword)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"git": {"username": gitUser, "password": gitPassword},
	})}

	requireFetches(t, c, Remote{URL: srv.RepoURL("web"), Secret: "git", CABundle: srv.CA}, commit)

	c2 := &Cache{Dir: t.TempDir(), Creds: c.Creds}
	requireFails(t, c2, Remote{URL: srv.RepoURL("web"), Secret: "git"}, []string{"certificate"}, gitPassword)
	requireFetches(t, c2, Remote{URL: srv.RepoURL("web"), Secret: "git", InsecureSkipTLSVerify: true}, commit)
}

func TestHTTPSCABundleOfTheSecret(t *testing.T) {
	root, commit := servedRepo(t)
	srv, err := gitserver.StartHTTPS(root, gitUser, gitPassword)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"git": {"username": gitUser, "password": gitPassword, "caBundle": string(srv.CA)},
	})}
	requireFetches(t, c, Remote{URL: srv.RepoURL("web"), Secret: "git"}, commit)
}

func TestHTTPSWrongPasswordSaysAuthenticationFailedAndNeverShowsIt(t *testing.T) {
	root, _ := servedRepo(t)
	srv, err := gitserver.StartHTTPS(root, gitUser, gitPassword)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	const wrong = "wr0ng-pa55word-value"
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{"git": {"username": gitUser, "password": wrong}})}

	requireFails(t, c, Remote{URL: srv.RepoURL("web"), Secret: "git", CABundle: srv.CA},
		[]string{srv.RepoURL("web"), `authentication failed with clientSecretName "git"`}, wrong, gitPassword)
	require.Positive(t, srv.Refused(), "the server saw the attempts and refused them")

	requireFails(t, c, Remote{URL: srv.RepoURL("web"), CABundle: srv.CA},
		[]string{srv.RepoURL("web"), "authentication failed: the repository needs credentials, named with spec.clientSecretName"})
}

// sshServer serves a new repository over SSH to a new key and returns the key's PEM.
func sshServer(t *testing.T) (srv *gitserver.SSH, key []byte, commit string) {
	root, commit := servedRepo(t)
	key, pub, err := gitserver.NewKey()
	require.NoError(t, err)
	srv, err = gitserver.StartSSH(root, pub)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv, key, commit
}

func TestSSHWithKeyAndKnownHosts(t *testing.T) {
	srv, key, commit := sshServer(t)
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"ssh": {"sshPrivateKey": string(key), "knownHosts": string(srv.KnownHosts())},
	})}
	requireFetches(t, c, Remote{URL: srv.RepoURL("web"), Secret: "ssh"}, commit)

	// scp-style, port 22 as git has it, which ~/.ssh/config's Hostname and Port point at the server.
	host, port, _ := strings.Cut(srv.Addr, ":")
	old := gitssh.DefaultSSHConfig
	gitssh.DefaultSSHConfig = sshConfig{"git.example.test": {"Hostname": host, "Port": port}}
	t.Cleanup(func() { gitssh.DefaultSSHConfig = old })
	c2 := &Cache{Dir: t.TempDir(), Creds: c.Creds}
	requireFetches(t, c2, Remote{URL: "git@git.example.test:web", Secret: "ssh"}, commit)
}

type sshConfig map[string]map[string]string

func (c sshConfig) Get(alias, key string) string { return c[alias][key] }

func TestSSHWithoutKnownHostsIsRefusedUnlessTheSecretOptsOut(t *testing.T) {
	srv, key, commit := sshServer(t)
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"ssh":      {"sshPrivateKey": string(key)},
		"insecure": {"sshPrivateKey": string(key), "insecureIgnoreHostKey": true},
	})}
	requireFails(t, c, Remote{URL: srv.RepoURL("web"), Secret: "ssh"},
		[]string{`clientSecretName "ssh" has no known_hosts`, "host key of " + srv.Addr + " cannot be checked"}, string(key))
	requireFetches(t, c, Remote{URL: srv.RepoURL("web"), Secret: "insecure"}, commit)
}

func TestSSHWithAnotherHostKeyIsRefused(t *testing.T) {
	srv, key, _ := sshServer(t)
	_, other, err := gitserver.NewKey()
	require.NoError(t, err)
	host, port, _ := strings.Cut(srv.Addr, ":")
	impostor := "[" + host + "]:" + port + " " + string(ssh.MarshalAuthorizedKey(other))
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"ssh":     {"sshPrivateKey": string(key), "knownHosts": impostor},
		"unknown": {"sshPrivateKey": string(key), "knownHosts": "[" + host + "]:1 " + string(ssh.MarshalAuthorizedKey(srv.HostKey))},
	})}
	fingerprint := ssh.FingerprintSHA256(srv.HostKey)
	requireFails(t, c, Remote{URL: srv.RepoURL("web"), Secret: "ssh"},
		[]string{"host key mismatch for " + srv.Addr, fingerprint, `clientSecretName "ssh"`}, string(key))
	requireFails(t, c, Remote{URL: srv.RepoURL("web"), Secret: "unknown"},
		[]string{"host " + srv.Addr + ` is not in the known_hosts of clientSecretName "unknown"`, fingerprint}, string(key))
}

func TestSSHWithAKeyTheServerRefuses(t *testing.T) {
	srv, _, _ := sshServer(t)
	stranger, _, err := gitserver.NewKey()
	require.NoError(t, err)
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"ssh": {"sshPrivateKey": string(stranger), "knownHosts": string(srv.KnownHosts())},
	})}
	requireFails(t, c, Remote{URL: srv.RepoURL("web"), Secret: "ssh"},
		// Errors drop a URL's user part, git@ included.
		[]string{"ssh://" + srv.Addr + "/web", `authentication failed with clientSecretName "ssh"`}, string(stranger))
}

func TestASecretNameTheWorkerDoesNotKnow(t *testing.T) {
	root, _ := servedRepo(t)
	srv, err := gitserver.StartHTTPS(root, gitUser, gitPassword)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	store := storeOf(t, map[string]map[string]any{"git": {"username": gitUser, "password": gitPassword}})
	r := Remote{URL: srv.RepoURL("web"), Secret: "nope", CABundle: srv.CA}

	requireFails(t, &Cache{Dir: t.TempDir(), Creds: store}, r,
		[]string{srv.RepoURL("web"), `secret "nope" is not in the worker's credentials (loaded from ` + store.Source() + ")"}, gitPassword)
	var none *credentials.Store
	requireFails(t, &Cache{Dir: t.TempDir(), Creds: none}, r,
		[]string{`secret "nope": the worker has no credentials configured (--credentials)`})
	requireFails(t, &Cache{Dir: t.TempDir()}, r,
		[]string{`clientSecretName "nope": the worker has no credentials configured (--credentials)`})
	require.Zero(t, srv.Refused(), "nothing was sent without credentials")
}

func TestASecretWithoutWhatTheURLNeeds(t *testing.T) {
	key, _, err := gitserver.NewKey()
	require.NoError(t, err)
	c := &Cache{Dir: t.TempDir(), Creds: storeOf(t, map[string]map[string]any{
		"basic": {"username": gitUser, "password": gitPassword},
		"ssh":   {"sshPrivateKey": string(key), "insecureIgnoreHostKey": true},
	}), AllowLocal: true}
	requireFails(t, c, Remote{URL: "ssh://git@127.0.0.1:1/web", Secret: "basic"}, []string{`clientSecretName "basic" has no ssh-privatekey`}, gitPassword)
	requireFails(t, c, Remote{URL: "https://127.0.0.1:1/web", Secret: "ssh"}, []string{`clientSecretName "ssh" has no password (or token)`}, string(key))
	requireFails(t, c, Remote{URL: "file:///srv/git/web", Secret: "basic"}, []string{`clientSecretName "basic": a file repository takes no credentials`}, gitPassword)
}
