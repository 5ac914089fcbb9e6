package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/tempdev"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// On a Temporal server Flotilla did not start (no search attributes defined), the worker creates the
// attributes it needs and deploys, instead of failing every workflow task in silence.
func TestTheWorkerSetsUpABareTemporalAndDeploys(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}, BareTemporal: true})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"1\"\n"})
	s.AddCluster("a", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("own", repo.URL(), "  paths: [app]\n  targets: [{clusterName: a}]\n"))
	s.WaitStatus("own", 2*time.Minute, "Ready", harness.AllReady)
	require.Equal(t, "1", s.ConfigMapData("a", "default", "app")["v"])
	require.Eventually(t, func() bool {
		return s.CountWorkflows(`WorkflowType = "GitRepoWorkflow" AND FlotillaGitRepo = "own" AND FlotillaState = "Ready"`) == 1
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "the Web UI finds it by its search attributes")
}

// An attribute that exists with another type cannot be used or created: the worker exits at once,
// naming it, rather than polling a namespace where every workflow task would fail.
func TestTheWorkerRefusesAConflictingSearchAttribute(t *testing.T) {
	t.Parallel()
	harness.RequireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, err := tempdev.Start(ctx, tempdev.Options{Bin: filepath.Join(harness.BinDir(), "temporal"), Dir: dir, Headless: true,
		SearchAttributes: map[string]string{"FlotillaRepo": "Int"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	out, err := exec.CommandContext(wctx, filepath.Join(harness.BinDir(), "flotilla-worker"), "--address", srv.Address(),
		"--cache-dir", filepath.Join(dir, "cache")).CombinedOutput()
	require.NoError(t, wctx.Err(), "the worker exits by itself:\n%s", out)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a non-zero exit:\n%s", out)
	require.Contains(t, string(out), "search attribute FlotillaRepo exists with type Int, Flotilla needs Keyword")

	// The CLI, asked about GitRepos on this namespace, says what is missing rather than printing nothing.
	res := harness.RunCLI(t, srv.Address(), "status", "shop")
	require.NotEqual(t, 0, res.ExitCode)
	said := res.Stdout + res.Stderr
	require.Contains(t, said, "search attribute FlotillaRepo exists with type Int, Flotilla needs Keyword")
	require.Contains(t, said, "lacks Flotilla's search attributes FlotillaCluster, FlotillaCommit")
	require.Contains(t, said, "temporal operator search-attribute create --namespace default --name FlotillaState --type Keyword")
}
