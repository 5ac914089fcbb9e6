package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/flotilla-gitops/flotilla/internal/codec"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// With --codec-key-file on the worker, an agent and the CLI, what travels through Temporal is ciphertext: the
// server's raw histories hold neither a cluster's values file nor a fleet.yaml's values, while the
// deployment gets both. The codec server gives them back to `temporal workflow show --codec-endpoint`,
// and a CLI without the key is told which flag it lacks.
func TestEncryptedPayloadsKeepValuesOutOfHistoriesAndTheCodecServerDecodesThem(t *testing.T) {
	t.Parallel()
	const clusterCanary, fleetCanary = "plaintext-canary-7c1f", "fleetyaml-canary-3b9e"
	keys := filepath.Join(t.TempDir(), "codec-keys.yaml")
	require.NoError(t, os.WriteFile(keys, []byte(fmt.Sprintf("keys:\n- id: e2e-1\n  key: %s\n",
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, codec.KeySize)))), 0o600))

	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}, CodecKeyFile: keys})
	repo := s.NewRepo(map[string]string{
		"web/fleet.yaml":                     "defaultNamespace: web\nhelm:\n  chart: ./chart\n  values:\n    marker: ${ .ClusterValues.marker }\n    greeting: " + fleetCanary + "\n",
		"web/chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  marker: {{ .Values.marker | quote }}\n  greeting: {{ .Values.greeting | quote }}\n",
	})
	// The values file of `cluster add --values`, which the inventory carries to the worker.
	s.AddCluster("a", "a", map[string]string{"env": "dev"}, map[string]any{"marker": clusterCanary})
	// A pull-mode cluster, whose agent reads and writes the same payloads with the same keys, and takes no
	// payload in clear: whatever it acts on, the installation's keyring encrypted.
	s.AddAgentCluster("b", map[string]string{"env": "dev"}, map[string]any{"marker": clusterCanary})
	s.StartAgent("b", "b", "--codec-key-file", keys, "--require-encrypted-payloads")
	s.Apply(harness.GitRepoYAML("sealed", repo.URL(), "  paths: [web]\n  targets: [{clusterSelector: {matchLabels: {env: dev}}}]\n"))
	st := s.WaitStatus("sealed", 3*time.Minute, "Ready", harness.AllReady)
	require.Equal(t, 2, st.DesiredReadyClusters)
	for _, c := range []string{"a", "b"} {
		require.Equal(t, map[string]string{"marker": clusterCanary, "greeting": fleetCanary}, s.ConfigMapData(c, "web", "web"),
			"both values reached cluster %s, so both went through the worker or its agent", c)
	}

	for _, canary := range []string{clusterCanary, fleetCanary} {
		found, err := s.HistoriesContaining(canary)
		require.NoError(t, err)
		require.Empty(t, found, "raw histories holding %q", canary)
	}
	sealed, err := s.HistoriesContaining(codec.MetadataEncodingEncrypted)
	require.NoError(t, err)
	require.NotEmpty(t, sealed, "payloads are marked encrypted")

	// The CLI with the key reads the status; without it, it says what it lacks.
	require.Contains(t, s.CLIRun("status", "sealed"), "Ready")
	res := harness.RunCLI(t, s.Address(), append(s.ConnArgs(), "status", "sealed")...)
	require.NotEqual(t, 0, res.ExitCode)
	require.Contains(t, res.Stderr, `payload encrypted with key ID "e2e-1", and no key file was given: give --codec-key-file`)

	port, err := proc.FreePort()
	require.NoError(t, err)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	logFile := filepath.Join(s.Dir, "codec-server.log")
	srv, err := proc.Start(proc.Spec{Name: "codec server", Path: filepath.Join(harness.BinDir(), "flotilla"), LogFile: logFile,
		Args: []string{"codec-server", "--codec-key-file", keys, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--cors-origin", "http://localhost:8233"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
	require.Eventually(t, func() bool {
		resp, err := http.Post(endpoint+"/decode", "application/json", strings.NewReader(`{"payloads":[]}`))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, harness.Patience(30*time.Second), 100*time.Millisecond, "codec server answering; log: %s", proc.Tail(logFile, 20))
	banner, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(banner), "temporal workflow show --workflow-id ID --codec-endpoint "+endpoint)

	// Every workflow's history as `temporal` shows it, with and without the codec server: the canary is
	// only in the decoded ones.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	page, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{})
	require.NoError(t, err)
	var decodedIn []string
	for _, e := range page.GetExecutions() {
		id, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
		show := func(extra ...string) string {
			args := append([]string{"workflow", "show", "--workflow-id", id, "--run-id", run, "--output", "json"}, extra...)
			out, err := s.TemporalCommand(ctx, args...).Output()
			require.NoError(t, err, "temporal %s", strings.Join(args, " "))
			return string(out)
		}
		require.False(t, holds(show(), clusterCanary), "%s shown without the codec server", id)
		if holds(show("--codec-endpoint", endpoint), clusterCanary) {
			decodedIn = append(decodedIn, id)
		}
	}
	require.NotEmpty(t, decodedIn, "some history, decoded by the codec server, holds the cluster's values")
	t.Logf("decoded histories holding the cluster's values: %v", decodedIn)
}

// holds says whether text is in out, temporal's JSON, either as it is or in a base64 string, as the
// CLI shows a payload's data.
func holds(out, text string) bool {
	if strings.Contains(out, text) {
		return true
	}
	var doc any
	if json.Unmarshal([]byte(out), &doc) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			b, err := base64.StdEncoding.DecodeString(v)
			return err == nil && bytes.Contains(b, []byte(text))
		case []any:
			for _, x := range v {
				if walk(x) {
					return true
				}
			}
		case map[string]any:
			for _, x := range v {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	return walk(doc)
}
