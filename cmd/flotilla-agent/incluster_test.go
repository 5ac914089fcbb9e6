package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// In a pod, the agent reaches its API server with its service account: the kubeconfig it writes names the
// mounted token file, so the kubelet's rotation of the token is followed, and holds no token itself.
func TestInAPodTheAgentUsesItsServiceAccount(t *testing.T) {
	sa := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(sa, "token"), []byte("secret-token"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sa, "ca.crt"), []byte("ca"), 0o600))
	old := serviceAccountDir
	serviceAccountDir = sa
	t.Cleanup(func() { serviceAccountDir = old })
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")

	path, err := inClusterKubeconfig(t.TempDir())
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(data), "secret-token")
	cfg, err := clientcmd.Load(data)
	require.NoError(t, err)
	require.Equal(t, "https://10.0.0.1:443", cfg.Clusters["in-cluster"].Server)
	require.Equal(t, filepath.Join(sa, "token"), cfg.AuthInfos["agent"].TokenFile)

	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err = inClusterKubeconfig(t.TempDir())
	require.ErrorContains(t, err, "give the agent its cluster's kubeconfig")
}
