package workflows

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

func bundleIn(name, state, msg string) api.BundleStatus {
	return api.BundleStatus{Name: name, State: state, Message: msg}
}

// A cluster shows the worst of its bundles by Fleet's rank: a modified object outranks a pod that is not
// ready yet, so a cluster with both is Modified, and its message names the modified bundle first.
func TestAClusterShowsItsWorstBundleByFleetsRank(t *testing.T) {
	c := api.ClusterStatus{Name: "edge-1", Reachable: true, Bundles: []api.BundleStatus{
		bundleIn("api", api.StateNotReady, "deployment web/api notReady: Available: 0/1"),
		bundleIn("web", api.StateModified, "configmap web/cm modified"),
		bundleIn("db", api.StateReady, ""),
	}}
	summarizeCluster(&c)
	require.Equal(t, api.StateModified, c.State)
	require.Equal(t, `bundle "web": configmap web/cm modified; bundle "api": deployment web/api notReady: Available: 0/1`, c.Message)
}

// A GitRepo shows the worst of its clusters by the same rank, and names them worst first.
func TestAGitRepoShowsItsWorstClusterByFleetsRank(t *testing.T) {
	cluster := func(name, state string) api.ClusterStatus {
		return api.ClusterStatus{Name: name, State: state, Reachable: true, Bundles: []api.BundleStatus{bundleIn("web", state, "")}}
	}
	cases := []struct {
		name     string
		clusters []api.ClusterStatus
		want     string
	}{
		{"modified outranks not ready", []api.ClusterStatus{cluster("a", api.StateNotReady), cluster("b", api.StateModified)}, api.StateModified},
		{"out of sync outranks not ready", []api.ClusterStatus{cluster("a", api.StateNotReady), cluster("b", api.StateOutOfSync)}, api.StateOutOfSync},
		{"pending outranks not ready", []api.ClusterStatus{cluster("a", api.StateNotReady), cluster("b", api.StatePending)}, api.StatePending},
		{"waiting to be applied outranks modified", []api.ClusterStatus{cluster("a", api.StateModified), cluster("b", api.StateWaitApplied)}, api.StateWaitApplied},
		{"not ready outranks only ready", []api.ClusterStatus{cluster("a", api.StateNotReady), cluster("b", api.StateReady)}, api.StateNotReady},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := api.GitRepoStatus{Commit: "abc", Bundles: []string{"web"}, Clusters: c.clusters}
			aggregate(&st)
			require.Equal(t, c.want, st.State)
		})
	}

	st := api.GitRepoStatus{Commit: "abc", Bundles: []string{"web"}, Clusters: []api.ClusterStatus{
		cluster("a", api.StateNotReady), cluster("b", api.StateModified)}}
	aggregate(&st)
	require.Equal(t, `0/2 clusters ready; cluster "b": Modified; cluster "a": NotReady`, st.Message)
}

// A held plan keeps the clusters on the plan before it: the GitRepo is OutOfSync unless a cluster is in a
// state Fleet ranks higher. A cluster whose pods are not ready no longer hides that the plan is held.
func TestAHeldPlanIsOutOfSyncUnlessAClusterRanksHigher(t *testing.T) {
	held := func(clusterState string) api.GitRepoStatus {
		st := api.GitRepoStatus{Commit: "abc", Bundles: []string{"web"}, Held: "the plan would uninstall every bundle",
			Clusters: []api.ClusterStatus{{Name: "a", State: clusterState, Reachable: true,
				Bundles: []api.BundleStatus{bundleIn("web", clusterState, "")}}}}
		aggregate(&st)
		return st
	}
	require.Equal(t, api.StateOutOfSync, held(api.StateReady).State)
	require.Equal(t, api.StateOutOfSync, held(api.StateNotReady).State, "held outranks pods that are not ready")
	require.Equal(t, api.StateModified, held(api.StateModified).State, "a modified cluster outranks the held plan")
	require.Equal(t, api.StateErrApplied, held(api.StateErrApplied).State)
	require.Contains(t, held(api.StateNotReady).Message, "the plan would uninstall every bundle")
}

// A bundle deployed nowhere is never Ready: the GitRepo is at least NotReady, and a cluster in a state
// Fleet ranks higher shows through. The message names the bundle either way.
func TestABundleDeployedNowhereNeverLeavesTheGitRepoReady(t *testing.T) {
	nowhere := func(clusterState string) api.GitRepoStatus {
		st := api.GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []api.ClusterStatus{
			{Name: "a", State: clusterState, Reachable: true, Bundles: []api.BundleStatus{bundleIn("web", clusterState, "")}}}}
		aggregate(&st)
		return st
	}
	require.Equal(t, api.StateNotReady, nowhere(api.StateReady).State)
	modified := nowhere(api.StateModified)
	require.Equal(t, api.StateModified, modified.State, "a modified cluster outranks NotReady")
	require.Contains(t, modified.Message, `bundle "db": no registered cluster matches its targets`)
}

