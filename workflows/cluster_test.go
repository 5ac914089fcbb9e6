package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/api"
)

func clusterInput() api.ClusterWorkflowInput {
	return api.ClusterWorkflowInput{Generation: 1, CheckInterval: time.Minute, Target: api.ClusterTarget{
		GitRepo: "shop", Cluster: "edge-1", Repo: "https://git.example.com/shop.git", Commit: "0123456789abcdef0123456789abcdef01234567",
		Bundles: []api.BundleRef{{Name: "web", Path: "web"}},
	}}
}

func deployed(id string) api.Observation {
	return api.Observation{Bundles: []api.BundleObservation{{Bundle: "web", ReleaseName: "web", Namespace: "web",
		Deploy: true, DesiredID: "s-1", Release: api.ReleaseInfo{Exists: id != "", Status: "deployed", Revision: 1, DeploymentID: id},
		Resources: api.ResourceSummary{Checked: id != "", Counts: api.ResourceCounts{DesiredReady: 2, Ready: 2}}}}}
}

// A new cluster installs once, reports Ready to its GitRepo, then only checks: an in-sync release is
// never applied again, and the workflow continues as new when its history should be cut.
func TestClusterWorkflowInstallsOnceThenOnlyChecks(t *testing.T) {
	env := newEnv()
	observed := observeNewThenDeployed(env)
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil).Once()
	reports := captureReports(env)
	// Let a few idle checks happen, then ask for continue-as-new.
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

	require.True(t, env.IsWorkflowCompleted())
	require.True(t, workflow.IsContinueAsNewError(env.GetWorkflowError()), "history is cut by continue-as-new: %v", env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "Apply", 1)
	require.GreaterOrEqual(t, *observed, 4, "idle checks keep observing")
	require.Len(t, *reports, 1, "an unchanged status is reported once")
	require.Equal(t, api.StateReady, (*reports)[0].Status.State)
	require.Equal(t, int64(1), (*reports)[0].Status.Generation)
}

// A cluster that cannot be reached reports it, keeps no stale Ready, and retries on its own.
func TestClusterWorkflowReportsUnreachableAndRetries(t *testing.T) {
	env := newEnv()
	calls := 0
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.ObserveInput) (api.Observation, error) {
		calls++
		if calls <= 4 { // two attempts per observation: the first two observations fail
			return api.Observation{}, testError("cluster \"edge-1\" unreachable: connection refused")
		}
		return deployed("s-1"), nil
	})
	// Once it answers, the fresh run sweeps what its target does not have (here: nothing).
	env.OnActivity(api.ActivityUninstall, mock.Anything, mock.Anything).Return(api.UninstallResult{}, nil).Once()
	var states []string
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/shop", "", api.SignalClusterReport, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			r := arg.(api.ClusterReport)
			states = append(states, r.Status.State)
			if len(states) == 1 {
				require.False(t, r.Status.Reachable)
				require.Contains(t, r.Status.Message, "unreachable")
			}
			return nil
		})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 10*time.Minute)
	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())
	require.Equal(t, api.StateErrApplied, states[0])
	require.Equal(t, api.StateReady, states[len(states)-1], "it converges once the cluster answers")
}

type testError string

func (e testError) Error() string { return string(e) }

// Apply observes after applying, so an install costs two activities (Observe, Apply), not three; an
// Apply that could not observe (or an older worker's) leaves it to a separate Observe.
func TestClusterWorkflowTakesThePostApplyObservationFromApply(t *testing.T) {
	for _, applyObserves := range []bool{true, false} {
		env := newEnv()
		observed := observeNewThenDeployed(env)
		env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.ApplyInput) (api.ApplyResult, error) {
			require.True(t, in.Observe, "the workflow asks Apply to observe")
			res := api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}
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
		require.Equal(t, api.StateReady, (*reports)[0].Status.State, "Apply observing: %v", applyObserves)
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
	env := newEnv()
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(deployed(""), nil)
	var applied []time.Time
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).After(90 * time.Second).Return(
		func(_ context.Context, _ api.ApplyInput) (api.ApplyResult, error) {
			applied = append(applied, env.Now())
			if len(applied) == 1 {
				return api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web",
					Error: "another operation (install/upgrade/rollback) is in progress", ErrorType: api.ErrTypeApply}}}, nil
			}
			obs := deployed("s-1")
			return api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}, Observation: &obs}, nil
		})
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/shop", "", api.SignalClusterReport, mock.Anything).Return(nil)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

	require.GreaterOrEqual(t, len(applied), 2, "the failed apply is retried")
	// The second attempt starts (and, with the mock's 90 s, ends) one backoff after the first failed.
	gap := applied[1].Sub(applied[0]) - 90*time.Second
	require.LessOrEqual(t, gap, RetryFirst+time.Second, "retried %s after failing; the check interval is %s", gap, clusterInput().CheckInterval)
}

