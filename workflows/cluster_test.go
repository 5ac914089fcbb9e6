package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/activities"
)

func clusterInput() ClusterWorkflowInput {
	return ClusterWorkflowInput{Generation: 1, CheckInterval: time.Minute, Target: activities.ClusterTarget{
		GitRepo: "shop", Cluster: "edge-1", Repo: "https://git.example.com/shop.git", Commit: "0123456789abcdef0123456789abcdef01234567",
		Bundles: []activities.BundleRef{{Name: "web", Path: "web"}},
	}}
}

func deployed(id string) activities.Observation {
	return activities.Observation{Bundles: []activities.BundleObservation{{Bundle: "web", ReleaseName: "web", Namespace: "web",
		Deploy: true, DesiredID: "s-1", Release: activities.ReleaseInfo{Exists: id != "", Status: "deployed", Revision: 1, DeploymentID: id},
		Resources: activities.ResourceSummary{Checked: id != "", Counts: activities.ResourceCounts{DesiredReady: 2, Ready: 2}}}}}
}

// A new cluster installs once, reports Ready to its GitRepo, then only checks: an in-sync release is
// never applied again, and the workflow continues as new when its history should be cut.
func TestClusterWorkflowInstallsOnceThenOnlyChecks(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	observed := observeNewThenDeployed(env)
	env.OnActivity(a.Apply, mock.Anything, mock.Anything).Return(activities.ApplyResult{Bundles: []activities.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil).Once()
	reports := captureReports(env)
	// Let a few idle checks happen, then ask for continue-as-new.
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

	require.True(t, env.IsWorkflowCompleted())
	require.True(t, workflow.IsContinueAsNewError(env.GetWorkflowError()), "history is cut by continue-as-new: %v", env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "Apply", 1)
	require.GreaterOrEqual(t, *observed, 4, "idle checks keep observing")
	require.Len(t, *reports, 1, "an unchanged status is reported once")
	require.Equal(t, StateReady, (*reports)[0].Status.State)
	require.Equal(t, int64(1), (*reports)[0].Status.Generation)
}

// A cluster that cannot be reached reports it, keeps no stale Ready, and retries on its own.
func TestClusterWorkflowReportsUnreachableAndRetries(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	calls := 0
	env.OnActivity(a.Observe, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.ObserveInput) (activities.Observation, error) {
		calls++
		if calls <= 4 { // two attempts per observation: the first two observations fail
			return activities.Observation{}, testError("cluster \"edge-1\" unreachable: connection refused")
		}
		return deployed("s-1"), nil
	})
	// Once it answers, the fresh run sweeps what its target does not have (here: nothing).
	env.OnActivity(a.Uninstall, mock.Anything, mock.Anything).Return(activities.UninstallResult{}, nil).Once()
	var states []string
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/shop", "", SignalClusterReport, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			r := arg.(ClusterReport)
			states = append(states, r.Status.State)
			if len(states) == 1 {
				require.False(t, r.Status.Reachable)
				require.Contains(t, r.Status.Message, "unreachable")
			}
			return nil
		})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 10*time.Minute)
	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())
	require.Equal(t, StateErrApplied, states[0])
	require.Equal(t, StateReady, states[len(states)-1], "it converges once the cluster answers")
}

type testError string

func (e testError) Error() string { return string(e) }

// Apply observes after applying, so an install costs two activities (Observe, Apply), not three; an
// Apply that could not observe (or an older worker's) leaves it to a separate Observe.
func TestClusterWorkflowTakesThePostApplyObservationFromApply(t *testing.T) {
	for _, applyObserves := range []bool{true, false} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		var a *activities.Activities
		observed := observeNewThenDeployed(env)
		env.OnActivity(a.Apply, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ApplyInput) (activities.ApplyResult, error) {
			require.True(t, in.Observe, "the workflow asks Apply to observe")
			res := activities.ApplyResult{Bundles: []activities.BundleApplyResult{{Bundle: "web", Revision: 1}}}
			if applyObserves {
				obs := deployed("s-1")
				res.Observation = &obs
			}
			return res, nil
		}).Once()
		reports := captureReports(env)
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 30*time.Second)

		env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

		require.Len(t, *reports, 1)
		require.Equal(t, StateReady, (*reports)[0].Status.State, "Apply observing: %v", applyObserves)
		want := 1
		if !applyObserves {
			want = 2
		}
		require.Equal(t, want, *observed, "Observe activities before the first report (Apply observing: %v)", applyObserves)
	}
}

