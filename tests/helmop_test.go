package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// helmOpYAML is a Fleet HelmOp deploying chart web by constraint from repo to every cluster, its message
// templated from each cluster's values.
func helmOpYAML(name, repo, release string) string {
	return fmt.Sprintf(`apiVersion: fleet.cattle.io/v1alpha1
kind: HelmOp
metadata:
  name: %s
spec:
  helm:
    repo: %s
    chart: web
    version: "^1.0"
    releaseName: %s
    values:
      message: ${ .ClusterValues.greeting }
  pollingInterval: 1s
  helmSecretName: charts
  targets:
  - clusterSelector: {}
`, name, repo, release)
}

// A HelmOp deploys a chart from a Helm repository with no git at all, through the same per-cluster
// workflows as a GitRepo: applied with `flotilla apply` or started with `temporal workflow start`, it
// templates per cluster (a cluster missing the value fails alone), moves every cluster to a newly
// published version at the next poll, and is listed by `flotilla get helmops` with its version, not by
// `get gitrepos`.
func TestHelmOpDeploysAChartWithoutGit(t *testing.T) {
	t.Parallel()
	repo, creds := startChartRepo(t)
	publish(t, repo, "web", "1.0.0")
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}},
		WorkerArgs: []string{"--credentials", creds}})
	greetedClusters(s, "k")
	out := s.CLIRun("apply", "-f", s.ApplyFile(helmOpYAML("hello", repo.URL, "hello")))
	require.Contains(t, out, "helmop/hello configured")

	webAt := func(st api.GitRepoStatus, cluster, version string) bool {
		return chartReadyAt(st, cluster, "hello", version)
	}
	st := s.WaitStatus("hello", 3*time.Minute, "1.0.0 Ready on one and two, failing on three alone", func(st api.GitRepoStatus) bool {
		three, _ := harness.Cluster(st, "three")
		return webAt(st, "one", "1.0.0") && webAt(st, "two", "1.0.0") && bundleState(three, "hello") == api.StateErrApplied
	})
	three, _ := harness.Cluster(st, "three")
	require.Contains(t, three.Message, `map has no entry for key "greeting"`)
	require.Equal(t, "hi-two", s.ConfigMapData("k", "two", "hello-web")["message"])

	// The same HelmOp started by hand, as Temporal users start workflows: its YAML as JSON under "helmOp".
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(helmOpYAML("hello2", repo.URL, "hello2")), &doc))
	input, err := json.Marshal(map[string]any{"helmOp": doc})
	require.NoError(t, err)
	cmd := s.TemporalCommand(t.Context(), "workflow", "start",
		"--task-queue", "flotilla", "--type", "GitRepoWorkflow", "--workflow-id", "gitrepo/hello2", "--input", string(input))
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outb)
	s.WaitStatus("hello2", 3*time.Minute, "hello2 Ready on one and two", func(st api.GitRepoStatus) bool {
		return webAt2(st, "one") && webAt2(st, "two")
	})

	// A version the constraint accepts is published: every cluster of both HelmOps moves to it.
	publish(t, repo, "web", "1.1.0")
	s.WaitStatus("hello", 2*time.Minute, "1.1.0 Ready on one and two", func(st api.GitRepoStatus) bool {
		return webAt(st, "one", "1.1.0") && webAt(st, "two", "1.1.0")
	})
	require.Equal(t, "1.1.0", s.ConfigMapData("k", "one", "hello-web")["version"])
	require.Len(t, s.History("k", "one", "hello"), 2)
	require.Eventually(t, func() bool {
		return s.ConfigMapData("k", "one", "hello2-web")["version"] == "1.1.0"
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "the HelmOp started by hand moves too")

	helmops := s.CLIRun("get", "helmops")
	require.Regexp(t, `hello\s+ErrApplied\s+\d/3\s+1\.1\.0`, helmops)
	require.Contains(t, helmops, "hello2")
	require.NotContains(t, s.CLIRun("get", "gitrepos"), "hello")
	require.Contains(t, s.CLIRun("status", "hello"), "HelmOp hello  spec ")
	preview := s.CLIRun("render", "--gitrepo", "hello", "--cluster", "two", "--credentials", creds)
	require.Contains(t, preview, "version 1.1.0", "render previews a running HelmOp as the worker renders it")
	require.Contains(t, preview, "message: hi-two")

	// A GitRepo may not take a HelmOp's name: both run as gitrepo/<name>.
	res := s.CLI("apply", "-f", s.ApplyFile(harness.GitRepoYAML("hello", "https://example.com/x.git", "")))
	require.NotEqual(t, 0, res.ExitCode)
	require.Contains(t, res.Stderr, `a HelmOp named "hello" runs in this workspace`)
	assertNowhere(t, s, chartRepoPassword)
}

// webAt2 says a cluster runs hello2's chart Ready.
func webAt2(st api.GitRepoStatus, cluster string) bool {
	c, _ := harness.Cluster(st, cluster)
	return bundleState(c, "hello2") == api.StateReady && !strings.Contains(c.Message, "error")
}
