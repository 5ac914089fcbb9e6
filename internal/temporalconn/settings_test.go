package temporalconn

import (
	"context"
	"crypto/tls"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/internal/codec"
)

const secretKey = "tmprl-super-secret-api-key"

// clearEnv unsets every variable the package reads, so the developer's own Temporal setup cannot leak in.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{EnvTLS, EnvServerCA, EnvClientCert, EnvClientKey, EnvServerName, EnvDisableHostVerification, EnvAPIKey, EnvAPIKeyFile, codec.EnvKeyFile, codec.EnvRequireEncrypted} {
		t.Setenv(k, "")
	}
}

func parseStd(t *testing.T, args ...string) (Settings, error) {
	t.Helper()
	s := Settings{Address: "127.0.0.1:7233", Namespace: "default"}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.AddFlags(fs)
	return s, fs.Parse(args)
}

func parsePosix(t *testing.T, args ...string) (Settings, error) {
	t.Helper()
	s := Settings{Address: "127.0.0.1:7233", Namespace: "default"}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.AddPFlags(fs)
	return s, fs.Parse(args)
}

// Both flag packages take the same names and the same environment variables, Temporal's own, with the
// flag winning; --tls stands alone as a boolean should.
func TestFlagsDefaultFromTemporalsEnvironmentVariables(t *testing.T) {
	for name, parse := range map[string]func(*testing.T, ...string) (Settings, error){"flag": parseStd, "pflag": parsePosix} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			s, err := parse(t)
			require.NoError(t, err)
			require.False(t, s.TLS)
			require.False(t, s.TLSDisabled)

			t.Setenv(EnvTLS, "true")
			t.Setenv(EnvServerCA, "/env/ca.pem")
			t.Setenv(EnvClientCert, "/env/tls.crt")
			t.Setenv(EnvClientKey, "/env/tls.key")
			t.Setenv(EnvServerName, "temporal.internal")
			t.Setenv(EnvDisableHostVerification, "1")
			t.Setenv(EnvAPIKeyFile, "/env/api-key")
			s, err = parse(t)
			require.NoError(t, err)
			require.Equal(t, Settings{Address: "127.0.0.1:7233", Namespace: "default", TLS: true, ServerCAFile: "/env/ca.pem",
				ClientCertFile: "/env/tls.crt", ClientKeyFile: "/env/tls.key", ServerName: "temporal.internal",
				DisableHostVerification: true, APIKeyFile: "/env/api-key"}, s)

			s, err = parse(t, "--tls=false", "--tls-ca-file", "/f/ca.pem", "--tls-cert-file", "/f/tls.crt", "--tls-key-file", "/f/tls.key",
				"--tls-server-name", "t.example", "--tls-disable-host-verification=false", "--api-key-file", "/f/key")
			require.NoError(t, err)
			require.Equal(t, Settings{Address: "127.0.0.1:7233", Namespace: "default", TLSDisabled: true, ServerCAFile: "/f/ca.pem",
				ClientCertFile: "/f/tls.crt", ClientKeyFile: "/f/tls.key", ServerName: "t.example", APIKeyFile: "/f/key"}, s)

			clearEnv(t)
			s, err = parse(t, "--tls")
			require.NoError(t, err)
			require.True(t, s.TLS)
		})
	}
}

// TEMPORAL_TLS=yes is no boolean envconfig knows; taken as false it would connect in the clear, so it is
// an error until the flag overrides it.
func TestAnUnreadableTLSVariableIsAnErrorUnlessTheFlagIsGiven(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvTLS, "yes")
	s, err := parseStd(t)
	require.NoError(t, err)
	_, err = s.ClientOptions(nil)
	require.EqualError(t, err, `--tls: TEMPORAL_TLS="yes": want true, false, 1 or 0`)
	s, err = parseStd(t, "--tls")
	require.NoError(t, err)
	_, err = s.ClientOptions(nil)
	require.NoError(t, err)
}

// There is no flag that takes a secret: the API key has only a file flag and an environment variable.
func TestNoFlagTakesTheAPIKeyItself(t *testing.T) {
	clearEnv(t)
	_, err := parseStd(t, "--api-key", secretKey)
	require.Error(t, err)
	_, err = parsePosix(t, "--api-key", secretKey)
	require.Error(t, err)
}

// The CA, the client certificate and the server name land in one tls.Config; the certificate is read
// at each handshake, so one renewed on disk is presented without a restart.
func TestTLSSettingsBuildTheTLSConfig(t *testing.T) {
	clearEnv(t)
	p := newTestPKI(t)
	s := Settings{Address: "temporal.test:7233", Namespace: "prod", ServerCAFile: p.caFile,
		ClientCertFile: p.clientCertFile, ClientKeyFile: p.clientKeyFile, ServerName: "temporal.test"}
	opts, err := s.ClientOptions(nil)
	require.NoError(t, err)
	require.Equal(t, "temporal.test:7233", opts.HostPort)
	require.Equal(t, "prod", opts.Namespace)
	conf := opts.ConnectionOptions.TLS
	require.NotNil(t, conf)
	require.Equal(t, "temporal.test", conf.ServerName)
	require.False(t, conf.InsecureSkipVerify)
	require.True(t, conf.RootCAs.Equal(p.pool))
	require.Nil(t, opts.Credentials)

	cert, err := conf.GetClientCertificate(&tls.CertificateRequestInfo{})
	require.NoError(t, err)
	require.Equal(t, "flotilla-worker", cert.Leaf.Subject.CommonName)

	// Rotation: the next handshake reads the files again.
	other := newTestPKI(t)
	copyFile(t, other.serverCertFile, p.clientCertFile)
	copyFile(t, other.serverKeyFile, p.clientKeyFile)
	cert, err = conf.GetClientCertificate(&tls.CertificateRequestInfo{})
	require.NoError(t, err)
	require.Equal(t, "temporal.test", cert.Leaf.Subject.CommonName)

	// --tls alone checks the server against the system's roots.
	opts, err = Settings{Address: "x.tmprl.cloud:7233", TLS: true}.ClientOptions(nil)
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS)
	require.Nil(t, opts.ConnectionOptions.TLS.RootCAs)

	opts, err = Settings{Address: "a:1", ServerCAFile: p.caFile, DisableHostVerification: true}.ClientOptions(nil)
	require.NoError(t, err)
	require.True(t, opts.ConnectionOptions.TLS.InsecureSkipVerify, "only when asked")

	opts, err = Settings{Address: "a:1"}.ClientOptions(nil)
	require.NoError(t, err)
	require.Nil(t, opts.ConnectionOptions.TLS, "plain gRPC, as the dev server wants")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

