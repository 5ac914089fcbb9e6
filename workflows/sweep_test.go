package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

// A bundle deleted from the repository leaves the cluster's target: the cluster workflow uninstalls its
// release, once, and keeps every release of a bundle it could not render.
func TestABundleThatLeavesTheTargetIsUninstalledOnce(t *testing.T) {
	env := newEnv()
	in := clusterInput()
	in.Target.Bundles = append(in.Target.Bundles, api.BundleRef{Name: "api", Path: "api"}, api.BundleRef{Name: "broken", Path: "broken"})
	withAPI := true
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.ObserveInput) (api.Observation, error) {
		obs := deployed("s-1")
		if withAPI {
			apiBundle := obs.Bundles[0]
			apiBundle.Bundle, apiBundle.ReleaseName, apiBundle.Namespace = "api", "api", "api"
			obs.Bundles = append(obs.Bundles, apiBundle)
		}
		obs.Bundles = append(obs.Bundles, api.BundleObservation{Bundle: "broken", Error: "values.yaml: map has no entry for key \"x\"", ErrorType: api.ErrTypeTemplate})
		return obs, nil
	})
	var sweeps []api.Sweep
	env.OnActivity(api.ActivityUninstall, mock.Anything, mock.Anything).Return(func(_ context.Context, u api.UninstallInput) (api.UninstallResult, error) {
		require.NotNil(t, u.Sweep, "a sweep, never a removal of everything")
		sweeps = append(sweeps, *u.Sweep)
		return api.UninstallResult{}, nil
	})
	captureReports(env)
	env.RegisterDelayedCallback(func() {
		// The next commit deletes "api" from the repository.
		withAPI = false
		up := api.DesiredUpdate{Target: in.Target, Generation: 2}
		up.Target.Bundles = []api.BundleRef{in.Target.Bundles[0], in.Target.Bundles[2]}
		env.SignalWorkflow(api.SignalDesired, up)
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 6*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, in)

	require.Len(t, sweeps, 2, "once when the run starts, once when the target changed; idle checks never sweep")
	require.ElementsMatch(t, []api.ReleaseRef{{Bundle: "web", Namespace: "web", Name: "web"}, {Bundle: "api", Namespace: "api", Name: "api"}}, sweeps[0].Releases)
	require.Equal(t, []api.ReleaseRef{{Bundle: "web", Namespace: "web", Name: "web"}}, sweeps[1].Releases, "api's release is no longer kept")
	require.Equal(t, []string{"broken"}, sweeps[1].KeepBundles, "a bundle that does not render keeps what it runs")
}

// A paused cluster changes nothing, so it sweeps nothing either.
func TestAPausedClusterDoesNotSweep(t *testing.T) {
	env := newEnv()
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(deployed("s-1"), nil)
	captureReports(env)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 3*time.Minute)
	in := clusterInput()
	in.Paused = true
	env.ExecuteWorkflow(ClusterWorkflow, in)
	env.AssertNotCalled(t, "Uninstall", mock.Anything, mock.Anything)
}
