package workflows

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// Bundles of one cluster's observation, in the states the judge tests need.
func absentB(name string) api.BundleObservation {
	return api.BundleObservation{Bundle: name, ReleaseName: name, Namespace: "demo", Deploy: true, DesiredID: "s-" + name}
}

func readyB(name string) api.BundleObservation {
	o := absentB(name)
	o.Release = api.ReleaseInfo{Exists: true, Status: api.ReleaseDeployed, Revision: 1, DeploymentID: o.DesiredID}
	o.Resources = api.ResourceSummary{Checked: true, Counts: api.ResourceCounts{DesiredReady: 2, Ready: 2}}
	return o
}

func notReadyB(name string) api.BundleObservation {
	o := readyB(name)
	o.Resources = api.ResourceSummary{Checked: true, Counts: api.ResourceCounts{DesiredReady: 2, Ready: 1, NotReady: 1},
		NonReady: []string{"deployment demo/operator notReady"}}
	return o
}

func outdatedB(name string) api.BundleObservation {
	o := readyB(name)
	o.Release.DeploymentID = "s-old"
	return o
}

func driftedB(name string) api.BundleObservation {
	o := readyB(name)
	o.Resources.Counts = api.ResourceCounts{DesiredReady: 2, Ready: 1, Missing: 1}
	return o
}

func failedRenderB(name string) api.BundleObservation {
	return api.BundleObservation{Bundle: name, Error: `values.yaml: map has no entry for key "image"`}
}

func notHereB(name string) api.BundleObservation {
	o := absentB(name)
	o.Deploy = false
	return o
}

func pausedB(o api.BundleObservation) api.BundleObservation {
	o.Paused = true
	return o
}

func on(name string, deps ...api.Dependency) api.BundleRef {
	return api.BundleRef{Name: name, Path: name, DependsOn: deps}
}

func byName(name string, accepted ...string) api.Dependency {
	return api.Dependency{Name: name, Bundles: []string{name}, AcceptedStates: accepted}
}

// judgeCluster judges one observation as the cluster workflow does; failures are apply errors by bundle.
func judgeCluster(refs []api.BundleRef, bundles []api.BundleObservation, failures map[string]string) (map[string]decision, map[string]api.BundleStatus, bool) {
	drift := &fleet.CorrectDrift{Enabled: true}
	j := newClusterJudge(refs, api.Observation{Bundles: bundles},
		func(o api.BundleObservation) decideInput {
			return decideInput{Obs: o, CorrectDrift: drift, Paused: o.Paused, RetryDue: true}
		},
		func(o api.BundleObservation) string { return failures[o.Bundle] })
	decisions, statuses := map[string]decision{}, map[string]api.BundleStatus{}
	for _, o := range bundles {
		decisions[o.Bundle] = decide(j.decideInput(o))
		if o.Deploy || o.Error != "" {
			statuses[o.Bundle] = j.status(o)
		}
	}
	return decisions, statuses, j.waitsOnState()
}

var install = decision{Action: api.ActionInstall}

