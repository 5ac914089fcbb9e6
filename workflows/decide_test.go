package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/fleet"
)

func obs(status, id string, counts activities.ResourceCounts) activities.BundleObservation {
	return activities.BundleObservation{Bundle: "web", Deploy: true, DesiredID: "s-new",
		Release:   activities.ReleaseInfo{Exists: status != "", Status: status, DeploymentID: id},
		Resources: activities.ResourceSummary{Counts: counts, Checked: true}}
}

func TestDecideAppliesOnlyWhatChanged(t *testing.T) {
	drift := &fleet.CorrectDrift{Enabled: true}
	missing := activities.ResourceCounts{DesiredReady: 2, Ready: 1, Missing: 1}
	cases := []struct {
		name   string
		in     decideInput
		action string
	}{
		{"absent release is installed", decideInput{Obs: obs("", "", missing), RetryDue: true}, activities.ActionInstall},
		{"in sync does nothing", decideInput{Obs: obs("deployed", "s-new", activities.ResourceCounts{}), RetryDue: true}, ""},
		{"new deployment id upgrades", decideInput{Obs: obs("deployed", "s-old", activities.ResourceCounts{}), RetryDue: true}, activities.ActionUpgrade},
		{"a killed worker's pending release is recovered", decideInput{Obs: obs("pending-upgrade", "s-new", activities.ResourceCounts{}), RetryDue: true}, activities.ActionRecover},
		{"a failed apply waits for its backoff", decideInput{Obs: obs("failed", "s-new", activities.ResourceCounts{})}, ""},
		{"a failed apply is retried when due", decideInput{Obs: obs("failed", "s-new", activities.ResourceCounts{}), RetryDue: true}, activities.ActionUpgrade},
		{"drift is reported, not corrected, by default", decideInput{Obs: obs("deployed", "s-new", missing), RetryDue: true}, ""},
		{"drift is corrected when enabled", decideInput{Obs: obs("deployed", "s-new", missing), CorrectDrift: drift, RetryDue: true}, activities.ActionRollback},
		{"paused changes nothing", decideInput{Obs: obs("deployed", "s-old", activities.ResourceCounts{}), Paused: true, RetryDue: true}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := decide(c.in)
			require.Equal(t, c.action, got)
		})
	}
	render := obs("", "", activities.ResourceCounts{})
	render.Error = `values.yaml: map has no entry for key "fqdn"`
	got, _ := decide(decideInput{Obs: render, RetryDue: true})
	require.Empty(t, got, "a bundle that does not render is never applied")
}

func TestBundleStateFollowsFleetPrecedence(t *testing.T) {
	require.True(t, Worse(StateErrApplied, StateWaitApplied))
	require.True(t, Worse(StateWaitApplied, StateNotReady))
	require.True(t, Worse(StateNotReady, StateOutOfSync))
	require.True(t, Worse(StateOutOfSync, StateModified))
	require.True(t, Worse(StateModified, StateReady))

	ready := bundleStatus(obs("deployed", "s-new", activities.ResourceCounts{DesiredReady: 3, Ready: 3}), "")
	require.Equal(t, StateReady, ready.State)
	missing := obs("deployed", "s-new", activities.ResourceCounts{DesiredReady: 11, Ready: 10, Missing: 1})
	missing.Resources.NonReady = []string{"configmap seed/cm-5 missing"}
	st := bundleStatus(missing, "")
	require.Equal(t, StateModified, st.State, "a deleted object is never counted as ready")
	require.Equal(t, "configmap seed/cm-5 missing", st.Message)
	require.Equal(t, StateErrApplied, bundleStatus(obs("deployed", "s-old", activities.ResourceCounts{}), "helm: timed out").State)
	require.Equal(t, StateWaitApplied, bundleStatus(obs("deployed", "s-old", activities.ResourceCounts{}), "").State)
}

func TestAggregateNamesFailingClustersWorstFirst(t *testing.T) {
	st := GitRepoStatus{Clusters: []ClusterStatus{
		{Name: "b", State: StateNotReady, Message: `bundle "web": deployment web/api notReady`, Bundles: []BundleStatus{{Name: "web", State: StateNotReady}}},
		{Name: "a", State: StateReady, Bundles: []BundleStatus{{Name: "web", State: StateReady}}},
		{Name: "c", State: StateErrApplied, Message: `bundle "web": map has no entry for key "fqdn"`, Bundles: []BundleStatus{{Name: "web", State: StateErrApplied}}},
	}}
	aggregate(&st)
	require.Equal(t, StateErrApplied, st.State)
	require.Equal(t, 1, st.ReadyClusters)
	require.Equal(t, Summary{DesiredReady: 3, Ready: 1, NotReady: 1, ErrApplied: 1}, st.Summary)
	require.Equal(t, `1/3 clusters ready; cluster "c": bundle "web": map has no entry for key "fqdn"; cluster "b": bundle "web": deployment web/api notReady`, st.Message)
	require.Equal(t, []string{"a", "b", "c"}, []string{st.Clusters[0].Name, st.Clusters[1].Name, st.Clusters[2].Name})
}

