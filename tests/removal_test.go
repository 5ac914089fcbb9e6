package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// releaseGone is a condition: the GitRepo has no release of that name on the backing cluster.
func releaseGone(s *harness.Stack, backing, gitRepo, name string) func() bool {
	return func() bool {
		rels, err := s.ListReleases(backing, gitRepo)
		if err != nil {
			return false
		}
		_, there := rels[name]
		return !there
	}
}

// What leaves a cluster is uninstalled, and only that: a bundle deleted from the repository or told not
// to deploy there goes; a bundle whose fleet.yaml stops loading stays where it ran (before, the plan fell
// back to the GitRepo's targets, dropped the clusters only its overrideTargets reached and uninstalled it
// there); a commit that leaves no bundle at all is held until a person approves it.
func TestWhatLeavesAClusterIsUninstalledAndOnlyThat(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "one"}, {Name: "two"}}})
	s.AddCluster("one", "one", nil, nil)
	s.AddCluster("two", "two", nil, nil)
	edge := "overrideTargets:\n- clusterName: two\n"
	repo := s.NewRepo(map[string]string{
		"web/fleet.yaml":  "defaultNamespace: web\n",
		"web/cm.yaml":     fmt.Sprintf(configMapV, "web"),
		"api/fleet.yaml":  "defaultNamespace: api\n",
		"api/cm.yaml":     fmt.Sprintf(configMapV, "api"),
		"kept/fleet.yaml": "defaultNamespace: kept\nkeepResources: true\n",
		"kept/cm.yaml":    fmt.Sprintf(configMapV, "kept"),
		"edge/fleet.yaml": edge,
		"edge/cm.yaml":    fmt.Sprintf(configMapV, "edge"),
		"README.md":       "# fleet\n",
	})
	s.Apply(harness.GitRepoYAML("shop", repo.URL(), "  targets: [{clusterName: one}]\n"))
	s.WaitStatus("shop", 2*time.Minute, "Ready on both clusters", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.DesiredReadyClusters == 2
	})
	require.Contains(t, s.Releases("one", "shop"), "shop-api")
	require.Contains(t, s.Releases("two", "shop"), "shop-edge")

	// The api bundle is deleted from the repository: its release goes, web's is not touched. So does
	// kept's, whose own fleet.yaml says keepResources: its objects stay.
	repo.Commit(map[string]string{"api/fleet.yaml": "", "api/cm.yaml": "", "kept/fleet.yaml": "", "kept/cm.yaml": ""}, "remove api and kept")
	require.Eventually(t, releaseGone(s, "one", "shop", "shop-api"), harness.Patience(2*time.Minute), 200*time.Millisecond, "api uninstalled")
	require.Eventually(t, releaseGone(s, "one", "shop", "shop-kept"), harness.Patience(2*time.Minute), 200*time.Millisecond, "kept uninstalled")
	require.Equal(t, "kept", s.ConfigMapData("one", "kept", "app")["v"], "fleet.yaml keepResources keeps the objects")
	_, err := s.Kube("one").CoreV1().ConfigMaps("api").Get(context.Background(), "app", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "api's objects are gone: %v", err)
	require.Len(t, s.History("one", "web", "shop-web"), 1, "web was not redeployed")

	// edge's fleet.yaml stops loading: it stays where it ran, cluster two, which only its overrideTargets
	// reach, with its error and the release it has; web moves on to the new commit.
	bad := repo.Commit(map[string]string{"edge/fleet.yaml": edge + "helm:\n  relaseName: edge\n"}, "typo")
	s.WaitStatus("shop", 2*time.Minute, "edge failing on two at the new commit", func(st api.GitRepoStatus) bool {
		return st.Commit == bad && bundleFailing("two", "shop-edge", `edge/fleet.yaml: line 4: unknown key "relaseName"`)(st)
	})
	require.Contains(t, s.Releases("two", "shop"), "shop-edge")
	require.Equal(t, "edge", s.ConfigMapData("two", "default", "app")["v"])

	// Fixed, and web told not to deploy to cluster one: web goes from there.
	repo.Commit(map[string]string{
		"edge/fleet.yaml": edge,
		"web/fleet.yaml":  "defaultNamespace: web\ntargetCustomizations:\n- name: not-one\n  clusterName: one\n  doNotDeploy: true\n",
	}, "web not on one")
	require.Eventually(t, releaseGone(s, "one", "shop", "shop-web"), harness.Patience(2*time.Minute), 200*time.Millisecond, "web uninstalled from one")

	// A commit that leaves only the README: held, nothing uninstalled, until approved.
	empty := repo.Commit(map[string]string{"edge/fleet.yaml": "", "edge/cm.yaml": "", "web/fleet.yaml": "", "web/cm.yaml": ""}, "oops")
	st := s.WaitStatus("shop", 2*time.Minute, "the plan held", func(st api.GitRepoStatus) bool { return st.Held != "" })
	require.Contains(t, st.Held, "commit "+api.ShortCommit(empty)+" has no bundles under the GitRepo's paths")
	require.Contains(t, st.Message, "flotilla sync shop --allow-removal")
	require.NotEqual(t, api.StateReady, st.State)
	require.NotEqual(t, empty, st.Commit, "the clusters keep the commit before it")
	require.Contains(t, s.Releases("two", "shop"), "shop-edge")
	res := s.CLI("status", "shop", "--wait", "--timeout", "1s")
	require.Equal(t, 3, res.ExitCode, "a held plan is not ready: %s", res.Stderr)

	s.CLIRun("sync", "shop", "--allow-removal", "--commit", empty[:8])
	require.Eventually(t, s.NoReleases("two", "shop"), harness.Patience(2*time.Minute), 200*time.Millisecond, "approved: edge uninstalled")
	s.WaitStatus("shop", 2*time.Minute, "the approved commit", func(st api.GitRepoStatus) bool {
		return st.Commit == empty && st.Held == ""
	})
}
