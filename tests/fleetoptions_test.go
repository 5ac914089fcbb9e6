package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// A Fleet user's options work where Fleet reads them: correctDrift turned on in a bundle's fleet.yaml
// (under a GitRepo without it) restores an object deleted by hand, and raising the GitRepo's
// forceSyncGeneration redeploys every cluster once, a new Helm revision with nothing else changed, shown
// as each cluster's syncGeneration. Before, only the GitRepo's correctDrift counted and
// forceSyncGeneration never reached the deployment.
func TestAFleetUsersBundleOptionsTakeEffect(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "one"}, {Name: "two"}}})
	s.AddCluster("one", "one", nil, nil)
	s.AddCluster("two", "two", nil, nil)
	repo := s.NewRepo(map[string]string{
		"app/fleet.yaml": "defaultNamespace: app\ncorrectDrift:\n  enabled: true\n",
		"app/cm.yaml":    fmt.Sprintf(configMapV, "1"),
	})
	targets := "  targets: [{clusterName: one}, {clusterName: two}]\n"
	s.Apply(harness.GitRepoYAML("opts", repo.URL(), targets))
	s.WaitStatus("opts", 2*time.Minute, "Ready", harness.AllReady)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.Kube("one").CoreV1().ConfigMaps("app").Delete(ctx, "app", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		// Each read gets its own deadline: the check that restores it comes up to 66 s later (one jittered
		// interval), past the deletion's minute.
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		_, err := s.Kube("one").CoreV1().ConfigMaps("app").Get(rctx, "app", metav1.GetOptions{})
		return err == nil
	}, harness.Patience(3*time.Minute), 250*time.Millisecond, "the bundle's correctDrift restores the ConfigMap at its next check")

	before := map[string]int{}
	for _, c := range []string{"one", "two"} {
		before[c] = len(s.History(c, "app", "opts-app"))
	}
	s.Apply(harness.GitRepoYAML("opts", repo.URL(), targets+"  forceSyncGeneration: 1\n"))
	st := s.WaitStatus("opts", 2*time.Minute, "every cluster at sync generation 1", func(st api.GitRepoStatus) bool {
		for _, c := range st.Clusters {
			if c.SyncGeneration != 1 || c.State != api.StateReady {
				return false
			}
		}
		return len(st.Clusters) == 2
	})
	require.True(t, harness.AllReady(st))
	for _, c := range []string{"one", "two"} {
		require.Len(t, s.History(c, "app", "opts-app"), before[c]+1, "cluster %s: one new revision, nothing else changed", c)
	}
}
