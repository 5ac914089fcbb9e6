package workflows

import (
	"fmt"
	"testing"

	"github.com/flotilla-gitops/flotilla/api"
)

// BenchmarkGitRepoViewMidRollout is the cost of one status view of a 1,000-cluster GitRepo halfway
// through a rollout: the GitRepo workflow builds it on every pass to decide what to publish.
func BenchmarkGitRepoViewMidRollout(b *testing.B) {
	const n = 1000
	g := &gitRepoRun{carry: GitRepoCarry{Commit: "c2", Plan: &api.Plan{Bundles: []api.BundleRef{{Name: "web"}}}}, r: newRollout()}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cluster-%04d", i)
		g.carry.Plan.Clusters = append(g.carry.Plan.Clusters, api.PlannedCluster{Name: name, Bundles: []int{0}})
		st := api.ClusterStatus{Name: name, State: api.StateReady, Commit: "c2", Reachable: true, Generation: 2,
			Bundles: []api.BundleStatus{{Name: "web", State: api.StateReady, Release: "web", Revision: 1}}}
		e := &clusterEntry{Status: &st, Running: true}
		if i%2 == 1 {
			st.State, st.Commit, st.Generation = api.StateNotReady, "c1", 1
			e.Delivered = &delivery{Generation: 2}
		}
		g.r.Clusters[name] = e
	}
	b.ReportAllocs()
	for b.Loop() {
		if st := g.view(t0); st.ReadyClusters != n/2 {
			b.Fatalf("ready %d, want %d", st.ReadyClusters, n/2)
		}
	}
}
