package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

// sixInThree is six clusters in three partitions of two, none of whose clusters may stay unavailable,
// and one cluster of the GitRepo at a time may be updated.
func sixInThree() *api.Plan {
	p := planFor("a1", "a2", "b1", "b2", "c1", "c2")
	p.Rollout = &api.RolloutPlan{MaxUnavailable: 1, MaxUnavailablePartitions: 0, MaxNew: 50, Partitions: []api.PartitionPlan{
		{Name: "canary", MaxUnavailable: 0}, {Name: "early", MaxUnavailable: 0}, {Name: "late", MaxUnavailable: 0}}}
	for i := range p.Clusters {
		p.Clusters[i].Partition = i / 2
	}
	return p
}

// fleetSim drives a rollout as the GitRepo workflow does: it asks for the next deliveries, and each
// cluster applies what it is handed and reports the state health gives it.
type fleetSim struct {
	t      *testing.T
	r      *rollout
	plan   *api.Plan
	now    time.Time
	health func(cluster, commit string) string
}

// step makes one decision and lets the clusters handed something apply it; it returns them.
func (f *fleetSim) step(commit string) []string {
	f.now = f.now.Add(time.Second)
	hs := f.r.nextDeliveries(f.plan, f.now, 100, desiredFor(commit), nil)
	for _, h := range hs {
		f.r.onDelivered(h.Cluster, nil)
		state := f.health(h.Cluster, commit)
		f.r.onReport(api.ClusterReport{Cluster: h.Cluster, Status: api.ClusterStatus{Name: h.Cluster, State: state, Commit: commit,
			Reachable: true, Generation: h.Update.Generation, Message: map[bool]string{true: "", false: `bundle "web": deployment web: 0/1 available`}[state == api.StateReady]}})
	}
	return names(hs)
}

// until steps until a decision hands nothing over, and returns every step's clusters.
func (f *fleetSim) until(commit string) [][]string {
	var steps [][]string
	for i := 0; i < 20; i++ {
		s := f.step(commit)
		if len(s) == 0 {
			return steps
		}
		steps = append(steps, s)
	}
	f.t.Fatal("the rollout never settles")
	return nil
}

func (f *fleetSim) status(commit string) staging {
	return f.r.stage(f.plan, hashesOf(f.plan, func(pc api.PlannedCluster) string { return hashOf(desiredFor(commit)(pc)) }), f.now)
}

func alwaysReady(string, string) string { return api.StateReady }

// The first commit reaches the partitions in order (every cluster of a partition at once: a cluster with
// nothing of the GitRepo costs no budget), and a later good commit goes one cluster at a time, partition
// by partition.
func TestACommitGoesThroughThePartitionsInOrder(t *testing.T) {
	f := &fleetSim{t: t, r: newRollout(), plan: sixInThree(), now: t0, health: alwaysReady}
	require.Equal(t, [][]string{{"a1", "a2"}, {"b1", "b2"}, {"c1", "c2"}}, f.until("c1"))
	require.Equal(t, "rolled out through 3 partitions", f.status("c1").status.Message)

	require.Equal(t, [][]string{{"a1"}, {"a2"}, {"b1"}, {"b2"}, {"c1"}, {"c2"}}, f.until("c2"))
	st := f.status("c2").status
	require.Equal(t, []string{api.PartitionDone, api.PartitionDone, api.PartitionDone}, partitionStates(st))
	require.Zero(t, st.Unavailable)
}

