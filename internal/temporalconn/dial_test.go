package temporalconn

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// fakeFrontend answers the two calls Dial makes, GetSystemInfo and DescribeNamespace, and checks the
// API key when it has one.
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	apiKey string
}

func (f *fakeFrontend) auth(ctx context.Context) error {
	if f.apiKey == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+f.apiKey {
		return status.Error(codes.Unauthenticated, "invalid API key")
	}
	return nil
}

func (f *fakeFrontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (f *fakeFrontend) DescribeNamespace(ctx context.Context, req *workflowservice.DescribeNamespaceRequest) (*workflowservice.DescribeNamespaceResponse, error) {
	if err := f.auth(ctx); err != nil {
		return nil, err
	}
	switch req.Namespace {
	case "missing":
		return nil, serviceerror.ToStatus(serviceerror.NewNamespaceNotFound(req.Namespace)).Err() // as the server sends it
	case "forbidden":
		return nil, status.Error(codes.PermissionDenied, "Request unauthorized.")
	}
	return &workflowservice.DescribeNamespaceResponse{}, nil
}

// serve starts a fake frontend on loopback, over TLS when conf is not nil.
func serve(t *testing.T, conf *tls.Config, f *fakeFrontend) string {
	t.Helper()
	var opts []grpc.ServerOption
	if conf != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(conf)))
	}
	srv := grpc.NewServer(opts...)
	workflowservice.RegisterWorkflowServiceServer(srv, f)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

func dial(t *testing.T, s Settings) error {
	t.Helper()
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = 2 * time.Second
	}
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	c, err := Dial(context.Background(), s, nil)
	if err == nil {
		c.Close()
	}
	return err
}

// A closed port and a listener that is not Temporal are both "not reachable": Dial retries within its
// budget, then names the address, and keeps ErrUnreachable for errors.Is.
func TestDialGivesUpOnAnUnreachableServerWithinItsBudget(t *testing.T) {
	clearEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())

	notTemporal, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { notTemporal.Close() })
	go func() {
		for {
			c, err := notTemporal.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()

	for _, addr := range []string{closed, notTemporal.Addr().String()} {
		start := time.Now()
		err := dial(t, Settings{Address: addr, ConnectTimeout: 1500 * time.Millisecond})
		took := time.Since(start)
		require.Error(t, err)
		t.Log(err)
		require.ErrorIs(t, err, ErrUnreachable)
		require.Contains(t, err.Error(), "Temporal at "+addr+" is not reachable")
		require.Contains(t, err.Error(), "check --address (env TEMPORAL_ADDRESS)")
		require.Less(t, took, 5*time.Second, "the budget bounds the retries")
	}
}

// Against a server that wants mTLS: the configured client certificate gets through and Dial succeeds;
// plain gRPC, TLS without the CA, TLS without a client certificate and the wrong server name each fail
// at once with the setting to fix.
func TestDialOverMutualTLS(t *testing.T) {
	clearEnv(t)
	p := newTestPKI(t)
	addr := serve(t, p.serverTLS(t, true), &fakeFrontend{})
	good := Settings{Address: addr, ServerCAFile: p.caFile, ClientCertFile: p.clientCertFile, ClientKeyFile: p.clientKeyFile}
	require.NoError(t, dial(t, good))

	withName := good
	withName.Address = "localhost:" + port(addr)
	withName.ServerName = "temporal.test"
	require.NoError(t, dial(t, withName), "--tls-server-name picks the name checked")

	err := dial(t, Settings{Address: addr})
	t.Log(err)
	require.ErrorIs(t, err, ErrTLS)
	require.Contains(t, err.Error(), "Temporal at "+addr+" speaks TLS and we spoke plain gRPC: give --tls (env TEMPORAL_TLS)")

	err = dial(t, Settings{Address: addr, TLS: true})
	t.Log(err)
	require.ErrorIs(t, err, ErrTLS)
	require.Contains(t, err.Error(), "TLS handshake with Temporal at "+addr+" failed: x509: certificate signed by unknown authority")
	require.Contains(t, err.Error(), "--tls-ca-file (env TEMPORAL_TLS_SERVER_CA_CERT_PATH)")

	err = dial(t, Settings{Address: addr, ServerCAFile: p.caFile})
	t.Log(err)
	require.ErrorIs(t, err, ErrTLS)
	require.Contains(t, err.Error(), "--tls-cert-file and --tls-key-file")

	wrongName := good
	wrongName.ServerName = "other.test"
	err = dial(t, wrongName)
	t.Log(err)
	require.ErrorIs(t, err, ErrTLS)
	require.Contains(t, err.Error(), "set --tls-server-name (env TEMPORAL_TLS_SERVER_NAME)")

	other := newTestPKI(t)
	stranger := good
	stranger.ClientCertFile, stranger.ClientKeyFile = other.clientCertFile, other.clientKeyFile
	err = dial(t, stranger)
	t.Log(err)
	require.ErrorIs(t, err, ErrTLS)
	require.Contains(t, err.Error(), "the server refused the client certificate of --tls-cert-file "+other.clientCertFile)
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// TLS against a plain server says the server speaks plain gRPC.
func TestDialWithTLSToAPlainServer(t *testing.T) {
	clearEnv(t)
	addr := serve(t, nil, &fakeFrontend{})
	err := dial(t, Settings{Address: addr, TLS: true})
	t.Log(err)
	require.ErrorIs(t, err, ErrTLS)
	require.Contains(t, err.Error(), "the server speaks plain gRPC")
}

// The API key travels as Temporal's bearer header; a wrong one is "refused our credentials" naming where
// the key came from, not the key; a namespace missing or forbidden is said as such.
func TestDialWithAnAPIKey(t *testing.T) {
	clearEnv(t)
	p := newTestPKI(t)
	addr := serve(t, p.serverTLS(t, false), &fakeFrontend{apiKey: secretKey})
	keyPath := filepath.Join(t.TempDir(), "api-key")
	require.NoError(t, os.WriteFile(keyPath, []byte(secretKey+"\n"), 0o600))
	s := Settings{Address: addr, ServerCAFile: p.caFile, APIKeyFile: keyPath}
	require.NoError(t, dial(t, s))

	require.NoError(t, os.WriteFile(keyPath, []byte("expired-key\n"), 0o600))
	err := dial(t, s)
	t.Log(err)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Contains(t, err.Error(), "Temporal at "+addr+" refused our credentials")
	require.Contains(t, err.Error(), "check the API key in --api-key-file "+keyPath)
	require.NotContains(t, err.Error(), "expired-key")

	s.APIKeyFile = ""
	t.Setenv(EnvAPIKey, secretKey)
	require.NoError(t, dial(t, s))

	s.Namespace = "missing"
	err = dial(t, s)
	require.ErrorIs(t, err, ErrNamespaceNotFound)
	require.EqualError(t, err, `Temporal at `+addr+` has no namespace "missing": check --temporal-namespace (env TEMPORAL_NAMESPACE)`)

	s.Namespace = "forbidden"
	err = dial(t, s)
	t.Log(err)
	require.ErrorIs(t, err, ErrPermissionDenied)
	require.Contains(t, err.Error(), `denied access to namespace "forbidden"`)
	require.Contains(t, err.Error(), "the API key in TEMPORAL_API_KEY")
	require.NotContains(t, err.Error(), secretKey)
	require.False(t, errors.Is(err, ErrUnreachable))
}
