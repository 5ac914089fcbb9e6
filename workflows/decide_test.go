package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

func obs(status api.ReleaseStatus, id string, counts api.ResourceCounts) api.BundleObservation {
	return api.BundleObservation{Bundle: "web", Deploy: true, DesiredID: "s-new",
		Release:   api.ReleaseInfo{Exists: status != "", Status: status, DeploymentID: id},
		Resources: api.ResourceSummary{Counts: counts, Checked: true}}
}

func TestDecideAppliesOnlyWhatChanged(t *testing.T) {
	drift := &fleet.CorrectDrift{Enabled: true}
	missing := api.ResourceCounts{DesiredReady: 2, Ready: 1, Missing: 1}
	const wait = `waiting for bundle(s) "crd" (NotReady)`
	cases := []struct {
		name string
		in   decideInput
		want decision
	}{
		{"absent release is installed", decideInput{Obs: obs("", "", missing), RetryDue: true}, decision{Action: api.ActionInstall}},
		{"in sync does nothing", decideInput{Obs: obs("deployed", "s-new", api.ResourceCounts{}), RetryDue: true}, nothing},
		{"new deployment id upgrades", decideInput{Obs: obs("deployed", "s-old", api.ResourceCounts{}), RetryDue: true}, decision{Action: api.ActionUpgrade}},
		{"a killed worker's pending release is recovered", decideInput{Obs: obs("pending-upgrade", "s-new", api.ResourceCounts{}), RetryDue: true}, decision{Action: api.ActionRecover}},
		{"a failed apply waits for its backoff", decideInput{Obs: obs("failed", "s-new", api.ResourceCounts{})}, nothing},
		{"a failed apply is retried when due", decideInput{Obs: obs("failed", "s-new", api.ResourceCounts{}), RetryDue: true}, decision{Action: api.ActionUpgrade}},
		{"drift is reported, not corrected, by default", decideInput{Obs: obs("deployed", "s-new", missing), RetryDue: true}, nothing},
		{"drift is corrected when enabled", decideInput{Obs: obs("deployed", "s-new", missing), CorrectDrift: drift, RetryDue: true}, decision{Action: api.ActionRollback}},
		{"drift is corrected by force when asked", decideInput{Obs: obs("deployed", "s-new", missing), CorrectDrift: &fleet.CorrectDrift{Enabled: true, Force: true}, RetryDue: true}, decision{Action: api.ActionRollback, Force: true}},
		{"a release left uninstalling is recovered", decideInput{Obs: obs("uninstalling", "s-new", api.ResourceCounts{}), RetryDue: true}, decision{Action: api.ActionRecover}},
		{"a failed apply of an older state waits for its backoff too", decideInput{Obs: obs("failed", "s-old", api.ResourceCounts{})}, nothing},
		{"paused changes nothing", decideInput{Obs: obs("deployed", "s-old", api.ResourceCounts{}), Paused: true, RetryDue: true}, nothing},
		{"a closed window that lets drift correction through holds an upgrade", decideInput{Obs: obs("deployed", "s-old", api.ResourceCounts{}), RetryDue: true, DriftOnly: true}, nothing},
		{"and an install", decideInput{Obs: obs("", "", missing), RetryDue: true, DriftOnly: true}, nothing},
		{"but corrects drift", decideInput{Obs: obs("deployed", "s-new", missing), CorrectDrift: drift, RetryDue: true, DriftOnly: true}, decision{Action: api.ActionRollback}},
		{"and recovers a locked release", decideInput{Obs: obs("pending-upgrade", "s-new", api.ResourceCounts{}), RetryDue: true, DriftOnly: true}, decision{Action: api.ActionRecover}},
		{"an install waits for its dependencies", decideInput{Obs: obs("", "", missing), RetryDue: true, Waiting: wait}, nothing},
		{"an upgrade waits for its dependencies", decideInput{Obs: obs("deployed", "s-old", api.ResourceCounts{}), RetryDue: true, Waiting: wait}, nothing},
		{"a retry waits for its dependencies", decideInput{Obs: obs("failed", "s-new", api.ResourceCounts{}), RetryDue: true, Waiting: wait}, nothing},
		{"a locked release is recovered while it waits", decideInput{Obs: obs("pending-install", "s-new", api.ResourceCounts{}), RetryDue: true, Waiting: wait}, decision{Action: api.ActionRecover}},
		{"drift is corrected while it waits", decideInput{Obs: obs("deployed", "s-new", missing), CorrectDrift: drift, RetryDue: true, Waiting: wait}, decision{Action: api.ActionRollback}},
		{"on a dependsOn cycle nothing is installed", decideInput{Obs: obs("", "", missing), RetryDue: true, DependsOnError: "dependsOn cycle: web → web"}, nothing},
		{"on a dependsOn cycle nothing is corrected", decideInput{Obs: obs("deployed", "s-new", missing), CorrectDrift: drift, RetryDue: true, DependsOnError: "dependsOn cycle: web → web"}, nothing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, decide(c.in))
		})
	}
	render := obs("", "", api.ResourceCounts{})
	render.Error = `values.yaml: map has no entry for key "fqdn"`
	require.Equal(t, nothing, decide(decideInput{Obs: render, RetryDue: true}), "a bundle that does not render is never applied")
}

