package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

func agentInput() api.ClusterWorkflowInput {
	in := clusterInput()
	in.Target.Agent = true
	in.Shape = ClusterShapeCurrent
	return in
}

var webPrepared = []api.PreparedBundle{{Bundle: "web", Release: []byte(`{"v":1}`), Package: "sha256:ab", PackageSize: 42}}

// scheduleToStartTimeout is what a task no agent picked up in time fails with.
func scheduleToStartTimeout() error {
	return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
}

// An agent-mode cluster is rendered on the management side once per desired state, and everything that
// touches the cluster goes to the agent's own task queue with that rendering.
func TestAgentClusterRendersOnceAndSendsClusterWorkToItsAgent(t *testing.T) {
	env := newEnv()
	prepared := 0
	env.OnActivity(api.ActivityPrepare, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.PrepareInput) (api.PrepareResult, error) {
		prepared++
		return api.PrepareResult{Bundles: webPrepared}, nil
	})
	observed := 0
	var queues []string
	var sent [][]api.PreparedBundle
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(ctx context.Context, in api.ObserveInput) (api.Observation, error) {
		queues, sent = append(queues, activity.GetInfo(ctx).TaskQueue), append(sent, in.Prepared)
		observed++
		if observed == 1 {
			return deployed(""), nil
		}
		return deployed("s-1"), nil
	})
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(func(ctx context.Context, in api.ApplyInput) (api.ApplyResult, error) {
		queues, sent = append(queues, activity.GetInfo(ctx).TaskQueue), append(sent, in.Prepared)
		return api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil
	}).Once()
	captureReports(env)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)

	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: "flotilla"})
	env.ExecuteWorkflow(ClusterWorkflow, agentInput())

	require.True(t, workflow.IsContinueAsNewError(env.GetWorkflowError()), "%v", env.GetWorkflowError())
	require.GreaterOrEqual(t, observed, 4)
	for i, q := range queues {
		require.Equal(t, "flotilla-agent.fleet-default.edge-1", q, "task %d goes to the agent's queue", i)
		require.Equal(t, webPrepared, sent[i], "task %d carries the management side's rendering", i)
	}
	require.Equal(t, 1, prepared, "idle checks of an unchanged desired state render nothing")
}

// An agent that does not pick its task up makes the cluster Offline, with when it was last seen; the
// bundles it ran are no longer shown Ready, and the next task waits in the queue for a whole check
// interval instead of being retried in a loop.
func TestAgentThatStopsPollingShowsItsClusterOffline(t *testing.T) {
	env := newEnv()
	env.OnActivity(api.ActivityPrepare, mock.Anything, mock.Anything).Return(api.PrepareResult{Bundles: webPrepared}, nil)
	calls := 0
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ api.ObserveInput) (api.Observation, error) {
		calls++
		if calls == 1 {
			return deployed("s-1"), nil
		}
		return api.Observation{}, scheduleToStartTimeout()
	})
	// The fresh run sweeps what its target does not have (here: nothing), through the agent too.
	env.OnActivity(api.ActivityUninstall, mock.Anything, mock.Anything).Return(api.UninstallResult{}, nil).Once()
	reports := captureReports(env)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, agentInput())

	require.GreaterOrEqual(t, len(*reports), 2)
	first, offline := (*reports)[0].Status, (*reports)[1].Status
	require.Equal(t, api.StateReady, first.State)
	require.Equal(t, api.StateOffline, offline.State)
	require.True(t, offline.Offline)
	require.Contains(t, offline.Message, `cluster "edge-1": agent offline`)
	require.Contains(t, offline.Message, "last seen")
	require.Equal(t, "agent offline", offline.Bundles[0].Message)
	require.NotEqual(t, api.StateReady, offline.Bundles[0].State)
	// Five minutes of virtual time at a one-minute interval: one attempt per interval, not a loop.
	require.LessOrEqual(t, calls, 7, "attempts while the agent is away")
}
