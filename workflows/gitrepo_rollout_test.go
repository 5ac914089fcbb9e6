package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/flotilla-gitops/flotilla/api"
)

// gatedFleet mocks Poll at c1 and a Plan of two partitions: canary (cluster a) gated by a soak time and
// an approval, then rest (cluster b).
func gatedFleet(env *testsuite.TestWorkflowEnvironment, soak time.Duration, approval bool) {
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(api.PollResult{Commit: "c1", InventoryGeneration: 1}, nil)
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.PlanInput) (api.Plan, error) {
		p := planFor("a", "b")
		p.Clusters[1].Partition = 1
		p.Rollout = &api.RolloutPlan{MaxUnavailable: 1, MaxNew: 50, Partitions: []api.PartitionPlan{
			{Name: "canary", Approval: approval, Soak: soak}, {Name: "rest"}}}
		return *p, nil
	})
}

func rolloutOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.GitRepoStatus {
	v, err := env.QueryWorkflow(api.QueryStatus)
	require.NoError(t, err)
	var st api.GitRepoStatus
	require.NoError(t, v.Get(&st))
	require.NotNil(t, st.Rollout)
	return st
}

// The canary's gate opens when its soak time, on the workflow's clock, has passed and someone approved:
// approving before the soak ends is refused with the reason, and the rest starts only after the approval.
func TestTheWorkflowOpensAGateAfterItsSoakTimeAndAnApproval(t *testing.T) {
	env := newEnv()
	gatedFleet(env, 10*time.Minute, true)
	started, _ := fakeChildren(env)
	start := env.Now()
	var approvedAt time.Time

	env.RegisterDelayedCallback(func() {
		require.Contains(t, started, "a")
		require.NotContains(t, started, "b", "rest waits for the canary")
		report(env, ready("a", 1))
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		st := rolloutOf(t, env)
		require.Equal(t, api.PartitionSoaking, st.Rollout.Partitions[0].State)
		update(env, api.UpdateRolloutApprove, api.RolloutActionInput{By: "alice"}, func(_ any, err error) {
			require.ErrorContains(t, err, "no partition waits for approval")
			require.ErrorContains(t, err, `partition "canary" (1 of 2) is done and soaks until`)
		})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		st := rolloutOf(t, env)
		require.Equal(t, api.PartitionAwaitingApproval, st.Rollout.Partitions[0].State, "the soak ended on its own timer")
		require.NotContains(t, started, "b")
		update(env, api.UpdateRolloutApprove, api.RolloutActionInput{Partition: "rest", By: "alice"}, func(_ any, err error) {
			require.ErrorContains(t, err, `partition "rest" does not wait for approval; "canary" does`)
		})
		approvedAt = env.Now()
		update(env, api.UpdateRolloutApprove, api.RolloutActionInput{Partition: "canary", By: "alice", Reason: "looks good"}, func(v any, err error) {
			require.NoError(t, err)
		})
	}, 15*time.Minute)
	env.RegisterDelayedCallback(func() {
		require.Contains(t, started, "b")
		st := rolloutOf(t, env)
		require.Equal(t, "alice", st.Rollout.Partitions[0].ApprovedBy.By)
		require.Len(t, st.Events, 1)
		require.Equal(t, "looks good", st.Events[0].Reason)
		env.SetContinueAsNewSuggested(true)
	}, 16*time.Minute)

	env.ExecuteWorkflow(GitRepoWorkflow, shopInput(10))

	require.False(t, approvedAt.IsZero())
	require.False(t, started["b"].Before(approvedAt), "b started after the approval")
	require.GreaterOrEqual(t, approvedAt.Sub(start), 10*time.Minute)
	r := carriedRollout(t, env)
	require.Equal(t, "alice", r.Gates.Approved["canary"].By, "the approval survives continue-as-new")
}

// With nothing else to wake the GitRepo (it polls hourly), the end of a soak does: the rest starts right
// after it.
func TestTheEndOfASoakWakesTheGitRepo(t *testing.T) {
	env := newEnv()
	gatedFleet(env, 10*time.Minute, false)
	started, _ := fakeChildren(env)
	var readyAt time.Time
	env.RegisterDelayedCallback(func() {
		readyAt = env.Now()
		report(env, ready("a", 1))
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 20*time.Minute)
	in := shopInput(10)
	in.Spec.PollingInterval = "1h"
	in.Flotilla.ResyncInterval = "1h"
	env.ExecuteWorkflow(GitRepoWorkflow, in)

	require.Contains(t, started, "b")
	waited := started["b"].Sub(readyAt)
	require.GreaterOrEqual(t, waited, 10*time.Minute)
	require.Less(t, waited, 10*time.Minute+5*time.Second, "woken by the soak's end, not by a poll")
}
