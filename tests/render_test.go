package tests

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// renderCLI runs `bin/flotilla render ...` against the stack and returns stdout, stderr and the exit code.
func renderCLI(t *testing.T, s *harness.Stack, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"--address", s.Temporal.Address(), "render", "--cache-dir", filepath.Join(s.Dir, "render-cache")}, args...)
	cmd := exec.CommandContext(ctx, s.CLI.Bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return stdout.String(), stderr.String(), 0
}

// `flotilla render --gitrepo` previews the running GitRepo at its commit for every targeted cluster of the
// inventory: the cluster lacking a template value fails by name, with its bundle and key, the other passes
// with the objects it would get, and the exit code says a cluster failed.
func TestRenderGitRepoPreviewsEveryTargetedCluster(t *testing.T) {
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	repo := s.NewRepo(map[string]string{
		"web/fleet.yaml": `defaultNamespace: web
helm:
  chart: ./chart
  values:
    fqdn: ${ .ClusterValues.generated.cluster_metadata.fqdn }
`,
		"web/chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  fqdn: {{ .Values.fqdn | quote }}\n",
	})
	s.AddCluster("edge-1", "a", map[string]string{"region": "edge"},
		map[string]any{"generated": map[string]any{"cluster_metadata": map[string]any{"fqdn": "edge-1.example.com"}}})
	s.AddCluster("edge-2", "b", map[string]string{"region": "edge"},
		map[string]any{"generated": map[string]any{"cluster_metadata": map[string]any{}}})
	s.Apply(harness.GitRepoYAML("edges", repo.URL(), `  paths: [web]
  targets:
  - clusterSelector: {matchLabels: {region: edge}}
`))
	st := s.WaitStatus("edges", 2*time.Minute, "planned on both clusters", func(st api.GitRepoStatus) bool {
		return st.Commit != "" && st.DesiredReadyClusters == 2
	})

	stdout, stderr, code := renderCLI(t, s, "--gitrepo", "edges")
	t.Logf("flotilla render --gitrepo edges\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Equal(t, 1, code, "a failing cluster fails the command; stderr:\n%s", stderr)
	require.Contains(t, stderr, `PASS cluster "edge-1": 1 bundle, 1 object`)
	require.Contains(t, stderr, `FAIL cluster "edge-2": bundle "edges-web"`)
	require.Contains(t, stderr, `map has no entry for key "fqdn"`)
	require.Contains(t, stderr, "1 of 2 clusters fail to render: edge-2")
	require.NotContains(t, stderr, "edge-1.example.com", "objects go to stdout only")

	require.Contains(t, stdout, "# Cluster: edge-1\n# Source: bundle edges-web (web): release edges-web in namespace web\n")
	require.Contains(t, stdout, `fqdn: edge-1.example.com`)
	require.Contains(t, stdout, "# Cluster: edge-2\n# Source: bundle edges-web (web): FAILED: ")
	require.NotContains(t, stdout, "flotilla.dev/")

	// One cluster at a time: a clean stream for that cluster, and success when it renders.
	stdout, stderr, code = renderCLI(t, s, "--gitrepo", "edges", "--cluster", "edge-1")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "kind: ConfigMap")
	require.NotContains(t, stdout, "edge-2")
	require.Contains(t, stderr, `PASS cluster "edge-1"`)

	// The render agrees with what the worker deployed from the same commit.
	s.WaitStatus("edges", 2*time.Minute, "edge-1 Ready", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "edge-1")
		return one.State == api.StateReady
	})
	require.Equal(t, "edge-1.example.com", s.ConfigMapData("a", "web", "web")["fqdn"])
	require.NotEmpty(t, st.Commit)

	_, stderr, code = renderCLI(t, s, "--gitrepo", "edges", "--cluster", "nowhere")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `cluster "nowhere" is not registered`)
}