// A commit whose workload never becomes Ready halts after the first cluster of the first partition: the
// status names the partition, its unavailable clusters and why; the rest keep the previous commit. A
// later good commit replaces the halted one and goes through.
func TestABadCommitHaltsAtItsPartitionAndALaterOneReplacesIt(t *testing.T) {
	f := &fleetSim{t: t, r: newRollout(), plan: sixInThree(), now: t0, health: alwaysReady}
	f.until("good")
	f.health = func(_, commit string) string {
		if commit == "bad" {
			return api.StateNotReady
		}
		return api.StateReady
	}
	require.Equal(t, [][]string{{"a1"}}, f.until("bad"))
	sg := f.status("bad")
	st := sg.status
	require.Equal(t, "canary", st.Halted)
	require.Equal(t, []string{api.PartitionHalted, api.PartitionWaiting, api.PartitionWaiting}, partitionStates(st))
	require.Equal(t, []string{"a1", "a2"}, st.Partitions[0].UnavailableClusters)
	require.Equal(t, `rollout halted at partition "canary" (1 of 3): 2 of 2 clusters unavailable, 0 allowed: `+
		`cluster "a1": NotReady: bundle "web": deployment web: 0/1 available; `+
		`cluster "a2": waits for maxUnavailable (1 clusters, 0 in partition "canary")`, st.Message)
	require.Equal(t, `waits for partition "canary"`, sg.held["b1"])
	for _, c := range []string{"a2", "b1", "b2", "c1", "c2"} {
		require.Equal(t, "good", f.r.Clusters[c].Status.Commit, "cluster %s keeps the previous commit", c)
	}
	view := f.r.clusterView(f.plan, f.plan.Clusters[2], "bad", false, sg.held)
	require.Equal(t, api.StateOutOfSync, view.State)
	require.Contains(t, view.Message, `waits for partition "canary"`)

	require.Equal(t, [][]string{{"a1"}, {"a2"}, {"b1"}, {"b2"}, {"c1"}, {"c2"}}, f.until("fixed"))
	require.Empty(t, f.status("fixed").status.Halted)
}

// A partition within its maxUnavailable is done although a cluster of it fails: the next one goes on.
// (Its budget also caps how many of its clusters update at once: with 1, a failed first cluster would
// keep the second from updating, and the partition would be unavailable, as in Fleet.)
// With maxUnavailablePartitions 1, one unavailable partition does not stop the next either.
func TestBudgetsLetARolloutGoOnPastAFailure(t *testing.T) {
	failsOnA1 := func(cluster, commit string) string {
		if cluster == "a1" && commit == "c2" {
			return api.StateErrApplied
		}
		return api.StateReady
	}
	tolerant := sixInThree()
	tolerant.Rollout.MaxUnavailable = 6
	tolerant.Rollout.Partitions[0].MaxUnavailable = 2
	f := &fleetSim{t: t, r: newRollout(), plan: tolerant, now: t0, health: alwaysReady}
	f.until("c1")
	f.health = failsOnA1
	f.until("c2")
	st := f.status("c2").status
	require.Equal(t, []string{api.PartitionDone, api.PartitionDone, api.PartitionDone}, partitionStates(st))
	require.Equal(t, []string{"a1"}, st.Partitions[0].UnavailableClusters)
	require.Equal(t, "c2", f.r.Clusters["c2"].Status.Commit)

	partitions := sixInThree()
	partitions.Rollout.MaxUnavailable = 6
	partitions.Rollout.MaxUnavailablePartitions = 1
	g := &fleetSim{t: t, r: newRollout(), plan: partitions, now: t0, health: alwaysReady}
	g.until("c1")
	g.health = failsOnA1
	g.until("c2")
	st = g.status("c2").status
	require.Equal(t, []string{api.PartitionHalted, api.PartitionDone, api.PartitionDone}, partitionStates(st))
	require.Empty(t, st.Halted, "the rollout went on past the unavailable partition")
	require.Equal(t, 1, st.UnavailablePartitions)
}

// A cluster that has nothing of the GitRepo yet counts against maxNew, not against the budgets; a paused
// cluster is never handed anything and keeps its partition from being done.
func TestNewClustersAreCappedByMaxNewAndPausedOnesWait(t *testing.T) {
	p := sixInThree()
	p.Rollout.MaxNew = 1
	p.Rollout.Partitions = []api.PartitionPlan{{Name: "All", MaxUnavailable: 6}}
	for i := range p.Clusters {
		p.Clusters[i].Partition = 0
	}
	p.Clusters[5].Paused = true
	f := &fleetSim{t: t, r: newRollout(), plan: p, now: t0, health: alwaysReady}
	require.Equal(t, [][]string{{"a1"}, {"a2"}, {"b1"}, {"b2"}, {"c1"}}, f.until("c1"))
	st := f.status("c1").status
	require.Equal(t, []string{api.PartitionRollingOut}, partitionStates(st), "c2 is paused")
	require.Equal(t, []string{"c2"}, st.Partitions[0].UnavailableClusters)
}

func partitionStates(st api.RolloutStatus) []string {
	var out []string
	for _, p := range st.Partitions {
		out = append(out, p.State)
	}
	return out
}
