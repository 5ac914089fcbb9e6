package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The benchmark's own clients hold their certificates in memory: a client given the files keeps
// re-reading them for as long as the process lives, and logs an error every few seconds once the run
// that wrote them has removed its folder (as every comparison round does before the next).
func TestTheBenchmarksClientsReadTheirCertificatesOnce(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"ca.crt": "ca", "admin.crt": "cert", "admin.key": "key"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt}}]
users: [{name: u, user: {client-certificate: admin.crt, client-key: admin.key}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))

	cfg, err := restConfig(kubeconfig)
	require.NoError(t, err)
	require.Equal(t, "ca", string(cfg.CAData))
	require.Equal(t, "cert", string(cfg.CertData))
	require.Equal(t, "key", string(cfg.KeyData))
	require.Empty(t, cfg.CAFile+cfg.CertFile+cfg.KeyFile, "no file is left for client-go to watch")

	require.NoError(t, os.RemoveAll(dir))
	_, err = restConfig(kubeconfig)
	require.Error(t, err, "a kubeconfig that is gone is an error here, not a log line later")
}
