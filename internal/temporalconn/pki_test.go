package temporalconn

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// testPKI is testpki's CA, server certificate (for loopback and temporal.test) and a client certificate,
// written as PEM files for the settings that name them.
type testPKI struct {
	caFile, serverCertFile, serverKeyFile, clientCertFile, clientKeyFile string
	pool                                                                 *x509.CertPool
	pki                                                                  *testpki.PKI
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	pki, err := testpki.NewNamed("temporal.test")
	require.NoError(t, err)
	clientCert, clientKey, err := pki.IssueClient("flotilla-worker")
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	return &testPKI{
		caFile:         write("ca.pem", pki.CAPEM),
		serverCertFile: write("server.pem", pki.CertPEM), serverKeyFile: write("server-key.pem", pki.KeyPEM),
		clientCertFile: write("client.pem", clientCert), clientKeyFile: write("client-key.pem", clientKey),
		pool: pki.Pool(), pki: pki,
	}
}

// serverTLS serves the server certificate and, with mTLS, wants a client certificate from the CA.
func (p *testPKI) serverTLS(t *testing.T, mTLS bool) *tls.Config {
	t.Helper()
	conf, err := p.pki.ServerConfig()
	require.NoError(t, err)
	if mTLS {
		conf.ClientAuth, conf.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	return conf
}