// Each mistake is named by its flag and file; none of them prints what a file holds.
func TestBadTLSSettingsNameTheFlagAndFile(t *testing.T) {
	clearEnv(t)
	p := newTestPKI(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.pem")
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate"), 0o600))
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{ClientCertFile: missing, ClientKeyFile: p.clientKeyFile}, "--tls-cert-file " + missing + ": no such file or directory"},
		{Settings{ClientCertFile: p.clientCertFile, ClientKeyFile: missing}, "--tls-key-file " + missing + ": no such file or directory"},
		{Settings{ClientCertFile: p.clientCertFile}, "--tls-cert-file and --tls-key-file go together: give both or neither"},
		{Settings{ClientKeyFile: p.clientKeyFile}, "--tls-cert-file and --tls-key-file go together: give both or neither"},
		{Settings{ServerCAFile: missing}, "--tls-ca-file " + missing + ": no such file or directory"},
		{Settings{ServerCAFile: junk}, "--tls-ca-file " + junk + ": no PEM certificate in it"},
		{Settings{ClientCertFile: p.clientCertFile, ClientKeyFile: p.serverKeyFile},
			"--tls-cert-file " + p.clientCertFile + " and --tls-key-file " + p.serverKeyFile + ": tls: private key does not match public key"},
		{Settings{TLSDisabled: true, ServerCAFile: p.caFile}, "--tls=false (or TEMPORAL_TLS=false) turns TLS off, yet --tls-ca-file configures it: drop one"},
		{Settings{APIKeyFile: missing}, "--api-key-file " + missing + ": no such file or directory"},
	} {
		tc.s.Address = "127.0.0.1:7233"
		_, err := tc.s.ClientOptions(nil)
		require.EqualError(t, err, tc.want)
	}
	_, err := Settings{}.ClientOptions(nil)
	require.EqualError(t, err, "--address (env TEMPORAL_ADDRESS) is empty: give Temporal's frontend host:port")
}

// An API key comes from its file, read again when it changes, or from TEMPORAL_API_KEY; either turns TLS
// on, as Temporal Cloud needs, unless TLS was turned off on purpose. The key shows in no error and no
// String.
func TestTheAPIKeyComesFromAFileOrTheEnvironmentAndIsNeverShown(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "api-key")
	require.NoError(t, os.WriteFile(keyPath, []byte(secretKey+"\n"), 0o600))

	s := Settings{Address: "ns.tmprl.cloud:7233", Namespace: "ns", APIKeyFile: keyPath}
	opts, err := s.ClientOptions(nil)
	require.NoError(t, err)
	require.NotNil(t, opts.Credentials)
	require.NotNil(t, opts.ConnectionOptions.TLS, "an API key implies TLS")
	k := &keyFile{path: keyPath}
	got, err := k.get(context.Background())
	require.NoError(t, err)
	require.Equal(t, secretKey, got, "the trailing newline is no part of the key")
	require.NoError(t, os.WriteFile(keyPath, []byte("rotated-key-longer\n"), 0o600))
	got, err = k.get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "rotated-key-longer", got)
	require.NotContains(t, s.String(), secretKey)
	require.Contains(t, s.String(), "API key from "+keyPath)

	for _, bad := range []string{"", "\n", secretKey + " " + secretKey} {
		require.NoError(t, os.WriteFile(keyPath, []byte(bad), 0o600))
		_, err = s.ClientOptions(nil)
		require.Error(t, err)
		require.NotContains(t, err.Error(), secretKey)
		require.Contains(t, err.Error(), "--api-key-file "+keyPath)
	}

	t.Setenv(EnvAPIKey, secretKey)
	s = Settings{Address: "ns.tmprl.cloud:7233", Namespace: "ns"}
	opts, err = s.ClientOptions(nil)
	require.NoError(t, err)
	require.NotNil(t, opts.Credentials)
	require.NotNil(t, opts.ConnectionOptions.TLS)
	require.Equal(t, "ns.tmprl.cloud:7233 namespace ns, TLS, API key from TEMPORAL_API_KEY", s.String())

	s.TLSDisabled = true
	opts, err = s.ClientOptions(nil)
	require.NoError(t, err)
	require.Nil(t, opts.ConnectionOptions.TLS)
	require.True(t, opts.ConnectionOptions.TLSDisabled, "else the SDK turns TLS on for the key")

	s = Settings{Address: "ns.tmprl.cloud:7233", APIKeyFile: filepath.Join(dir, "missing")}
	_, err = s.ClientOptions(nil)
	require.NotContains(t, err.Error(), secretKey)
	require.NotContains(t, s.String(), secretKey)
}
