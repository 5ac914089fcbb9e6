package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

// A partition whose gate asks for approval holds the rollout once it is done, until someone approves it
// for this commit; the next commit needs approving again.
func TestAnApprovalGateHoldsTheRolloutUntilApproved(t *testing.T) {
	plan := sixInThree()
	plan.Rollout.Partitions[0].Approval = true
	f := &fleetSim{t: t, r: newRollout(), plan: plan, now: t0, health: alwaysReady}
	plan.Commit = "c1"
	require.Equal(t, [][]string{{"a1", "a2"}}, f.until("c1"), "the first commit stops at the gate too")
	sg := f.status("c1")
	require.Equal(t, []string{api.PartitionAwaitingApproval, api.PartitionWaiting, api.PartitionWaiting}, partitionStates(sg.status))
	require.Equal(t, "canary", sg.status.Gate)
	require.Equal(t, `waits for approval of partition "canary"`, sg.held["b1"])
	require.Contains(t, sg.status.Message, `partition "canary" (1 of 3) is done and waits for approval`)

	approve(f.r, "c1", "canary", "alice", f.now)
	require.Equal(t, [][]string{{"b1", "b2"}, {"c1", "c2"}}, f.until("c1"))
	st := f.status("c1").status
	require.Equal(t, "alice", st.Partitions[0].ApprovedBy.By)
	require.Equal(t, []string{api.PartitionDone, api.PartitionDone, api.PartitionDone}, partitionStates(st))

	plan.Commit = "c2"
	require.Equal(t, [][]string{{"a1"}, {"a2"}}, f.until("c2"))
	require.Equal(t, api.PartitionAwaitingApproval, f.status("c2").status.Partitions[0].State, "a new commit is a new rollout")
}

// A soak gate opens once every cluster of its partition has been Ready for the soak time; a cluster that
// stops being Ready starts the soak again.
func TestASoakGateOpensAfterItsPartitionStaysReady(t *testing.T) {
	plan := sixInThree()
	plan.Rollout.Partitions[0].Soak = 10 * time.Minute
	plan.Commit = "c1"
	f := &fleetSim{t: t, r: newRollout(), plan: plan, now: t0, health: alwaysReady}
	require.Equal(t, [][]string{{"a1", "a2"}}, f.until("c1"))
	doneAt := f.now
	sg := f.status("c1")
	require.Equal(t, api.PartitionSoaking, sg.status.Partitions[0].State)
	require.Equal(t, doneAt.Add(10*time.Minute), sg.status.Partitions[0].SoakUntil)
	require.Equal(t, doneAt.Add(10*time.Minute), f.r.soakDue, "the loop wakes when the soak ends")

	f.now = doneAt.Add(5 * time.Minute)
	f.r.onReport(api.ClusterReport{Cluster: "a2", Status: api.ClusterStatus{Name: "a2", State: api.StateNotReady, Reachable: true,
		Commit: "c1", Generation: f.r.Clusters["a2"].Delivered.Generation}})
	require.Empty(t, f.step("c1"), "a2 is not Ready: the soak stops")
	f.r.onReport(api.ClusterReport{Cluster: "a2", Status: api.ClusterStatus{Name: "a2", State: api.StateReady, Reachable: true,
		Commit: "c1", Generation: f.r.Clusters["a2"].Delivered.Generation}})
	require.Empty(t, f.step("c1"), "Ready again: the soak starts over")
	restarted := f.now
	f.now = restarted.Add(9 * time.Minute)
	require.Empty(t, f.step("c1"))
	f.now = restarted.Add(10 * time.Minute)
	require.Equal(t, [][]string{{"b1", "b2"}, {"c1", "c2"}}, f.until("c1"))
}

// A paused rollout hands nothing over, approvals included, until resumed; an abort holds its commit only.
func TestAPausedOrAbortedRolloutHandsNothingOver(t *testing.T) {
	plan := sixInThree()
	plan.Commit = "c1"
	f := &fleetSim{t: t, r: newRollout(), plan: plan, now: t0, health: alwaysReady}
	f.until("c1")
	plan.Commit = "c2"
	require.Equal(t, []string{"a1"}, f.step("c2"))
	gates := f.r.gatesFor("c2")
	gates.Paused = &api.RolloutMark{By: "bob", At: f.now, Commit: "c2", Reason: "incident 42"}
	require.Empty(t, f.until("c2"))
	sg := f.status("c2")
	require.Contains(t, sg.held["a2"], "the rollout is paused by bob since 08:00:")
	require.Contains(t, sg.held["a2"], "(incident 42)")
	require.Contains(t, sg.status.Message, "the rollout is paused by bob")
	gates.Paused = nil
	require.Equal(t, [][]string{{"a2"}, {"b1"}}, f.until("c2")[:2])

	plan.Commit = "c3"
	require.Equal(t, []string{"a1"}, f.step("c3"))
	f.r.gatesFor("c3").Aborted = &api.RolloutMark{By: "carol", At: f.now, Commit: "c3"}
	require.Empty(t, f.until("c3"))
	require.Equal(t, "carol", f.status("c3").status.Aborted.By)
	plan.Commit = "c4"
	require.Equal(t, []string{"a1"}, f.step("c4"), "a new commit is not aborted")
	require.Nil(t, f.status("c4").status.Aborted)
}

func approve(r *rollout, commit, partition, by string, at time.Time) {
	g := r.gatesFor(commit)
	if g.Approved == nil {
		g.Approved = map[string]api.RolloutMark{}
	}
	g.Approved[partition] = api.RolloutMark{By: by, At: at, Commit: commit}
}
