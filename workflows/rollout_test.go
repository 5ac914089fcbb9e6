package workflows

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

var t0 = time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)

func planFor(clusters ...string) *api.Plan {
	p := &api.Plan{Commit: "c1", Bundles: []api.BundleRef{{Name: "web"}}}
	for _, c := range clusters {
		p.Clusters = append(p.Clusters, api.PlannedCluster{Name: c, Bundles: []int{0}})
	}
	return p
}

func desiredFor(commit string) func(api.PlannedCluster) api.DesiredUpdate {
	return func(pc api.PlannedCluster) api.DesiredUpdate {
		return api.DesiredUpdate{Target: api.ClusterTarget{Cluster: pc.Name, Commit: commit}}
	}
}

func names(hs []handOver) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Cluster)
	}
	return out
}

// At most window clusters wait for an acknowledgement; a report frees a slot, and so does a cluster that
// has not answered for AckTimeout.
func TestTheRolloutWindowHoldsBackTheRest(t *testing.T) {
	r := newRollout()
	plan := planFor("a", "b", "c", "d")
	first := r.nextDeliveries(plan, t0, 2, desiredFor("c1"), nil)
	require.Equal(t, []string{"a", "b"}, names(first))
	require.False(t, first[0].Running, "a first delivery starts the child")
	require.Empty(t, r.nextDeliveries(plan, t0.Add(time.Second), 2, desiredFor("c1"), nil), "the window is full")

	r.onDelivered("a", nil)
	r.onReport(api.ClusterReport{Cluster: "a", Status: api.ClusterStatus{Name: "a", Generation: first[0].Update.Generation}})
	require.Equal(t, []string{"c"}, names(r.nextDeliveries(plan, t0.Add(2*time.Second), 2, desiredFor("c1"), nil)), "a's report freed its slot")

	later := t0.Add(AckTimeout + 3*time.Second)
	require.Equal(t, []string{"d"}, names(r.nextDeliveries(plan, later, 2, desiredFor("c1"), nil)), "b stopped answering: its slot is free again")
	require.Equal(t, t0.Add(2*time.Second+AckTimeout), r.nextAckDeadline(t0.Add(AckTimeout), t0.Add(time.Hour)), "the loop wakes when c's delivery times out")
	require.Equal(t, later.Add(AckTimeout), r.nextAckDeadline(later, later.Add(time.Hour)),
		"b and c timed out already: they wake no one (a wake-up in the past would spin the loop), d does")
}

// An unchanged desired state is not delivered again; a changed one is, to the running workflow by signal,
// with a higher generation.
func TestOnlyAChangedDesiredStateIsDelivered(t *testing.T) {
	r := newRollout()
	plan := planFor("a")
	up := r.nextDeliveries(plan, t0, 10, desiredFor("c1"), nil)
	r.onDelivered("a", nil)
	require.Empty(t, r.nextDeliveries(plan, t0.Add(time.Minute), 10, desiredFor("c1"), nil))
	again := r.nextDeliveries(plan, t0.Add(time.Minute), 10, desiredFor("c2"), nil)
	require.Len(t, again, 1)
	require.True(t, again[0].Running, "signalled, not started")
	require.Greater(t, again[0].Update.Generation, up[0].Update.Generation)
}

// A failed hand-over is delivered again; a child that ended unasked is started again.
func TestAFailedOrEndedDeliveryIsRetried(t *testing.T) {
	r := newRollout()
	plan := planFor("a")
	r.nextDeliveries(plan, t0, 10, desiredFor("c1"), nil)
	r.onDelivered("a", errors.New("start failed"))
	require.Len(t, r.nextDeliveries(plan, t0, 10, desiredFor("c1"), nil), 1)
	r.onDelivered("a", nil)
	r.onEnded("a")
	again := r.nextDeliveries(plan, t0, 10, desiredFor("c1"), nil)
	require.Len(t, again, 1)
	require.False(t, again[0].Running, "started as a child again")
}