// Deploying nothing is never Ready: a GitRepo whose targets match no registered cluster, and a bundle
// that no cluster receives, say so in state and message.
func TestAGitRepoOrBundleDeployedNowhereIsNotReady(t *testing.T) {
	none := GitRepoStatus{Commit: "abc", Bundles: []string{"web"}, Clusters: []ClusterStatus{}}
	aggregate(&none)
	require.Equal(t, StateNotReady, none.State)
	require.Equal(t, "0/0 clusters ready; no registered cluster matches the targets", none.Message)

	// "db" is targeted at a only, whose targetCustomization says doNotDeploy: once a reported, db is nowhere.
	nowhere := GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []ClusterStatus{
		{Name: "a", State: StateReady, Bundles: []BundleStatus{{Name: "web", State: StateReady}}},
	}}
	aggregate(&nowhere)
	require.Equal(t, StateNotReady, nowhere.State)
	require.Equal(t, 1, nowhere.ReadyClusters, "the cluster itself is fine")
	require.Contains(t, nowhere.Message, `bundle "db": no registered cluster matches its targets`)

	// Before a cluster reports, it lists every bundle targeted at it: nothing is called nowhere yet.
	pending := GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []ClusterStatus{
		{Name: "a", State: StatePending, Bundles: []BundleStatus{{Name: "db", State: StatePending}, {Name: "web", State: StatePending}}},
	}}
	aggregate(&pending)
	require.Equal(t, StatePending, pending.State)
	require.NotContains(t, pending.Message, "no registered cluster")

	// A cluster never reached has not said which bundles it takes: its silence is not "nowhere".
	unreached := GitRepoStatus{Commit: "abc", Bundles: []string{"db", "web"}, Clusters: []ClusterStatus{
		{Name: "a", State: StateReady, Reachable: true, Bundles: []BundleStatus{{Name: "web", State: StateReady}}},
		{Name: "b", State: StateErrApplied, Message: `cluster "b": connection refused`},
	}}
	aggregate(&unreached)
	require.Equal(t, StateErrApplied, unreached.State)
	require.NotContains(t, unreached.Message, "no registered cluster")

	// Not planned yet (no commit), or a failed plan with its own error: nothing to say about targets.
	unplanned := GitRepoStatus{Clusters: []ClusterStatus{}}
	aggregate(&unplanned)
	require.NotContains(t, unplanned.Message, "no registered cluster")
}

// A bundle that cannot move still shows what runs: the live release's commit and revision beside the error.
func TestAFailingBundleSaysWhereItIsStuck(t *testing.T) {
	o := activities.BundleObservation{Bundle: "web", Error: `values.yaml: map has no entry for key "fqdn"`,
		Release:   activities.ReleaseInfo{Exists: true, Status: "deployed", Revision: 3, Commit: "0123456789ab"},
		Resources: activities.ResourceSummary{Counts: activities.ResourceCounts{DesiredReady: 3, Ready: 3}}}
	st := bundleStatus(o, "")
	require.Equal(t, StateErrApplied, st.State)
	require.Equal(t, `stuck at 0123456789ab (revision 3): values.yaml: map has no entry for key "fqdn"`, st.Message)
	require.Equal(t, 3, st.ResourceCounts.Ready)
	require.Equal(t, 3, st.Revision)

	o.Error = ""
	o.DesiredID, o.Release.DeploymentID = "new", "old"
	require.Equal(t, "stuck at 0123456789ab (revision 3): helm: timed out", bundleStatus(o, "helm: timed out").Message)

	o.Release.Status = "failed" // the failed upgrade is the latest revision: it is not where the bundle runs
	require.Equal(t, "helm: timed out", bundleStatus(o, "helm: timed out").Message)

	never := activities.BundleObservation{Bundle: "web", Error: "boom"}
	require.Equal(t, "boom", bundleStatus(never, "").Message, "nothing runs: the error alone")
}
