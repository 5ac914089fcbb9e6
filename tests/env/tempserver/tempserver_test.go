package tempserver

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// Start returns once the namespace is served, to clients whose certificate the CA signed and to no other.
func TestStartServesTheNamespaceOnlyToClientsWithACertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pki, err := testpki.New()
	require.NoError(t, err)
	s, err := Start(ctx, Options{Bin: needs.Binary(t, "temporal-server"), Dir: t.TempDir(), Namespace: "flotilla", MTLS: pki})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })

	c, err := s.Dial(ctx, "")
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "flotilla"})
	require.NoError(t, err)
	require.Equal(t, "flotilla", resp.GetNamespaceInfo().GetName())

	// Trusting the server is not enough: without a client certificate the server ends the connection with
	// TLS 1.3's "certificate required" alert. It sends the alert after the client's side of the handshake is
	// done, so a gRPC dial may see only the broken connection (a write into it); reading is what receives it.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.Address(),
		&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pki.Pool(), NextProtos: []string{"h2"}})
	require.NoError(t, err, "the client's side of the handshake")
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorContains(t, err, "remote error: tls: certificate required")
}
