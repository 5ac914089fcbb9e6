package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// A bundle that stops rendering on a cluster (its value removed) keeps running there from the earlier
// commit. Its status must show that release, its objects and its commit beside the error, never "0/0".
func TestABundleThatStopsRenderingStillShowsWhatRuns(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	files := fqdnBundle()
	files["web/chart/templates/second.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-2\ndata:\n  n: \"2\"\n"
	repo := s.NewRepo(files)
	s.AddCluster("test", "a", nil, fqdnValues("test.example.com"))
	s.Apply(harness.GitRepoYAML("shop", repo.URL(), "  paths: [web]\n  targets: [{clusterName: test}]\n"))
	first := s.WaitStatus("shop", 2*time.Minute, "Ready", harness.AllReady)

	// The value goes away: the bundle cannot render for this cluster any more.
	s.AddCluster("test", "a", nil, fqdnValues(""))
	st := s.WaitStatus("shop", 2*time.Minute, "the bundle failing with its live release", func(st api.GitRepoStatus) bool {
		c, ok := harness.Cluster(st, "test")
		return ok && c.State == api.StateErrApplied && len(c.Bundles) == 1 && c.Bundles[0].ResourceCounts.DesiredReady > 0
	})
	c, _ := harness.Cluster(st, "test")
	b := c.Bundles[0]
	require.Equal(t, "shop-web", b.Name)
	require.Equal(t, 2, b.ResourceCounts.DesiredReady, "the two ConfigMaps still running")
	require.Equal(t, 2, b.ResourceCounts.Ready)
	require.Equal(t, 1, b.Revision)
	require.NotEmpty(t, b.Release)
	require.Contains(t, b.Message, "stuck at "+api.ShortCommit(first.Commit))
	require.Contains(t, b.Message, `map has no entry for key "fqdn"`)
	require.Equal(t, "test.example.com", s.ConfigMapData("a", "web", "web")["fqdn"], "nothing deployed was removed")

	out := s.CLIRun("status", "shop")
	require.Contains(t, out, "stuck at "+api.ShortCommit(first.Commit))
	require.True(t, strings.Contains(out, "2/2"), "the CLI shows the live objects:\n%s", out)
}