// newEnv is a test environment with every activity registered as the worker registers it, under its api
// name, for the test to mock by that name. The activities have no dependencies: one a test did not mock
// fails rather than reach a cluster.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The environment's own default gives a workflow 3 s of real time, which a loaded 2-core machine can
	// exceed; virtual time is skipped anyway.
	env.SetTestTimeout(2 * time.Minute)
	// The SDK takes a workflow task that runs over a second of real time for a deadlock; on a loaded 2-core
	// machine a task can wait that long for a core without any deadlock.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	var unmocked *activities.Activities
	unmocked.Register(env)
	return env
}

// observeNewThenDeployed makes the first observation find no release and every later one find it at
// the desired ID; it returns the count of observations.
func observeNewThenDeployed(env *testsuite.TestWorkflowEnvironment) *int {
	observed := 0
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.ObserveInput) (api.Observation, error) {
		observed++
		if observed == 1 {
			return deployed(""), nil
		}
		return deployed("s-1"), nil
	})
	return &observed
}

// captureReports records the status reports the cluster workflow signals to its GitRepo.
func captureReports(env *testsuite.TestWorkflowEnvironment) *[]api.ClusterReport {
	var reports []api.ClusterReport
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/shop", "", api.SignalClusterReport, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error { reports = append(reports, arg.(api.ClusterReport)); return nil })
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
			env := newEnv()
			observeNewThenDeployed(env)
			env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil)
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
			var next api.ClusterWorkflowInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.Equal(t, ClusterShapeCurrent, next.Shape, "the next run is executed by this code")
		})
	}
}

// A cluster told to remove retries a failing uninstall until it succeeds, telling its GitRepo why between
// attempts (once per reason), and reports the removal when it is done; a later request to forget the
// cluster (it leaves with its workloads kept) ends it at once, without another attempt.
func TestClusterWorkflowRetriesAFailingUninstallAndReportsWhy(t *testing.T) {
	for _, forgetLater := range []bool{false, true} {
		t.Run(map[bool]string{false: "the cluster comes back", true: "then it is forgotten"}[forgetLater], func(t *testing.T) {
			env := newEnv()
			observeNewThenDeployed(env)
			env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil)
			uninstalls := 0
			env.OnActivity(api.ActivityUninstall, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.UninstallInput) (api.UninstallResult, error) {
				if in.Sweep != nil {
					return api.UninstallResult{}, nil
				}
				uninstalls++
				if uninstalls <= 6 { // three attempts of two tries each
					return api.UninstallResult{}, temporal.NewApplicationError(`cluster "edge-1" unreachable: connection refused`, api.ErrTypeUnreachable)
				}
				return api.UninstallResult{Removed: []string{"web/web"}}, nil
			})
			reports := captureReports(env)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalRemove, api.RemoveRequest{}) }, time.Minute)
			if forgetLater {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalRemove, api.RemoveRequest{Forget: true}) }, time.Minute+5*time.Second)
			}

			env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

			require.NoError(t, env.GetWorkflowError())
			var removing []api.ClusterReport
			for _, r := range *reports {
				if r.Removing {
					removing = append(removing, r)
				}
			}
			require.Len(t, removing, 1, "one reason, reported once")
			require.False(t, removing[0].Status.Reachable)
			require.Equal(t, api.StateErrApplied, removing[0].Status.State)
			require.Contains(t, removing[0].Status.Message, `uninstall failed, retrying until it succeeds: cluster "edge-1" unreachable`)
			last := (*reports)[len(*reports)-1]
			require.True(t, last.Removed)
			if forgetLater {
				require.Less(t, uninstalls, 6, "forgetting stopped the attempts")
				require.Contains(t, last.Status.Message, "its releases and objects stay")
				return
			}
			require.Equal(t, 7, uninstalls)
			require.Equal(t, "removed", last.Status.Message)
		})
	}
}

// A cluster leaving with its workloads kept is forgotten: the workflow ends without an uninstall.
func TestClusterWorkflowForgetsWithoutTouchingTheCluster(t *testing.T) {
	env := newEnv()
	observeNewThenDeployed(env)
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil)
	env.OnActivity(api.ActivityUninstall, mock.Anything, mock.MatchedBy(func(in api.UninstallInput) bool { return in.Sweep != nil })).Return(api.UninstallResult{}, nil)
	reports := captureReports(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalRemove, api.RemoveRequest{Forget: true}) }, time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, clusterInput())

	require.NoError(t, env.GetWorkflowError())
	last := (*reports)[len(*reports)-1]
	require.True(t, last.Removed)
	require.Contains(t, last.Status.Message, "forgotten")
}