func TestBundleStateFollowsFleetPrecedence(t *testing.T) {
	// Fleet's StateRank, worst first: what dashboards and alerts on FlotillaState are written against.
	fleetOrder := []string{api.StateErrApplied, api.StateWaitApplied, api.StateModified, api.StateOutOfSync,
		api.StatePending, api.StateNotReady, api.StateReady}
	for i, worse := range fleetOrder {
		for _, better := range fleetOrder[i+1:] {
			require.True(t, api.Worse(worse, better), "%s ranks above %s", worse, better)
			require.False(t, api.Worse(better, worse), "%s ranks below %s", better, worse)
		}
	}

	ready := bundleStatus(obs("deployed", "s-new", api.ResourceCounts{DesiredReady: 3, Ready: 3}), "")
	require.Equal(t, api.StateReady, ready.State)
	missing := obs("deployed", "s-new", api.ResourceCounts{DesiredReady: 11, Ready: 10, Missing: 1})
	missing.Resources.NonReady = []string{"configmap seed/cm-5 missing"}
	st := bundleStatus(missing, "")
	require.Equal(t, api.StateModified, st.State, "a deleted object is never counted as ready")
	require.Equal(t, "configmap seed/cm-5 missing", st.Message)
	require.Equal(t, api.StateErrApplied, bundleStatus(obs("deployed", "s-old", api.ResourceCounts{}), "helm: timed out").State)
	require.Equal(t, api.StateWaitApplied, bundleStatus(obs("deployed", "s-old", api.ResourceCounts{}), "").State)
}

func TestAggregateNamesFailingClustersWorstFirst(t *testing.T) {
	st := api.GitRepoStatus{Clusters: []api.ClusterStatus{
		{Name: "b", State: api.StateNotReady, Message: `bundle "web": deployment web/api notReady`, Bundles: []api.BundleStatus{{Name: "web", State: api.StateNotReady}}},
		{Name: "a", State: api.StateReady, Bundles: []api.BundleStatus{{Name: "web", State: api.StateReady}}},
		{Name: "c", State: api.StateErrApplied, Message: `bundle "web": map has no entry for key "fqdn"`, Bundles: []api.BundleStatus{{Name: "web", State: api.StateErrApplied}}},
	}}
	aggregate(&st)
	require.Equal(t, api.StateErrApplied, st.State)
	require.Equal(t, 1, st.ReadyClusters)
	require.Equal(t, api.Summary{DesiredReady: 3, Ready: 1, NotReady: 1, ErrApplied: 1}, st.Summary)
	require.Equal(t, `1/3 clusters ready; cluster "c": bundle "web": map has no entry for key "fqdn"; cluster "b": bundle "web": deployment web/api notReady`, st.Message)
	require.Equal(t, []string{"a", "b", "c"}, []string{st.Clusters[0].Name, st.Clusters[1].Name, st.Clusters[2].Name})
}