func TestABundleWaitsOnItsClusterUntilItsDependenciesAreAccepted(t *testing.T) {
	crd, app := on("crd"), on("app", byName("crd"))
	cases := []struct {
		name     string
		refs     []api.BundleRef
		bundles  []api.BundleObservation
		failures map[string]string
		// want is app's decision, state and message; onState whether the cluster rechecks soon.
		want    decision
		state   string
		message string
		onState bool
	}{
		{"the dependency is being installed", []api.BundleRef{crd, app}, []api.BundleObservation{absentB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (WaitApplied)`, true},
		{"the dependency is not ready", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (NotReady)`, true},
		{"the dependency is ready", []api.BundleRef{crd, app}, []api.BundleObservation{readyB("crd"), absentB("app")}, nil,
			install, api.StateWaitApplied, "release not installed yet", false},
		{"NotReady accepted", []api.BundleRef{crd, on("app", byName("crd", "Ready", "NotReady"))}, []api.BundleObservation{notReadyB("crd"), absentB("app")}, nil,
			install, api.StateWaitApplied, "release not installed yet", false},
		{"Modified accepted", []api.BundleRef{crd, on("app", byName("crd", "Ready", "Modified"))}, []api.BundleObservation{driftedB("crd"), absentB("app")}, nil,
			install, api.StateWaitApplied, "release not installed yet", false},
		{"Modified not accepted by default", []api.BundleRef{crd, app}, []api.BundleObservation{driftedB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (Modified)`, true},
		{"an upgrade waits too", []api.BundleRef{crd, app}, []api.BundleObservation{outdatedB("crd"), outdatedB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (WaitApplied)`, true},
		{"the dependency does not render here", []api.BundleRef{crd, app}, []api.BundleObservation{failedRenderB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (ErrApplied)`, true},
		{"the dependency's apply failed", []api.BundleRef{crd, app}, []api.BundleObservation{absentB("crd"), absentB("app")}, map[string]string{"crd": "helm: timed out"},
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (ErrApplied)`, true},
		{"the dependency is paused", []api.BundleRef{crd, app}, []api.BundleObservation{pausedB(absentB("crd")), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (OutOfSync)`, true},
		{"doNotDeploy keeps the dependency off this cluster", []api.BundleRef{crd, app}, []api.BundleObservation{notHereB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (not deployed to this cluster)`, false},
		{"targets keep the dependency off this cluster", []api.BundleRef{app}, []api.BundleObservation{absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (not deployed to this cluster)`, false},
		{"no bundle has the name", []api.BundleRef{crd, on("app", api.Dependency{Name: "crds"})}, []api.BundleObservation{readyB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crds" (no bundle of this GitRepo)`, false},
		{"a selector counts the bundles deployed here only", []api.BundleRef{on("db-a"), on("app", api.Dependency{Selector: "tier=db", Bundles: []string{"db-a", "db-b"}})},
			[]api.BundleObservation{readyB("db-a"), absentB("app")}, nil,
			install, api.StateWaitApplied, "release not installed yet", false},
		{"a selector waits for each one deployed here", []api.BundleRef{on("db-a"), on("db-b"), on("app", api.Dependency{Selector: "tier=db", Bundles: []string{"db-a", "db-b"}})},
			[]api.BundleObservation{notReadyB("db-a"), notReadyB("db-b"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "db-a" (NotReady), "db-b" (NotReady)`, true},
		{"a selector that matches nothing deployed here", []api.BundleRef{on("app", api.Dependency{Selector: "tier=db", Bundles: []string{"db-a", "db-b"}})},
			[]api.BundleObservation{absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) matching tier=db (not deployed to this cluster)`, false},
		{"a selector that matches no bundle", []api.BundleRef{on("app", api.Dependency{Name: "db", Selector: "tier=db"})},
			[]api.BundleObservation{absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "db" matching tier=db (no bundle of this GitRepo)`, false},
		{"a bundle named twice is named once", []api.BundleRef{crd, on("app", byName("crd"), api.Dependency{Selector: "role=crd", Bundles: []string{"crd"}})},
			[]api.BundleObservation{notReadyB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (NotReady)`, true},
		{"a dependency that waits is WaitApplied to its dependents", []api.BundleRef{on("base"), on("crd", byName("base")), app},
			[]api.BundleObservation{notReadyB("base"), absentB("crd"), absentB("app")}, nil,
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (WaitApplied)`, true},
		{"a dependency that runs its desired state does not wait for its own", []api.BundleRef{on("base"), on("crd", byName("base")), app},
			[]api.BundleObservation{notReadyB("base"), readyB("crd"), absentB("app")}, nil,
			install, api.StateWaitApplied, "release not installed yet", false},
		{"what runs stays when a dependency stops being ready", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"), readyB("app")}, nil,
			nothing, api.StateReady, "", false},
		{"drift is corrected whatever the dependencies", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"), driftedB("app")}, nil,
			decision{Action: api.ActionRollback}, api.StateModified, "", false},
		{"a pending release is recovered whatever the dependencies", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"),
			func() api.BundleObservation { o := readyB("app"); o.Release.Status = "pending-upgrade"; return o }()}, nil,
			decision{Action: api.ActionRecover}, api.StateWaitApplied, "release app is pending-upgrade", false},
		{"a failed attempt stays in view while it waits", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"), absentB("app")},
			map[string]string{"app": `helm: no matches for kind "Widget"`},
			nothing, api.StateWaitApplied, `waiting for bundle(s) "crd" (NotReady); helm: no matches for kind "Widget"`, true},
		{"a paused bundle is paused, not waiting", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"), pausedB(absentB("app"))}, nil,
			nothing, api.StateOutOfSync, "paused (fleet.yaml): changes wait", false},
		{"a bundle that does not render shows why", []api.BundleRef{crd, app}, []api.BundleObservation{notReadyB("crd"), failedRenderB("app")}, nil,
			nothing, api.StateErrApplied, `values.yaml: map has no entry for key "image"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			decisions, statuses, onState := judgeCluster(c.refs, c.bundles, c.failures)
			require.Equal(t, c.want, decisions["app"])
			require.Equal(t, c.state, statuses["app"].State)
			if c.state != api.StateModified && c.state != api.StateReady {
				require.Equal(t, c.message, statuses["app"].Message)
			}
			require.Equal(t, c.onState, onState, "a dependency deployed here that may still become accepted")
			for name, d := range decisions {
				if name != "app" {
					// What the others do is what they would do without app.
					alone := decide(decideInput{Obs: findB(c.bundles, name), CorrectDrift: &fleet.CorrectDrift{Enabled: true}, Paused: findB(c.bundles, name).Paused, RetryDue: true,
						Waiting: waitingOf(statuses[name])})
					require.Equal(t, alone, d, name)
				}
			}
		})
	}
}

func findB(bundles []api.BundleObservation, name string) api.BundleObservation {
	for _, o := range bundles {
		if o.Bundle == name {
			return o
		}
	}
	return api.BundleObservation{}
}

func waitingOf(s api.BundleStatus) string {
	if s.State == api.StateWaitApplied && len(s.Message) > 8 && s.Message[:8] == "waiting " {
		return s.Message
	}
	return ""
}

// A bundle whose plan found it on a dependsOn cycle is never applied, anywhere, and says why; what it runs
// keeps running.
func TestABundleOnADependsOnCycleIsNeverApplied(t *testing.T) {
	cycle := "dependsOn cycle: app → crd → app"
	refs := []api.BundleRef{{Name: "crd", DependsOn: []api.Dependency{byName("app")}, DependsOnError: "dependsOn cycle: crd → app → crd"},
		{Name: "app", DependsOn: []api.Dependency{byName("crd")}, DependsOnError: cycle}}
	decisions, statuses, _ := judgeCluster(refs, []api.BundleObservation{absentB("crd"), absentB("app")}, nil)
	require.Equal(t, nothing, decisions["app"])
	require.Equal(t, nothing, decisions["crd"])
	require.Equal(t, api.BundleStatus{Name: "app", Release: "app", State: api.StateErrApplied, Message: cycle}, statuses["app"])

	live := outdatedB("app")
	live.Release.Commit = "0123abc"
	decisions, statuses, _ = judgeCluster(refs, []api.BundleObservation{readyB("crd"), live}, nil)
	require.Equal(t, nothing, decisions["app"])
	require.Equal(t, "stuck at 0123abc (revision 1): "+cycle, statuses["app"].Message)

	require.Equal(t, nothing, decide(decideInput{Obs: driftedB("app"), CorrectDrift: &fleet.CorrectDrift{Enabled: true}, RetryDue: true, DependsOnError: cycle}),
		"not even drift is corrected: nothing is applied")
}

// Bundles without dependsOn are judged exactly as before dependsOn existed: recorded histories replay
// through the same decisions and report the same statuses.
func TestBundlesWithoutDependsOnAreJudgedAsBefore(t *testing.T) {
	bundles := []api.BundleObservation{absentB("a"), readyB("b"), notReadyB("c"), driftedB("d"), outdatedB("e"), failedRenderB("f"), pausedB(outdatedB("g"))}
	refs := []api.BundleRef{on("a"), on("b"), on("c"), on("d"), on("e"), on("f"), on("g")}
	failures := map[string]string{"e": "helm: timed out"}
	decisions, statuses, onState := judgeCluster(refs, bundles, failures)
	require.False(t, onState)
	for _, o := range bundles {
		require.Equal(t, decide(decideInput{Obs: o, CorrectDrift: &fleet.CorrectDrift{Enabled: true}, Paused: o.Paused, RetryDue: true}), decisions[o.Bundle], o.Bundle)
		require.Equal(t, bundleStatus(o, failures[o.Bundle]), statuses[o.Bundle], o.Bundle)
	}
}

// The cluster workflow applies a bundle's dependency first, shows the bundle waiting while the dependency
// is not ready, checks within DependencyRecheck meanwhile although its check interval is an hour, and
// installs the bundle at the first check that finds the dependency ready.
func TestClusterWorkflowAppliesADependentAfterItsDependency(t *testing.T) {
	env := newEnv()
	in := clusterInput()
	in.CheckInterval = time.Hour
	in.Target.Bundles = []api.BundleRef{on("crd"), on("app", byName("crd"))}
	const readyAt = 10 * time.Minute
	var start time.Time
	installed := map[string]bool{}
	var observedAt []time.Duration
	observation := func() api.Observation {
		crd := absentB("crd")
		if installed["crd"] {
			crd = notReadyB("crd")
			if env.Now().Sub(start) >= readyAt {
				crd = readyB("crd")
			}
		}
		app := absentB("app")
		if installed["app"] {
			app = readyB("app")
		}
		return api.Observation{Bundles: []api.BundleObservation{crd, app}}
	}
	env.OnActivity(api.ActivityObserve, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.ObserveInput) (api.Observation, error) {
		if start.IsZero() {
			start = env.Now()
		}
		observedAt = append(observedAt, env.Now().Sub(start))
		return observation(), nil
	})
	var applied [][]string
	var appliedAt []time.Duration
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.ApplyInput) (api.ApplyResult, error) {
		var names []string
		res := api.ApplyResult{}
		for _, a := range in.Actions {
			names = append(names, a.Bundle)
			installed[a.Bundle] = true
			res.Bundles = append(res.Bundles, api.BundleApplyResult{Bundle: a.Bundle, Revision: 1})
		}
		sort.Strings(names)
		applied = append(applied, names)
		appliedAt = append(appliedAt, env.Now().Sub(start))
		obs := observation()
		res.Observation = &obs
		return res, nil
	})
	reports := captureReports(env)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, readyAt+5*time.Minute)

	env.ExecuteWorkflow(ClusterWorkflow, in)

	require.Equal(t, [][]string{{"crd"}, {"app"}}, applied, "the dependency first, then its dependent, each once")
	require.GreaterOrEqual(t, appliedAt[1], readyAt, "the dependent waited for its dependency")
	require.LessOrEqual(t, appliedAt[1], readyAt+DependencyRecheck, "and followed it within DependencyRecheck")
	for i := 1; i < len(observedAt) && observedAt[i] < readyAt; i++ {
		require.LessOrEqual(t, observedAt[i]-observedAt[i-1], DependencyRecheck, "checks while it waits")
	}

	// Reports share their bundles with the workflow's later state; their state and message are their own.
	var states []string
	for _, r := range *reports {
		states = append(states, r.Status.State+": "+r.Status.Message)
	}
	require.Equal(t, []string{
		`WaitApplied: bundle "app": waiting for bundle(s) "crd" (NotReady); bundle "crd": deployment demo/operator notReady`,
		"Ready: ",
	}, states)
}
