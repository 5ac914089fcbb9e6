package workflows

import (
	"encoding/json"
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

// BenchmarkGitRepoPayloadsAtScale measures what a GitRepo of ten bundles per cluster hands Temporal as it
// grows: its continue-as-new input (the carry, compressed), its status query's answer and its plan, in KB,
// healthy and with every bundle failing with a message of its own. Temporal refuses a payload over 2 MB,
// and the scale issue asks for half of that as margin (ADR 34 gives the figures and the shape they call for).
//
//	go test ./workflows -run '^$' -bench GitRepoPayloadsAtScale -benchtime 1x
func BenchmarkGitRepoPayloadsAtScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, failing := range []bool{false, true} {
			b.Run(fmt.Sprintf("clusters=%d/failing=%v", n, failing), func(b *testing.B) {
				g := bigGitRepo(n, 10, failing)
				var can, query, plan int
				for b.Loop() {
					in, _ := g.nextRunInput()
					can = len(mustMarshalB(b, in))
					query = len(mustMarshalB(b, g.view(t0)))
					plan = len(mustMarshalB(b, g.carry.Plan))
				}
				b.ReportMetric(float64(can)/1024, "continue-as-new-KB")
				b.ReportMetric(float64(query)/1024, "status-query-KB")
				b.ReportMetric(float64(plan)/1024, "plan-KB")
			})
		}
	}
}

func mustMarshalB(b *testing.B, v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkGitRepoPassAtScale is the GitRepo's own cost of one pass over a settled GitRepo: what it hands
// over (nothing: every cluster runs its desired state) and the status view it publishes from.
//
//	go test ./workflows -run '^$' -bench GitRepoPassAtScale
func BenchmarkGitRepoPassAtScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		g := bigGitRepo(n, 1, false)
		for _, pc := range g.carry.Plan.Clusters {
			g.r.Clusters[pc.Name].Delivered.Hash = hashOf(g.desired(pc))
		}
		b.Run(fmt.Sprintf("clusters=%d/deliveries", n), func(b *testing.B) {
			for b.Loop() {
				if h := g.r.nextDeliveries(g.carry.Plan, t0, 200, g.desired, g.desiredHash()); len(h) != 0 {
					b.Fatalf("%d hand-overs, want none", len(h))
				}
			}
		})
		b.Run(fmt.Sprintf("clusters=%d/view", n), func(b *testing.B) {
			for b.Loop() {
				g.view(t0)
			}
		})
	}
}
