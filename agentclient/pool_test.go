package agentclient

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

const secretToken = "s3cr3t-token-never-printed"

func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: false}
users:
- name: u
  user: {token: %s}
contexts:
- name: east
  context: {cluster: c, user: u}
- name: west
  context: {cluster: c, user: u}
current-context: east
`, server, secretToken)
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestPoolBuildsOneClientPerClusterAndRebuildsWhenTheKubeconfigChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, "https://"+deadPort(t))
	pool := NewPool(zaptest.NewLogger(t))

	first, err := pool.Get(Config{KubeconfigPath: path})
	require.NoError(t, err)
	require.Equal(t, "east", first.Name(), "empty Context means current-context")
	again, err := pool.Get(Config{KubeconfigPath: path})
	require.NoError(t, err)
	require.Same(t, first, again)
	require.Equal(t, DefaultQPS, first.restConfig.QPS)
	require.Equal(t, DefaultBurst, first.restConfig.Burst)

	west, err := pool.Get(Config{KubeconfigPath: path, Context: "west", QPS: 7, Burst: 9})
	require.NoError(t, err)
	require.NotSame(t, first, west)
	require.Equal(t, float32(7), west.restConfig.QPS)

	writeKubeconfig(t, path, "https://"+deadPort(t))
	edited, err := pool.Get(Config{KubeconfigPath: path})
	require.NoError(t, err)
	require.NotSame(t, first, edited, "an edited kubeconfig is picked up")
	require.NotEqual(t, first.restConfig.Host, edited.restConfig.Host)
	require.Same(t, first.locks, edited.locks, "release locks survive the rebuild")
	east, err := pool.Get(Config{KubeconfigPath: path, Context: "east", QPS: 7})
	require.NoError(t, err)
	require.Same(t, first.locks, east.locks, "the current-context named explicitly is the same cluster")
	require.NotSame(t, first.locks, west.locks)
}

// A kubeconfig read from a Secret is keyed by the name of its source: the same content reuses the Client,
// a rotated one rebuilds it.
func TestPoolBuildsAClientFromAKubeconfigInMemory(t *testing.T) {
	pool := NewPool(nil)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, "https://"+deadPort(t))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cfg := Config{KubeconfigPath: "secret team-a/edge-kubeconfig"}
	first, err := pool.GetFrom(cfg, data)
	require.NoError(t, err)
	again, err := pool.GetFrom(cfg, data)
	require.NoError(t, err)
	require.Same(t, first, again)

	writeKubeconfig(t, path, "https://"+deadPort(t))
	rotated, err := os.ReadFile(path)
	require.NoError(t, err)
	rebuilt, err := pool.GetFrom(cfg, rotated)
	require.NoError(t, err)
	require.NotSame(t, first, rebuilt)
	require.Same(t, first.locks, rebuilt.locks, "release locks survive the rebuild")

	_, err = pool.GetFrom(cfg, []byte("not: [a kubeconfig"))
	require.ErrorContains(t, err, "secret team-a/edge-kubeconfig")
}

func TestPoolErrorsNameTheFileAndContextButNoCredentials(t *testing.T) {
	dir := t.TempDir()
	pool := NewPool(nil)

	_, err := pool.Get(Config{KubeconfigPath: filepath.Join(dir, "absent")})
	require.ErrorContains(t, err, filepath.Join(dir, "absent"))

	path := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, path, "https://"+deadPort(t))
	_, err = pool.Get(Config{KubeconfigPath: path, Context: "north"})
	require.ErrorContains(t, err, `context "north" not found`)
	require.NotContains(t, err.Error(), secretToken)
}

func TestStoppedServerIsUnreachable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, "https://"+deadPort(t))
	c, err := NewPool(nil).Get(Config{KubeconfigPath: path})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	err = c.Ping(ctx)
	require.Error(t, err)
	require.True(t, IsUnreachable(err), "ping: %v", err)
	require.False(t, IsInvalid(err))
	require.NotContains(t, err.Error(), secretToken)

	_, err = c.Observe(ctx, "default", "web")
	require.True(t, IsUnreachable(err), "observe: %v", err)
	_, err = c.Install(ctx, ApplyRequest{Name: "web", Namespace: "default", Chart: testChart("v1")})
	require.True(t, IsUnreachable(err), "install: %v", err)
}

func TestUntrustedCertificateIsUnreachable(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point of the test
	srv.StartTLS()
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, srv.URL)
	c, err := NewPool(nil).Get(Config{KubeconfigPath: path})
	require.NoError(t, err)

	err = c.Ping(context.Background())
	require.True(t, IsUnreachable(err), "%v", err)
}

func TestProxyErrorsAreUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, srv.URL)
	c, err := NewPool(nil).Get(Config{KubeconfigPath: path})
	require.NoError(t, err)

	_, err = c.Observe(context.Background(), "default", "web")
	require.True(t, IsUnreachable(err), "%v", err)
	require.False(t, IsInvalid(err))
}