// An apply that took long and failed is retried after its backoff counted from when it failed, not from
// when the reconcile began: a slow cluster (or a worker killed mid-apply, whose retry then meets the
// release it left pending) must not wait a whole check interval for its next attempt.
func TestClusterWorkflowRetriesASlowFailedApplyAfterItsBackoff(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	env.OnActivity(a.Observe, mock.Anything, mock.Anything).Return(deployed(""), nil)
	var applied []time.Time
	env.OnActivity(a.Apply, mock.Anything, mock.Anything).After(90 * time.Second).Return(
		func(_ context.Context, _ activities.ApplyInput) (activities.ApplyResult, error) {
			applied = append(applied, env.Now())
			if len(applied) == 1 {
				return activities.ApplyResult{Bundles: []activities.BundleApplyResult{{Bundle: "web",
					Error: "another operation (install/upgrade/rollback) is in progress", ErrorType: activities.ErrTypeApply}}}, nil
			}
			obs := deployed("s-1")
			return activities.ApplyResult{Bundles: []activities.BundleApplyResult{{Bundle: "web", Revision: 1}}, Observation: &obs}, nil
		})
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/shop", "", SignalClusterReport, mock.Anything).Return(nil)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

	require.GreaterOrEqual(t, len(applied), 2, "the failed apply is retried")
	// The second attempt starts (and, with the mock's 90 s, ends) one backoff after the first failed.
	gap := applied[1].Sub(applied[0]) - 90*time.Second
	require.LessOrEqual(t, gap, RetryFirst+time.Second, "retried %s after failing; the check interval is %s", gap, clusterInput().CheckInterval)
}

// observeNewThenDeployed makes the first observation find no release and every later one find it at
// the desired ID; it returns the count of observations.
func observeNewThenDeployed(env *testsuite.TestWorkflowEnvironment) *int {
	var a *activities.Activities
	observed := 0
	env.OnActivity(a.Observe, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.ObserveInput) (activities.Observation, error) {
		observed++
		if observed == 1 {
			return deployed(""), nil
		}
		return deployed("s-1"), nil
	})
	return &observed
}

// captureReports records the status reports the cluster workflow signals to its GitRepo.
func captureReports(env *testsuite.TestWorkflowEnvironment) *[]ClusterReport {
	var reports []ClusterReport
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/shop", "", SignalClusterReport, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error { reports = append(reports, arg.(ClusterReport)); return nil })
	return &reports
}

// A run that knows its shape from its input records no version marker, so no TemporalChangeVersion
// upsert (a visibility write per cluster workflow run), and hands its shape on at continue-as-new; a
// run started before the field existed still asks GetVersion, as its recorded history expects.
func TestClusterWorkflowShapeComesFromItsInputNotFromGetVersion(t *testing.T) {
	for _, tc := range []struct {
		name           string
		shape          int
		wantGetVersion bool
	}{{"started by the current GitRepo", ClusterShapeCurrent, false}, {"started before Shape existed", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			var a *activities.Activities
			observeNewThenDeployed(env)
			env.OnActivity(a.Apply, mock.Anything, mock.Anything).Return(activities.ApplyResult{Bundles: []activities.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil)
			captureReports(env)
			askedVersion := false
			env.OnGetVersion(clusterLoop2, workflow.DefaultVersion, 1).Return(func(string, workflow.Version, workflow.Version) workflow.Version {
				askedVersion = true
				return 1
			})
			localObserves := 0
			env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { localObserves++ })
			env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 3*time.Minute)

			in := clusterInput()
			in.Shape = tc.shape
			env.ExecuteWorkflow(ClusterWorkflow, in)

			require.Equal(t, tc.wantGetVersion, askedVersion)
			require.Positive(t, localObserves, "Observe runs as a local activity either way")
			var can *workflow.ContinueAsNewError
			require.ErrorAs(t, env.GetWorkflowError(), &can)
			var next ClusterWorkflowInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.Equal(t, ClusterShapeCurrent, next.Shape, "the next run is executed by this code")
		})
	}
}