// A plan that drops a cluster a workflow runs on removes it there; its reports are then ignored until it
// confirms the removal, which forgets it. A cluster nothing runs on is just forgotten.
func TestAnUntargetedClusterIsRemovedThenForgotten(t *testing.T) {
	r := newRollout()
	r.nextDeliveries(planFor("a", "b"), t0, 10, desiredFor("c1"), nil)
	r.onDelivered("a", nil)
	r.onReport(api.ClusterReport{Cluster: "a", Status: api.ClusterStatus{Name: "a", State: api.StateReady, Generation: 1}})
	r.Clusters["ghost"] = &clusterEntry{Status: &api.ClusterStatus{Name: "ghost"}}

	require.Equal(t, []string{"a"}, r.untargeted(planFor("b")))
	require.NotContains(t, r.Clusters, "ghost")
	require.Empty(t, r.nextDeliveries(planFor("a", "b"), t0.Add(time.Minute), 10, desiredFor("c1"), nil), "b's delivery is still in flight; a is being removed")
	r.onReport(api.ClusterReport{Cluster: "a", Status: api.ClusterStatus{Name: "a", State: api.StateErrApplied}})
	require.Equal(t, api.StateReady, r.Clusters["a"].Status.State, "a stale report of a removing cluster is ignored")
	require.Equal(t, []string{"a"}, r.removing())
	r.onReport(api.ClusterReport{Cluster: "a", Removed: true})
	require.NotContains(t, r.Clusters, "a")
	require.Empty(t, r.removing())
}

// A cluster whose acknowledged workflow visibility no longer lists is delivered again, which restarts it.
func TestResyncRestartsAWorkflowThatStopped(t *testing.T) {
	r := newRollout()
	plan := planFor("a", "b")
	hs := r.nextDeliveries(plan, t0, 10, desiredFor("c1"), nil)
	for _, h := range hs {
		r.onDelivered(h.Cluster, nil)
	}
	r.onReport(api.ClusterReport{Cluster: "a", Status: api.ClusterStatus{Name: "a", Generation: hs[0].Update.Generation}})
	require.Equal(t, []string{"a"}, r.restartMissing(plan, nil), "b is not acknowledged yet: visibility may lag its start")
	require.Equal(t, []string{"a"}, names(r.nextDeliveries(plan, t0.Add(time.Minute), 10, desiredFor("c1"), nil)))
}

// The view never shows a stale Ready: a cluster applying a newer generation is WaitApplied; one the window
// has not reached is OutOfSync; one that never reported is Pending.
func TestTheClusterViewIsJudgedAgainstWhatIsWantedNow(t *testing.T) {
	r := newRollout()
	plan := planFor("a", "b", "c")
	r.Clusters["a"] = &clusterEntry{Running: true, Status: &api.ClusterStatus{Name: "a", State: api.StateReady, Commit: "c1", Reachable: true, Generation: 1},
		Delivered: &delivery{Generation: 2}}
	r.Clusters["b"] = &clusterEntry{Running: true, Status: &api.ClusterStatus{Name: "b", State: api.StateReady, Commit: "c1", Reachable: true, Generation: 1},
		Delivered: &delivery{Generation: 1, Acked: true}}
	require.Equal(t, api.StateWaitApplied, r.clusterView(plan, plan.Clusters[0], "c2", false, nil).State)
	require.Equal(t, api.StateOutOfSync, r.clusterView(plan, plan.Clusters[1], "c2", false, nil).State)
	require.Equal(t, api.StatePending, r.clusterView(plan, plan.Clusters[2], "c2", false, nil).State)
	require.Equal(t, api.StateOutOfSync, r.clusterView(plan, plan.Clusters[2], "c2", true, nil).State, "paused")
}

// A run from before the rollout type carried four maps keyed by cluster; continuing into this code, they
// become the same entries.
func TestALegacyCarryBecomesTheSameRollout(t *testing.T) {
	legacy := `{"commit":"c1","generation":7,
		"delivered":{"a":{"hash":"h","generation":7,"at":"2026-11-25T08:00:00Z","acked":true}},
		"clusters":{"a":{"name":"a","state":"Ready","message":"","resourceCounts":{"desiredReady":0,"ready":0,"notReady":0,"missing":0,"modified":0,"orphaned":0,"waitApplied":0,"unknown":0},"bundles":null,"reachable":true,"generation":7}},
		"known":{"a":true,"b":true},"removing":{"b":true}}`
	var c GitRepoCarry
	require.NoError(t, json.Unmarshal([]byte(legacy), &c))
	r := c.takeRollout()
	require.Equal(t, int64(7), r.Generation)
	require.Equal(t, &clusterEntry{Running: true, Delivered: &delivery{Hash: "h", Generation: 7, At: t0, Acked: true},
		Status: &api.ClusterStatus{Name: "a", State: api.StateReady, Reachable: true, Generation: 7}}, r.Clusters["a"])
	require.Equal(t, &clusterEntry{Running: true, Removing: true}, r.Clusters["b"])
	out, err := json.Marshal(c)
	require.NoError(t, err)
	require.NotContains(t, string(out), `"known"`, "the legacy maps are read once, never written")
}