// A cluster the rollout has not reached yet (its window is full) runs an older commit: it is OutOfSync,
// unless what it runs failed, is being applied or is not ready, which Fleet judges first for one
// deployment whatever their rank.
func TestAClusterTheRolloutHasNotReachedIsOutOfSyncUnlessItsOwnStateComesFirst(t *testing.T) {
	plan := planFor("a")
	view := func(state string) api.ClusterStatus {
		r := newRollout()
		r.Clusters["a"] = &clusterEntry{Running: true, Delivered: &delivery{Generation: 1, Acked: true},
			Status: &api.ClusterStatus{Name: "a", State: state, Commit: "c1", Reachable: true, Generation: 1,
				Bundles: []api.BundleStatus{bundleIn("web", state, "")}}}
		return r.clusterView(plan, plan.Clusters[0], "c2", false, nil)
	}
	for state, want := range map[string]string{
		api.StateReady:       api.StateOutOfSync,
		api.StateModified:    api.StateOutOfSync,
		api.StateNotReady:    api.StateNotReady,
		api.StateWaitApplied: api.StateWaitApplied,
		api.StateErrApplied:  api.StateErrApplied,
	} {
		require.Equal(t, want, view(state).State, "a cluster that was %s", state)
	}
	require.Equal(t, "at commit c1; c2 waits for the rollout window", view(api.StateReady).Message)
	require.Equal(t, []api.BundleStatus{bundleIn("web", api.StateOutOfSync, "at commit c1; c2 waits for the rollout window")},
		view(api.StateReady).Bundles, "its bundles say so too")
}

// A bundle waiting for its release to be applied counts its desired objects as waitApplied, as Fleet does
// for a deployment in WaitApplied: neither ready nor not, since what they will be is not applied yet.
func TestABundleWaitingToBeAppliedCountsItsObjectsAsWaitApplied(t *testing.T) {
	cases := []struct {
		name      string
		status    api.ReleaseStatus
		id        string
		counts    api.ResourceCounts
		failure   string
		wantState string
		want      api.ResourceCounts
	}{
		{"a release not installed yet has no objects to count: desiredReady is unknown, reported as 0",
			"", "", api.ResourceCounts{}, "", api.StateWaitApplied, api.ResourceCounts{}},
		{"a pending install counts the objects of the revision being installed",
			"pending-install", "s-new", api.ResourceCounts{DesiredReady: 3, Ready: 1, Missing: 2}, "",
			api.StateWaitApplied, api.ResourceCounts{DesiredReady: 3, WaitApplied: 3}},
		{"a pending upgrade keeps its orphans, which are live and not desired",
			"pending-upgrade", "s-new", api.ResourceCounts{DesiredReady: 2, Ready: 1, NotReady: 1, Orphaned: 1}, "",
			api.StateWaitApplied, api.ResourceCounts{DesiredReady: 2, WaitApplied: 2, Orphaned: 1}},
		{"a release deployed from another deployment ID counts the objects it replaces",
			"deployed", "s-old", api.ResourceCounts{DesiredReady: 3, Ready: 2, Modified: 1}, "",
			api.StateWaitApplied, api.ResourceCounts{DesiredReady: 3, WaitApplied: 3}},
		{"a release that failed to move on counts what runs as it is",
			"deployed", "s-old", api.ResourceCounts{DesiredReady: 3, Ready: 3}, "helm: timed out",
			api.StateErrApplied, api.ResourceCounts{DesiredReady: 3, Ready: 3}},
		{"a release locked by an operation that failed waits all the same",
			"pending-upgrade", "s-new", api.ResourceCounts{DesiredReady: 2, Ready: 2}, "another operation is in progress",
			api.StateErrApplied, api.ResourceCounts{DesiredReady: 2, WaitApplied: 2}},
		{"a release at its desired state counts by what its objects are",
			"deployed", "s-new", api.ResourceCounts{DesiredReady: 3, Ready: 2, NotReady: 1}, "",
			api.StateNotReady, api.ResourceCounts{DesiredReady: 3, Ready: 2, NotReady: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := bundleStatus(obs(c.status, c.id, c.counts), c.failure)
			require.Equal(t, c.wantState, st.State)
			require.Equal(t, c.want, st.ResourceCounts)
		})
	}

	// Cluster and GitRepo counts are the sums of their bundles'.
	cl := api.ClusterStatus{Name: "a", Reachable: true, Bundles: []api.BundleStatus{
		bundleStatus(obs("deployed", "s-old", api.ResourceCounts{DesiredReady: 3, Ready: 3}), ""),
		bundleStatus(obs("deployed", "s-new", api.ResourceCounts{DesiredReady: 2, Ready: 2}), ""),
	}}
	cl.Bundles[1].Name = "db"
	summarizeCluster(&cl)
	require.Equal(t, api.ResourceCounts{DesiredReady: 5, Ready: 2, WaitApplied: 3}, cl.ResourceCounts)
	gr := api.GitRepoStatus{Clusters: []api.ClusterStatus{cl}}
	aggregate(&gr)
	require.Equal(t, 3, gr.ResourceCounts.WaitApplied)
}