// Deploying nothing is never Ready: a GitRepo whose targets match no registered cluster, and a bundle
// that no cluster receives, say so in state and message.
func TestAGitRepoOrBundleDeployedNowhereIsNotReady(t *testing.T) {
	none := api.GitRepoStatus{Commit: "abc", Bundles: []string{"web"}, Clusters: []api.ClusterStatus{}}
	aggregate(&none)
	require.Equal(t, api.StateNotReady, none.State)
	require.Equal(t, "0/0 clusters ready; no registered cluster matches the targets", none.Message)

	// "db" is targeted at a only, whose targetCustomization says doNotDeploy: once a reported, db is nowhere.
	nowhere := api.GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []api.ClusterStatus{
		{Name: "a", State: api.StateReady, Bundles: []api.BundleStatus{{Name: "web", State: api.StateReady}}},
	}}
	aggregate(&nowhere)
	require.Equal(t, api.StateNotReady, nowhere.State)
	require.Equal(t, 1, nowhere.ReadyClusters, "the cluster itself is fine")
	require.Contains(t, nowhere.Message, `bundle "db": no registered cluster matches its targets`)

	// Before a cluster reports, it lists every bundle targeted at it: nothing is called nowhere yet.
	pending := api.GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []api.ClusterStatus{
		{Name: "a", State: api.StatePending, Bundles: []api.BundleStatus{{Name: "db", State: api.StatePending}, {Name: "web", State: api.StatePending}}},
	}}
	aggregate(&pending)
	require.Equal(t, api.StatePending, pending.State)
	require.NotContains(t, pending.Message, "no registered cluster")

	// A cluster never reached has not said which bundles it takes: its silence is not "nowhere".
	unreached := api.GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []api.ClusterStatus{
		{Name: "a", State: api.StateReady, Reachable: true, Bundles: []api.BundleStatus{{Name: "web", State: api.StateReady}}},
		{Name: "b", State: api.StateErrApplied, Message: `cluster "b": connection refused`},
	}}
	aggregate(&unreached)
	require.Equal(t, api.StateErrApplied, unreached.State)
	require.NotContains(t, unreached.Message, "no registered cluster")

	// Not planned yet (no commit), or a failed plan with its own error: nothing to say about targets.
	unplanned := api.GitRepoStatus{Clusters: []api.ClusterStatus{}}
	aggregate(&unplanned)
	require.NotContains(t, unplanned.Message, "no registered cluster")
}

// A bundle that cannot move still shows what runs: the live release's commit and revision beside the error.
func TestAFailingBundleSaysWhereItIsStuck(t *testing.T) {
	o := api.BundleObservation{Bundle: "web", Error: `values.yaml: map has no entry for key "fqdn"`,
		Release:   api.ReleaseInfo{Exists: true, Status: "deployed", Revision: 3, Commit: "0123456789ab"},
		Resources: api.ResourceSummary{Counts: api.ResourceCounts{DesiredReady: 3, Ready: 3}}}
	st := bundleStatus(o, "")
	require.Equal(t, api.StateErrApplied, st.State)
	require.Equal(t, `stuck at 0123456789ab (revision 3): values.yaml: map has no entry for key "fqdn"`, st.Message)
	require.Equal(t, 3, st.ResourceCounts.Ready)
	require.Equal(t, 3, st.Revision)

	o.Error = ""
	o.DesiredID, o.Release.DeploymentID = "new", "old"
	require.Equal(t, "stuck at 0123456789ab (revision 3): helm: timed out", bundleStatus(o, "helm: timed out").Message)

	o.Release.Status = "failed" // the failed upgrade is the latest revision: it is not where the bundle runs
	require.Equal(t, "helm: timed out", bundleStatus(o, "helm: timed out").Message)

	never := api.BundleObservation{Bundle: "web", Error: "boom"}
	require.Equal(t, "boom", bundleStatus(never, "").Message, "nothing runs: the error alone")
}

// A bundle's own correctDrift decides, not the GitRepo's: on in fleet.yaml under a GitRepo without it is
// corrected; off in fleet.yaml under a GitRepo with it on is not.
func TestTheBundlesOwnCorrectDriftDecides(t *testing.T) {
	missing := api.ResourceCounts{DesiredReady: 2, Ready: 1, Missing: 1}
	on, off := &fleet.CorrectDrift{Enabled: true}, &fleet.CorrectDrift{Enabled: false}
	for _, c := range []struct {
		name            string
		bundle, gitRepo *fleet.CorrectDrift
		want            decision
	}{
		{"bundle on, GitRepo silent", on, nil, decision{Action: api.ActionRollback}},
		{"bundle off, GitRepo on", off, on, nothing},
		{"bundle silent, GitRepo on (an observation from before bundles reported theirs)", nil, on, decision{Action: api.ActionRollback}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := obs("deployed", "s-new", missing)
			o.CorrectDrift = c.bundle
			got := decide(decideInput{Obs: o, CorrectDrift: effectiveCorrectDrift(o, api.DeployOptions{CorrectDrift: c.gitRepo}), RetryDue: true})
			require.Equal(t, c.want, got)
		})
	}
}

// A bundle paused in its fleet.yaml keeps what it runs: no action, and its status says it waits.
func TestAPausedBundleChangesNothingAndSaysSo(t *testing.T) {
	o := obs("deployed", "s-old", api.ResourceCounts{})
	o.Paused = true
	require.Equal(t, nothing, decide(decideInput{Obs: o, Paused: o.Paused, RetryDue: true}))
	st := bundleStatus(o, "")
	require.Equal(t, api.StateOutOfSync, st.State)
	require.Contains(t, st.Message, "paused")
}
