package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// On the SDK test environment's clock: a GitRepo whose only window allows 22:00-23:00 UTC hands its first
// commit over when the window opens (its own timer wakes it; it polls hourly), holds a commit pushed after
// the window closed, saying when it opens, and lets it through at once when someone overrides the window.
func TestASyncWindowHoldsChangesUntilItOpensOrIsOverridden(t *testing.T) {
	env := newEnv()
	env.SetStartTime(time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC))
	commit := "c1"
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(func(context.Context, api.PollInput) (api.PollResult, error) {
		return api.PollResult{Commit: commit, InventoryGeneration: 1}, nil
	})
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.PlanInput) (api.Plan, error) {
		p := planFor("a")
		p.Commit = in.Commit
		return *p, nil
	})
	started, _ := fakeChildren(env)
	status := func() api.GitRepoStatus {
		v, err := env.QueryWorkflow(api.QueryStatus)
		require.NoError(t, err)
		var st api.GitRepoStatus
		require.NoError(t, v.Get(&st))
		return st
	}
	env.RegisterDelayedCallback(func() {
		require.NotContains(t, started, "a", "the window is closed")
		st := status()
		require.Contains(t, st.Clusters[0].Message, "waits for its sync window (opens at 2026-11-25 22:00:00 UTC)")
		require.Equal(t, "closed on 1 of 1 clusters; the next window opens or closes at 2026-11-25 22:00:00 UTC", st.SyncWindow)
	}, 30*time.Minute)
	env.RegisterDelayedCallback(func() {
		require.Contains(t, started, "a")
		require.WithinDuration(t, time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC), started["a"], 5*time.Second, "woken by the window's opening")
		report(env, ready("a", 1))
	}, 62*time.Minute)
	env.RegisterDelayedCallback(func() {
		commit = "c2"
		env.SignalWorkflow(api.SignalSync, nil)
	}, 2*time.Hour+30*time.Minute)
	env.RegisterDelayedCallback(func() {
		st := status()
		require.Equal(t, "c2", st.Commit)
		a := st.Clusters[0]
		require.Equal(t, api.StateOutOfSync, a.State)
		require.Contains(t, a.Message, "c2 waits for its sync window (opens at 2026-11-26 22:00:00 UTC)")
		update(env, api.UpdateOverrideWindow, api.RolloutActionInput{By: "oncall", Reason: "CVE fix"}, func(_ any, err error) { require.NoError(t, err) })
	}, 2*time.Hour+31*time.Minute)
	env.RegisterDelayedCallback(func() {
		st := status()
		require.Equal(t, api.StateWaitApplied, st.Clusters[0].State, "handed over at once")
		require.True(t, strings.HasPrefix(st.SyncWindow, "overridden for commit c2 by oncall"), st.SyncWindow)
		require.Equal(t, "override window", st.Events[0].Action)
		update(env, api.UpdateOverrideWindow, api.RolloutActionInput{By: "oncall"}, func(_ any, err error) {
			require.ErrorContains(t, err, "already overridden for commit c2")
		})
		env.SetContinueAsNewSuggested(true)
	}, 2*time.Hour+32*time.Minute)

	in := shopInput(10)
	in.Spec.PollingInterval = "1h"
	in.Flotilla.ResyncInterval = "24h"
	in.Spec.SyncWindows = []fleet.SyncWindow{{Kind: fleet.WindowAllow, Schedule: "0 22 * * *", Duration: "1h"}}
	env.ExecuteWorkflow(GitRepoWorkflow, in)
	r := carriedRollout(t, env)
	require.Equal(t, int64(2), r.Generation, "two hand-overs: c1 when the window opened, c2 when it was overridden")
}

// Windows added while they are closed still reach the cluster workflow, so it stops correcting drift at
// once; a new commit waits for them to open.
func TestWindowsAloneReachAClusterWhoseWindowsAreClosed(t *testing.T) {
	r := newRollout()
	plan := planFor("a")
	r.nextDeliveries(plan, t0, 10, desiredFor("c1"), nil)
	r.onDelivered("a", nil)
	windows := []fleet.SyncWindow{{Kind: fleet.WindowDeny, Schedule: "* * * * *", Duration: "1h"}}
	withWindows := func(commit string) func(api.PlannedCluster) api.DesiredUpdate {
		return func(pc api.PlannedCluster) api.DesiredUpdate {
			up := desiredFor(commit)(pc)
			up.SyncWindows = windows
			return up
		}
	}
	r.closed = map[string]string{"a": "waits for its sync window"}
	hs := r.nextDeliveries(plan, t0.Add(time.Minute), 10, withWindows("c1"), nil)
	require.Len(t, hs, 1, "only the windows changed")
	require.Equal(t, windows, hs[0].Update.SyncWindows)
	r.onDelivered("a", nil)
	require.Empty(t, r.nextDeliveries(plan, t0.Add(2*time.Minute), 10, withWindows("c2"), nil), "a new commit waits")
	r.closed = nil
	require.Len(t, r.nextDeliveries(plan, t0.Add(3*time.Minute), 10, withWindows("c2"), nil), 1, "and goes once they open")
}

// A window that closes mid-rollout stops it between partitions; the next opening finishes it.
func TestAWindowThatClosesMidRolloutStopsItUntilTheNextOpening(t *testing.T) {
	env := newEnv()
	env.SetStartTime(time.Date(2026, 11, 25, 21, 59, 0, 0, time.UTC))
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(api.PollResult{Commit: "c1", InventoryGeneration: 1}, nil)
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.PlanInput) (api.Plan, error) {
		p := planFor("a", "b")
		p.Clusters[1].Partition = 1
		p.Rollout = &api.RolloutPlan{MaxUnavailable: 1, MaxNew: 50, Partitions: []api.PartitionPlan{{Name: "first"}, {Name: "second"}}}
		return *p, nil
	})
	started, _ := fakeChildren(env)
	env.RegisterDelayedCallback(func() {
		require.Contains(t, started, "a", "the window opened at 22:00")
		require.NotContains(t, started, "b", "b waits for a")
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() { report(env, ready("a", 1)) }, 4*time.Minute) // 22:03, the window closed at 22:02
	env.RegisterDelayedCallback(func() {
		require.NotContains(t, started, "b", "the window closed mid-rollout")
	}, 20*time.Hour)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 25*time.Hour)
	in := shopInput(10)
	in.Spec.PollingInterval = "1h"
	in.Flotilla.ResyncInterval = "24h"
	in.Spec.SyncWindows = []fleet.SyncWindow{{Kind: fleet.WindowAllow, Schedule: "0 22 * * *", Duration: "2m"}}
	env.ExecuteWorkflow(GitRepoWorkflow, in)

	require.Contains(t, started, "b")
	require.WithinDuration(t, time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC), started["b"], 5*time.Second, "the next opening finishes it")
}
