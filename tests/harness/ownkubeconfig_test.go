package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// The test's own clients read a kubeconfig with no file in it, so client-go starts no certificate
// reloader that outlives the test's folder; an edited kubeconfig is copied again.
func TestTheTestsOwnKubeconfigHoldsItsCertificates(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"ca.crt": "ca", "client.crt": "cert", "client.key": "key"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	write := func(server string) {
		require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: `+server+`
    certificate-authority: ca.crt
users:
- name: u
  user:
    client-certificate: client.crt
    client-key: client.key
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`), 0o600))
	}
	write("https://127.0.0.1:6443")

	var own ownKubeconfigs
	stackDir := t.TempDir()
	path, err := own.path(stackDir, "k1", kubeconfig)
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	require.Empty(t, cfg.CertFile)
	require.Empty(t, cfg.KeyFile)
	require.Empty(t, cfg.CAFile)
	require.Equal(t, "cert", string(cfg.CertData))
	require.Equal(t, "key", string(cfg.KeyData))
	require.Equal(t, "ca", string(cfg.CAData))

	write("https://127.0.0.1:7443")
	again, err := own.path(stackDir, "k1", kubeconfig)
	require.NoError(t, err)
	require.Equal(t, path, again)
	cfg, err = clientcmd.BuildConfigFromFlags("", again)
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:7443", cfg.Host)
}
