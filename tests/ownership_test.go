package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// bundleFailing is a condition on a GitRepo's status: the bundle on the cluster is ErrApplied with a
// message containing want.
func bundleFailing(cluster, bundle, want string) func(api.GitRepoStatus) bool {
	return func(st api.GitRepoStatus) bool {
		c, ok := harness.Cluster(st, cluster)
		if !ok {
			return false
		}
		for _, b := range c.Bundles {
			if b.Name == bundle && b.State == api.StateErrApplied && strings.Contains(b.Message, want) {
				return true
			}
		}
		return false
	}
}

// Fleet derives bundle and release names from the GitRepo's name and the bundle's path, so GitRepo "a"
// with path b/c and GitRepo "a-b" with path c both name theirs "a-b-c". The second must neither take the
// first's release over (before, the two overwrote each other at every check) nor uninstall it when it is
// deleted; a release no Flotilla GitRepo installed is not taken either, unless the bundle asks to adopt it.
func TestOneGitRepoNeverTakesOverAnothersRelease(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}}})
	s.AddCluster("k", "k", nil, nil)
	first := s.NewRepo(map[string]string{"b/c/cm.yaml": fmt.Sprintf(configMapV, "first")})
	second := s.NewRepo(map[string]string{"c/cm.yaml": fmt.Sprintf(configMapV, "second")})
	s.Apply(harness.GitRepoYAML("a", first.URL(), "  paths: [b/c]\n  targets: [{clusterName: k}]\n"))
	s.WaitStatus("a", 2*time.Minute, "Ready", harness.AllReady)

	s.Apply(harness.GitRepoYAML("a-b", second.URL(), "  paths: [c]\n  targets: [{clusterName: k}]\n"))
	s.WaitStatus("a-b", 2*time.Minute, "a-b refused the release", bundleFailing("k", "a-b-c",
		`release default/a-b-c belongs to GitRepo "a" (bundle "a-b-c"): refusing to take it over`))
	require.Equal(t, "first", s.ConfigMapData("k", "default", "app")["v"], "the first GitRepo's object is untouched")
	require.Len(t, s.History("k", "default", "a-b-c"), 1, "no revision was written over it")
	require.Equal(t, "a", s.Releases("k", "a")["a-b-c"].Labels["flotilla.dev/gitrepo"])

	// Deleting the second GitRepo removes nothing of the first.
	s.CLIRun("delete", "a-b")
	require.Eventually(t, func() bool {
		return s.CountWorkflows(`WorkflowId = "gitrepo/a-b" AND ExecutionStatus = "Running"`) == 0
	}, harness.Patience(2*time.Minute), 500*time.Millisecond, "the second GitRepo ends")
	require.Contains(t, s.Releases("k", "a"), "a-b-c")
	require.True(t, harness.AllReady(mustStatus(t, s, "a")))

	// A release installed by hand under a bundle's name is refused, then adopted with helm.takeOwnership.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.Helm("k").Install(ctx, agentclient.ApplyRequest{Name: "shop-web", Namespace: "web", CreateNamespace: true,
		Chart: &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "by-hand", Version: "1.0.0"},
			Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: by-hand\n")}}}})
	require.NoError(t, err)
	shop := s.NewRepo(map[string]string{"web/fleet.yaml": "defaultNamespace: web\n", "web/cm.yaml": fmt.Sprintf(configMapV, "shop")})
	s.Apply(harness.GitRepoYAML("shop", shop.URL(), "  paths: [web]\n  targets: [{clusterName: k}]\n"))
	s.WaitStatus("shop", 2*time.Minute, "shop refused the release", bundleFailing("k", "shop-web",
		"release web/shop-web was not installed by Flotilla: refusing to take it over"))
	require.Len(t, s.History("k", "web", "shop-web"), 1)

	shop.Commit(map[string]string{"web/fleet.yaml": "defaultNamespace: web\nhelm:\n  takeOwnership: true\n"}, "adopt the release")
	s.WaitStatus("shop", 2*time.Minute, "Ready after adopting", harness.AllReady)
	require.Equal(t, "shop", s.Releases("k", "shop")["shop-web"].Labels["flotilla.dev/gitrepo"])
	require.Equal(t, "shop", s.ConfigMapData("k", "web", "app")["v"])
}

func mustStatus(t *testing.T, s *harness.Stack, name string) api.GitRepoStatus {
	st, err := s.Status(name)
	require.NoError(t, err)
	return st
}