// A paused GitRepo or cluster keeps what runs and shows, as Fleet does, every bundle OutOfSync with the
// commit it waits at, unless what runs failed, is being applied or is not ready.
func TestAPausedClustersBundlesAreOutOfSyncWithTheCommitTheyWaitAt(t *testing.T) {
	plan := &api.Plan{Commit: "c2", Bundles: []api.BundleRef{{Name: "api"}, {Name: "db"}, {Name: "web"}},
		Clusters: []api.PlannedCluster{{Name: "a", Bundles: []int{0, 1, 2}}, {Name: "b", Bundles: []int{0, 1, 2}, Paused: true}}}
	reported := func(commit string, reachable bool) *clusterEntry {
		c := api.ClusterStatus{Commit: commit, Reachable: reachable, Generation: 1, Bundles: []api.BundleStatus{
			bundleIn("api", api.StateNotReady, "deployment app/api notReady: Available: 0/1"),
			bundleIn("db", api.StateModified, "configmap app/db modified"),
			bundleIn("web", api.StateReady, ""),
		}}
		summarizeCluster(&c)
		return &clusterEntry{Running: true, Status: &c, Delivered: &delivery{Generation: 1, Acked: true}}
	}
	r := newRollout()
	r.Clusters["a"], r.Clusters["b"] = reported("c1", true), reported("c1", true)
	const why = "paused at commit c1; c2 is waiting"
	for _, v := range []api.ClusterStatus{
		r.clusterView(plan, plan.Clusters[0], "c2", true, nil),  // the GitRepo is paused
		r.clusterView(plan, plan.Clusters[1], "c2", false, nil), // the cluster is paused
	} {
		require.Equal(t, api.StateOutOfSync, v.State)
		require.Equal(t, why+`; bundle "db": configmap app/db modified; bundle "api": deployment app/api notReady: Available: 0/1`, v.Message)
		require.Equal(t, []api.BundleStatus{
			bundleIn("db", api.StateOutOfSync, why+"; configmap app/db modified"),
			bundleIn("web", api.StateOutOfSync, why),
			bundleIn("api", api.StateNotReady, "deployment app/api notReady: Available: 0/1"),
		}, v.Bundles, "a bundle whose pods are not ready says so first, as Fleet judges one deployment")
	}
	require.Equal(t, api.StateModified, r.Clusters["a"].Status.State, "the report itself is left as it was")

	st := api.GitRepoStatus{Commit: "c2", Paused: true, Bundles: []string{"api", "db", "web"},
		Clusters: []api.ClusterStatus{r.clusterView(plan, plan.Clusters[0], "c2", true, nil)}}
	aggregate(&st)
	require.Equal(t, api.StateOutOfSync, st.State)
	require.Equal(t, api.Summary{DesiredReady: 3, OutOfSync: 2, NotReady: 1}, st.Summary)

	// Paused at the commit the GitRepo wants: nothing waits.
	r.Clusters["a"] = reported("c2", true)
	require.Equal(t, api.StateModified, r.clusterView(plan, plan.Clusters[0], "c2", true, nil).State)

	// Paused and unreachable: the cluster is ErrApplied, and its message says both.
	r.Clusters["a"] = reported("c1", false)
	r.Clusters["a"].Status.Message = `cluster "a": connection refused`
	summarizeCluster(r.Clusters["a"].Status)
	unreached := r.clusterView(plan, plan.Clusters[0], "c2", true, nil)
	require.Equal(t, api.StateErrApplied, unreached.State)
	require.Equal(t, `cluster "a": connection refused; `+why, unreached.Message)

	// Paused before its workflow ever reported: nothing runs there, every bundle waits for the commit.
	never := newRollout().clusterView(plan, plan.Clusters[1], "c2", false, nil)
	require.Equal(t, api.StateOutOfSync, never.State)
	require.Equal(t, "paused; commit c2 is waiting", never.Message)
	for _, b := range never.Bundles {
		require.Equal(t, bundleIn(b.Name, api.StateOutOfSync, "paused; commit c2 is waiting"), b)
	}
}

// The message names the ten worst clusters as a stable sort by state would put them first: worse states
// first, and among equals the order they came in (by name).
func TestTheWorstClustersAreTheFirstTenOfAStableSortByState(t *testing.T) {
	states := []string{api.StateReady, api.StateNotReady, api.StateWaitApplied, api.StateErrApplied, api.StateOutOfSync, api.StateModified, api.StateOffline, api.StatePending}
	type item struct {
		name, state string
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		items := make([]item, rng.IntN(40))
		for i := range items {
			items[i] = item{fmt.Sprintf("c%02d", i), states[rng.IntN(len(states))]}
		}
		want := slices.Clone(items)
		sort.SliceStable(want, func(i, j int) bool { return api.Worse(want[i].state, want[j].state) })
		want = want[:min(10, len(want))]
		require.Equal(t, want, worstFirst(items, 10, func(it item) string { return it.state }), "round %d: %v", round, items)
	}
}
