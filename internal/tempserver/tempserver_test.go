package tempserver

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/internal/testsrv/testpki"
)

func serverBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLOTILLA_BIN")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "bin")
	}
	bin := filepath.Join(dir, "temporal-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s missing: run `hack/build-tools.sh temporal-server`", bin)
	}
	return bin
}

// Start returns once the namespace is served, to clients whose certificate the CA signed and to no other.
func TestStartServesTheNamespaceOnlyToClientsWithACertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pki, err := testpki.New()
	require.NoError(t, err)
	s, err := Start(ctx, Options{Bin: serverBin(t), Dir: t.TempDir(), Namespace: "flotilla", MTLS: pki})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })

	c, err := s.Dial(ctx, "")
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "flotilla"})
	require.NoError(t, err)
	require.Equal(t, "flotilla", resp.GetNamespaceInfo().GetName())

	// Trusting the server is not enough: without a client certificate the handshake fails.
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	_, err = client.DialContext(dctx, client.Options{HostPort: s.Address(),
		ConnectionOptions: client.ConnectionOptions{TLS: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pki.Pool()}}})
	require.ErrorContains(t, err, "certificate required")
}
