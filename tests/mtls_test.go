package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/env/tempserver"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// A Temporal server (temporal-server, as operators deploy it) that requires mTLS: a worker that connects
// in plain gRPC, without a certificate or with one another CA signed exits at once, saying which; with the
// server's CA and a certificate its CA signed, given as flags to the worker and an agent and as Temporal's
// TEMPORAL_TLS_* variables to the CLI, a GitRepo deploys to a cluster of each and the CLI reports it.
func TestATemporalRequiringMTLSServesOnlyFlotillaWithACertificateItsCASigned(t *testing.T) {
	t.Parallel()
	harness.RequireBinaries(t)
	serverBin := filepath.Join(harness.BinDir(), "temporal-server")
	if _, err := os.Stat(serverBin); err != nil {
		t.Fatalf("%s missing: run `hack/build-tools.sh temporal-server`", serverBin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki, err := testpki.New()
	require.NoError(t, err)
	srv, err := tempserver.Start(ctx, tempserver.Options{Bin: serverBin, Dir: filepath.Join(dir, "temporal"), MTLS: pki})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.Stop()
		if t.Failed() {
			t.Logf("temporal-server's log:\n%s", proc.Tail(filepath.Join(dir, "temporal", "temporal-server.log"), 40))
		}
	})
	certFile, keyFile := writeClientCert(t, pki, filepath.Join(dir, "flotilla"), "flotilla")
	// A certificate the worker may present, that the server's CA did not sign.
	stranger, err := testpki.New()
	require.NoError(t, err)
	strangerCert, strangerKey := writeClientCert(t, stranger, filepath.Join(dir, "stranger"), "flotilla")

	// Refused: each try is a worker that must exit by itself, quickly, with an error naming the fault.
	refused := func(args ...string) string {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
		defer wcancel()
		args = append([]string{"--address", srv.Address(), "--cache-dir", filepath.Join(dir, "cache")}, args...)
		out, err := exec.CommandContext(wctx, filepath.Join(harness.BinDir(), "flotilla-worker"), args...).CombinedOutput()
		require.NoError(t, wctx.Err(), "the worker exits by itself:\n%s", out)
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "a non-zero exit:\n%s", out)
		return string(out)
	}
	out := refused()
	require.Contains(t, out, "Temporal at "+srv.Address()+" speaks TLS and we spoke plain gRPC: give --tls (env TEMPORAL_TLS)", out)

	out = refused("--tls-ca-file", srv.CAFile())
	require.Contains(t, out, "TLS handshake with Temporal at "+srv.Address()+" failed: remote error: tls: certificate required", out)
	require.Contains(t, out, "the server wants a client certificate: give --tls-cert-file and --tls-key-file", out)

	out = refused("--tls-ca-file", srv.CAFile(), "--tls-cert-file", strangerCert, "--tls-key-file", strangerKey)
	require.Contains(t, out, "TLS handshake with Temporal at "+srv.Address()+" failed: remote error: tls: unknown certificate authority", out)
	require.Contains(t, out, "the server refused the client certificate of --tls-cert-file "+strangerCert, out)

	// Served: the harness gives the worker and the agent --tls-ca-file, --tls-cert-file and --tls-key-file.
	// Cluster a is reached by the worker with its kubeconfig, e only by its agent.
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "e"}},
		Temporal: &temporalconn.Settings{Address: srv.Address(), ServerCAFile: srv.CAFile(), ClientCertFile: certFile, ClientKeyFile: keyFile}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"1\"\n"})
	s.AddCluster("a", "a", nil, nil)
	s.AddAgentCluster("e", nil, nil)
	s.StartAgent("e", "e")
	s.Apply(harness.GitRepoYAML("secure", repo.URL(), "  paths: [app]\n  targets: [{clusterName: a}, {clusterName: e}]\n"))
	s.WaitStatus("secure", 3*time.Minute, "Ready on a and e", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.ReadyClusters == 2
	})
	require.Equal(t, "1", s.ConfigMapData("a", "default", "app")["v"])
	require.Equal(t, "1", s.ConfigMapData("e", "default", "app")["v"], "applied by e's agent")

	// The CLI configured as `temporal` is, by environment alone, and refused without it.
	cli := devenv.CLI{Bin: filepath.Join(harness.BinDir(), "flotilla"), Address: srv.Address(), Env: []string{
		temporalconn.EnvServerCA + "=" + srv.CAFile(), temporalconn.EnvClientCert + "=" + certFile, temporalconn.EnvClientKey + "=" + keyFile}}
	res, err := cli.Exec(ctx, "status", "secure")
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "flotilla status secure: %s", res.Stderr)
	require.Contains(t, res.Stdout, "State Ready: 2/2 clusters ready", res.Stdout)
	res, err = cli.Exec(ctx, "cluster", "list")
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "flotilla cluster list: %s", res.Stderr)
	require.Contains(t, res.Stdout, s.K8s.Kubeconfig("a"), res.Stdout)
	require.Regexp(t, `(?m)^e\s.*\sagent\s+\S+ ago\s`, res.Stdout, "e's agent polled:\n%s", res.Stdout)

	cli.Env = nil
	res, err = cli.Exec(ctx, "status", "secure")
	require.NoError(t, err)
	require.NotEqual(t, 0, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, "speaks TLS and we spoke plain gRPC", res.Stderr)
}

// writeClientCert writes a client certificate for commonName that p's CA signed, and its key, into dir.
func writeClientCert(t *testing.T, p *testpki.PKI, dir, commonName string) (certFile, keyFile string) {
	t.Helper()
	cert, key, err := p.IssueClient(commonName)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	certFile, keyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	require.NoError(t, os.WriteFile(certFile, cert, 0o600))
	require.NoError(t, os.WriteFile(keyFile, key, 0o600))
	return certFile, keyFile
}