// A cluster leaving the inventory is removed where a workflow of this GitRepo runs on it: uninstalled, or
// only forgotten when it leaves with its workloads kept; an uninstall under way switches to forgetting,
// never back; a cluster nothing runs on is forgotten at once; a hand-over in flight waits until it lands.
func TestALeavingClusterIsUninstalledOrForgotten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entry   *clusterEntry
		leaving api.LeavingCluster
		want    []removal
		after   *clusterEntry // nil: forgotten
	}{
		{"a running cluster leaves", &clusterEntry{Running: true, Delivered: &delivery{Generation: 1, Acked: true}},
			api.LeavingCluster{Name: "a"}, []removal{{Cluster: "a"}}, &clusterEntry{Running: true, Removing: true}},
		{"a running cluster leaves with its workloads kept", &clusterEntry{Running: true},
			api.LeavingCluster{Name: "a", KeepWorkloads: true}, []removal{{Cluster: "a", Forget: true}},
			&clusterEntry{Running: true, Removing: true, Forget: true}},
		{"an uninstall under way is told to forget instead", &clusterEntry{Running: true, Removing: true},
			api.LeavingCluster{Name: "a", KeepWorkloads: true}, []removal{{Cluster: "a", Forget: true}},
			&clusterEntry{Running: true, Removing: true, Forget: true}},
		{"an uninstall under way is not told again", &clusterEntry{Running: true, Removing: true},
			api.LeavingCluster{Name: "a"}, nil, &clusterEntry{Running: true, Removing: true}},
		{"a forget under way never turns into an uninstall", &clusterEntry{Running: true, Removing: true, Forget: true},
			api.LeavingCluster{Name: "a"}, nil, &clusterEntry{Running: true, Removing: true, Forget: true}},
		{"a cluster nothing runs on is forgotten", &clusterEntry{Status: &api.ClusterStatus{Name: "a"}},
			api.LeavingCluster{Name: "a"}, nil, nil},
		{"a hand-over in flight waits", &clusterEntry{Delivered: &delivery{Generation: 1}},
			api.LeavingCluster{Name: "a"}, nil, &clusterEntry{Delivered: &delivery{Generation: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRollout()
			r.Clusters["a"] = tc.entry
			r.Clusters["b"] = &clusterEntry{Running: true}
			require.Equal(t, tc.want, r.leave([]api.LeavingCluster{tc.leaving}))
			if tc.after == nil {
				require.NotContains(t, r.Clusters, "a")
			} else {
				require.Equal(t, tc.after, r.Clusters["a"])
			}
			require.Equal(t, &clusterEntry{Running: true}, r.Clusters["b"], "a cluster that stays is not touched")
		})
	}
}

// While a leaving cluster's uninstall fails, status shows why beside the planned clusters; its removal
// forgets it. Only reports of the removal count: a stale regular one is ignored.
func TestARemovalShowsWhyItHasNotSucceeded(t *testing.T) {
	r := newRollout()
	r.Clusters["a"] = &clusterEntry{Running: true, Status: &api.ClusterStatus{Name: "a", State: api.StateReady}}
	r.leave([]api.LeavingCluster{{Name: "a"}})
	require.Equal(t, api.ClusterStatus{Name: "a", State: api.StateWaitApplied, Message: "uninstalling", Reachable: true}, r.removalView("a"))

	r.onReport(api.ClusterReport{Cluster: "a", Status: api.ClusterStatus{Name: "a", State: api.StateReady}})
	failing := api.ClusterStatus{Name: "a", State: api.StateErrApplied, Message: `uninstall failed, retrying until it succeeds: cluster "a" unreachable`}
	r.onReport(api.ClusterReport{Cluster: "a", Status: failing, Removing: true})
	require.Equal(t, failing, r.removalView("a"))
	require.Equal(t, []string{"a"}, r.removing())

	r.onReport(api.ClusterReport{Cluster: "a", Removed: true})
	require.NotContains(t, r.Clusters, "a")
}
