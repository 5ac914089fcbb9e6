package tests

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// render runs `bin/flotilla render ...` against the stack, with a checkout cache of the test's own.
func render(s *harness.Stack, args ...string) devenv.CLIResult {
	return s.CLI(append([]string{"render", "--cache-dir", filepath.Join(s.Dir, "render-cache")}, args...)...)
}

// `flotilla render --gitrepo` previews the running GitRepo at its commit for every targeted cluster of the
// inventory: the cluster lacking a template value fails by name, with its bundle and key, the other passes
// with the objects it would get, and the exit code says a cluster failed.
func TestRenderGitRepoPreviewsEveryTargetedCluster(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	repo := s.NewRepo(fqdnBundle())
	s.AddCluster("edge-1", "a", map[string]string{"region": "edge"}, fqdnValues("edge-1.example.com"))
	s.AddCluster("edge-2", "b", map[string]string{"region": "edge"}, fqdnValues(""))
	s.Apply(harness.GitRepoYAML("edges", repo.URL(), `  paths: [web]
  correctDrift: {enabled: true}
  forceSyncGeneration: 2
  targets:
  - clusterSelector: {matchLabels: {region: edge}}
`))
	st := s.WaitStatus("edges", 2*time.Minute, "planned on both clusters", func(st api.GitRepoStatus) bool {
		return st.Commit != "" && st.DesiredReadyClusters == 2
	})

	res := render(s, "--gitrepo", "edges")
	t.Logf("flotilla render --gitrepo edges\nstdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
	require.Equal(t, 1, res.ExitCode, "a failing cluster fails the command; stderr:\n%s", res.Stderr)
	require.Contains(t, res.Stderr, `PASS cluster "edge-1": 1 bundle, 1 object`)
	require.Contains(t, res.Stderr, `FAIL cluster "edge-2": bundle "edges-web"`)
	require.Contains(t, res.Stderr, `map has no entry for key "fqdn"`)
	require.Contains(t, res.Stderr, "1 of 2 clusters fail to render: edge-2")
	require.NotContains(t, res.Stderr, "edge-1.example.com", "objects go to stdout only")

	require.Contains(t, res.Stdout, "# Cluster: edge-1\n# Source: bundle edges-web (web): release edges-web in namespace web\n"+
		"# Options: correctDrift=true keepResources=false paused=false syncGeneration=2\n", "the GitRepo's options, as the worker applies them")
	require.Contains(t, res.Stdout, `fqdn: edge-1.example.com`)
	require.Contains(t, res.Stdout, "# Cluster: edge-2\n# Source: bundle edges-web (web): FAILED: ")
	require.NotContains(t, res.Stdout, "flotilla.dev/")

	// One cluster at a time: a clean stream for that cluster, and success when it renders.
	res = render(s, "--gitrepo", "edges", "--cluster", "edge-1")
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Contains(t, res.Stdout, "kind: ConfigMap")
	require.NotContains(t, res.Stdout, "edge-2")
	require.Contains(t, res.Stderr, `PASS cluster "edge-1"`)

	// The render agrees with what the worker deployed from the same commit.
	s.WaitStatus("edges", 2*time.Minute, "edge-1 Ready", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "edge-1")
		return one.State == api.StateReady
	})
	require.Equal(t, "edge-1.example.com", s.ConfigMapData("a", "web", "web")["fqdn"])
	require.NotEmpty(t, st.Commit)

	res = render(s, "--gitrepo", "edges", "--cluster", "nowhere")
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Stderr, `cluster "nowhere" is not registered`)
}
