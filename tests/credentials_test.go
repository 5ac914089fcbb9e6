package tests

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/gitserver"
)

// privateRepo creates, under root, a repository holding bundle "cm": ConfigMap "app" (value v) in
// namespace ns.
func privateRepo(t *testing.T, root, name, ns, v string) string {
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cm"), 0o755))
	_, err := devenv.Git(dir, "init", "-q", "-b", "main")
	require.NoError(t, err)
	commitConfigMap(t, dir, ns, v)
	return dir
}

func commitConfigMap(t *testing.T, dir, ns, v string) {
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cm", "fleet.yaml"), []byte("defaultNamespace: "+ns+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cm", "app.yaml"), []byte(fmt.Sprintf(configMapV, v)), 0o644))
	_, err := devenv.Commit(dir, v)
	require.NoError(t, err)
}

// writeSecret writes one secret of a credentials folder, <dir>/<name>/<key>, as Kubernetes mounts it.
func writeSecret(t *testing.T, dir, name string, keys map[string][]byte) {
	require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o700))
	for k, v := range keys {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, k), v, 0o600))
	}
}

// Private repositories deploy with the worker's credentials: one over HTTPS with basic auth and its
// server's CA in spec.caBundle, one over SSH with a key and the host's known_hosts. A GitRepo naming a
// secret the worker does not hold fails alone, naming it; one whose secret goes away keeps what it
// deployed. No workflow history and no line of the worker's log holds the password or the private key.
func TestPrivateRepositoriesDeployWithTheWorkersCredentialsThatNeverLeaveIt(t *testing.T) {
	t.Parallel()
	const password = "pa55-of-the-https-server"
	root := t.TempDir()
	httpsRepo := privateRepo(t, root, "over-https", "https", "one")
	privateRepo(t, root, "over-ssh", "ssh", "one")
	https, err := gitserver.StartHTTPS(root, "flotilla", password)
	require.NoError(t, err)
	t.Cleanup(func() { _ = https.Close() })
	key, pub, err := gitserver.NewKey()
	require.NoError(t, err)
	sshd, err := gitserver.StartSSH(root, pub)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sshd.Close() })

	creds := t.TempDir()
	writeSecret(t, creds, "https-creds", map[string][]byte{"username": []byte("flotilla\n"), "password": []byte(password + "\n")})
	writeSecret(t, creds, "ssh-key", map[string][]byte{"ssh-privatekey": key, "known_hosts": sshd.KnownHosts()})

	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}, WorkerArgs: []string{"--credentials", creds}})
	s.AddCluster("a", "a", nil, nil)
	caBundle := "  caBundle: " + base64.StdEncoding.EncodeToString(https.CA) + "\n"
	s.Apply(harness.GitRepoYAML("over-https", https.RepoURL("over-https"), "  clientSecretName: https-creds\n"+caBundle))
	s.Apply(harness.GitRepoYAML("over-ssh", sshd.RepoURL("over-ssh"), "  clientSecretName: ssh-key\n"))
	s.Apply(harness.GitRepoYAML("elsewhere", https.RepoURL("over-https"), "  clientSecretName: nope\n"+caBundle))

	s.WaitStatus("over-https", 3*time.Minute, "Ready over HTTPS", harness.AllReady)
	s.WaitStatus("over-ssh", 3*time.Minute, "Ready over SSH", harness.AllReady)
	require.Equal(t, "one", s.ConfigMapData("a", "https", "app")["v"])
	require.Equal(t, "one", s.ConfigMapData("a", "ssh", "app")["v"])
	st := s.WaitStatus("elsewhere", time.Minute, "failing on its secret", func(st api.GitRepoStatus) bool {
		return strings.Contains(st.Error, `secret "nope" is not in the worker's credentials`)
	})
	require.Empty(t, st.Commit, "it never read the repository")
	require.Empty(t, st.Clusters)
	t.Logf("elsewhere: %s", st.Error)

	// Polls keep authenticating: a new commit over HTTPS is deployed.
	commitConfigMap(t, httpsRepo, "https", "two")
	kube := s.Kube("a")
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cm, err := kube.CoreV1().ConfigMaps("https").Get(ctx, "app", metav1.GetOptions{})
		return err == nil && cm.Data["v"] == "two"
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "the new commit is deployed")
	s.WaitStatus("over-https", time.Minute, "Ready at the new commit", harness.AllReady)
	deployed := s.Releases("a", "over-https")

	// Its secret goes away: the GitRepo fails, naming it, and what it deployed stays as it was.
	s.Apply(harness.GitRepoYAML("over-https", https.RepoURL("over-https"), "  clientSecretName: gone\n"+caBundle))
	st = s.WaitStatus("over-https", time.Minute, "failing on its secret", func(st api.GitRepoStatus) bool {
		return strings.Contains(st.Error, `secret "gone" is not in the worker's credentials`)
	})
	require.Equal(t, deployed, s.Releases("a", "over-https"), "no release was touched")
	require.Equal(t, "two", s.ConfigMapData("a", "https", "app")["v"])
	s.WaitStatus("over-ssh", time.Minute, "still Ready", harness.AllReady)

	// flotilla render --gitrepo reads the same store.
	res := s.CLI("render", "--gitrepo", "over-ssh", "--credentials", creds)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Contains(t, res.Stdout, "name: app")

	// What the worker was given never left it.
	log, err := os.ReadFile(filepath.Join(s.Dir, "worker.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "credentials loaded", "the log is the worker's, and names what it loaded")
	require.Contains(t, string(log), "ssh-key")
	keyLines := strings.Split(strings.TrimSpace(string(key)), "\n")
	for _, secret := range append([]string{password}, keyLines[1:len(keyLines)-1]...) {
		found, err := s.HistoriesContaining(secret)
		require.NoError(t, err)
		require.Empty(t, found, "workflow histories holding %q", secret)
		require.NotContains(t, string(log), secret)
		require.NotContains(t, res.Stdout+res.Stderr, secret)
	}
	found, err := s.HistoriesContaining("is not in the worker's credentials")
	require.NoError(t, err)
	require.NotEmpty(t, found, "the search does find what histories hold: the error naming the secret")
}
