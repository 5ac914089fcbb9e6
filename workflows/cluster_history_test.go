package workflows

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

var deployedAt = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func upgraded(revision int, errMsg string) api.Deployment {
	return api.Deployment{At: deployedAt, Commit: "c2", Attempts: 1,
		Bundles: []api.DeployedBundle{{Bundle: "web", Action: api.ActionUpgrade, ChartVersion: "1.2.0", Revision: revision, Error: errMsg}}}
}

// An apply is recorded with what each bundle's release became; a bundle whose desired state moved on
// before the apply is left out, and an apply that did not run at all is recorded with why.
func TestADeploymentRecordsWhatEachBundleBecame(t *testing.T) {
	obs := api.Observation{Bundles: []api.BundleObservation{{Bundle: "web", ChartVersion: "1.2.0"}, {Bundle: "db"}}}
	actions := []api.BundleAction{{Bundle: "web", Action: api.ActionUpgrade}, {Bundle: "db", Action: api.ActionInstall}}

	d := deployment(deployedAt, 3*time.Second, "c2", actions, obs, &api.ApplyResult{Bundles: []api.BundleApplyResult{
		{Bundle: "web", Revision: 4}, {Bundle: "db", Skipped: true}}}, nil)
	require.Equal(t, &api.Deployment{At: deployedAt, Seconds: 3, Commit: "c2", Attempts: 1,
		Bundles: []api.DeployedBundle{{Bundle: "web", Action: api.ActionUpgrade, ChartVersion: "1.2.0", Revision: 4}}}, d)

	require.Nil(t, deployment(deployedAt, time.Second, "c2", actions[1:], obs, &api.ApplyResult{Bundles: []api.BundleApplyResult{
		{Bundle: "db", Skipped: true}}}, nil), "nothing was applied")

	d = deployment(deployedAt, time.Second, "c2", actions[:1], obs, nil, errors.New(`cluster "edge-1": connection refused`))
	require.Equal(t, `cluster "edge-1": connection refused`, d.Error)
	require.True(t, d.Failed())
	require.Equal(t, []api.DeployedBundle{{Bundle: "web", Action: api.ActionUpgrade, ChartVersion: "1.2.0"}}, d.Bundles)
}

// The same failure retried with backoff is one deployment with its attempts counted, so hours of retries
// do not push the deployments before it out; the history keeps the last HistoryLength deployments.
func TestTheHistoryCountsARepeatedFailureOnceAndKeepsTheLastDeployments(t *testing.T) {
	var h []api.Deployment
	h = remember(h, upgraded(0, "timed out waiting for the condition"))
	h = remember(h, upgraded(0, "timed out waiting for the condition"))
	h = remember(h, upgraded(0, "timed out waiting for the condition"))
	require.Len(t, h, 1)
	require.Equal(t, 3, h[0].Attempts)
	h = remember(h, upgraded(0, "another error"))
	h = remember(h, upgraded(7, ""))
	h = remember(h, upgraded(7, ""))
	require.Len(t, h, 4, "another error, and successes, are deployments of their own")

	for i := 0; i < 2*api.HistoryLength; i++ {
		h = remember(h, upgraded(8+i, ""))
	}
	require.Len(t, h, api.HistoryLength)
	require.Equal(t, 8+2*api.HistoryLength-1, h[len(h)-1].Bundles[0].Revision, "the newest is last")
	require.Equal(t, 8+api.HistoryLength, h[0].Bundles[0].Revision, "the oldest kept")
}

// A cluster's history is in its workflow's state: the query answers it, and a continue-as-new hands it to
// the next run, which adds to it.
func TestAClustersHistorySurvivesContinueAsNew(t *testing.T) {
	env := newEnv()
	observeNewThenDeployed(env)
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil).Once()
	captureReports(env)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)
	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	var next api.ClusterWorkflowInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))

	// The next run is handed commit c2, whose desired state s-2 upgrades the release to revision 2.
	env = newEnv()
	applied := false
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(context.Context, api.ObserveInput) (api.Observation, error) {
		o := deployed("s-1")
		b := &o.Bundles[0]
		b.DesiredID, b.ChartVersion = "s-2", "2.0.0"
		if applied {
			b.Release.DeploymentID, b.Release.Revision = "s-2", 2
		}
		return o, nil
	})
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(func(context.Context, api.ApplyInput) (api.ApplyResult, error) {
		applied = true
		return api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 2}}}, nil
	}).Once()
	captureReports(env)
	next.Target.Commit, next.Generation = "c2", 2
	var history []api.Deployment
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryHistory)
		require.NoError(t, err)
		require.NoError(t, v.Get(&history))
		env.SetContinueAsNewSuggested(true)
	}, 5*time.Minute)
	env.ExecuteWorkflow(ClusterWorkflow, next)

	require.Len(t, history, 2, "%+v", history)
	require.Equal(t, clusterInput().Target.Commit, history[0].Commit)
	require.Equal(t, []api.DeployedBundle{{Bundle: "web", Action: api.ActionInstall, Revision: 1}}, history[0].Bundles)
	require.Equal(t, "c2", history[1].Commit)
	require.Equal(t, []api.DeployedBundle{{Bundle: "web", Action: api.ActionUpgrade, ChartVersion: "2.0.0", Revision: 2}}, history[1].Bundles,
		fmt.Sprintf("%+v", history[1]))
}
