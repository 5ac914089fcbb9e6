package frontdoor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

func bundle(name, state string) api.BundleStatus {
	return api.BundleStatus{Name: name, State: state, Message: state + " message"}
}

// Each (cluster, bundle) is one of Fleet's bundle deployments: counted by state, listed when not ready, and
// "ready/desired" in display.readyBundleDeployments, which `kubectl get gitrepos` prints.
func TestAGitRepoStatusCountsBundleDeploymentsAsFleetDoes(t *testing.T) {
	st := api.GitRepoStatus{Namespace: "team-a", Commit: "abc", Message: "1/2 clusters ready", State: api.StateModified,
		ReadyClusters: 1, DesiredReadyClusters: 2, Summary: api.Summary{DesiredReady: 4, Ready: 3, Modified: 1},
		ResourceCounts: api.ResourceCounts{DesiredReady: 6, Ready: 5, Missing: 1},
		Clusters: []api.ClusterStatus{
			{Name: "edge-2", State: api.StateModified, ResourceCounts: api.ResourceCounts{DesiredReady: 3, Ready: 2, Missing: 1},
				Bundles: []api.BundleStatus{bundle("web", api.StateReady), bundle("db", api.StateModified)}},
			{Name: "edge-1", State: api.StateReady, ResourceCounts: api.ResourceCounts{DesiredReady: 3, Ready: 3},
				Bundles: []api.BundleStatus{bundle("web", api.StateReady), bundle("db", api.StateReady)}},
		}}
	s := FromGitRepo(st, 4, nil, "2026-11-29T12:00:00Z")
	require.Equal(t, int64(4), s.ObservedGeneration)
	require.Equal(t, "3/4", s.Display.ReadyBundleDeployments)
	require.Equal(t, api.StateModified, s.Display.State)
	require.Equal(t, Summary{Ready: 3, Modified: 1, DesiredReady: 4,
		NonReadyResources: []NonReadyResource{{Name: "edge-2/db", BundleState: api.StateModified, Message: "Modified message"}}}, s.Summary)
	require.Equal(t, 1, s.ReadyClusters)
	require.Equal(t, 2, s.DesiredReadyClusters)
	require.Equal(t, api.ResourceCounts{DesiredReady: 3, Ready: 2, Missing: 1}, s.PerClusterResourceCounts["team-a/edge-2"])
	require.Equal(t, []Condition{
		{Type: "Accepted", Status: "True", LastUpdateTime: "2026-11-29T12:00:00Z", LastTransitionTime: "2026-11-29T12:00:00Z"},
		{Type: "Ready", Status: "False", Reason: api.StateModified, Message: "1/2 clusters ready", LastUpdateTime: "2026-11-29T12:00:00Z",
			LastTransitionTime: "2026-11-29T12:00:00Z"},
		{Type: "Stalled", Status: "False", LastUpdateTime: "2026-11-29T12:00:00Z", LastTransitionTime: "2026-11-29T12:00:00Z"},
	}, s.Conditions)
}

// An unchanged status must build the same object, or every read-back would write; a changed condition
// keeps its transition time only while its status stays.
func TestAnUnchangedStatusIsTheSameObjectAndTransitionsKeepTheirTime(t *testing.T) {
	ready := api.GitRepoStatus{Commit: "abc", State: api.StateReady, ReadyClusters: 1, DesiredReadyClusters: 1,
		Summary: api.Summary{DesiredReady: 1, Ready: 1}, Clusters: []api.ClusterStatus{{Name: "edge", State: api.StateReady,
			Bundles: []api.BundleStatus{bundle("web", api.StateReady)}}}}
	first := FromGitRepo(ready, 1, nil, "t1")
	require.Equal(t, first, FromGitRepo(ready, 1, first.Conditions, "t2"))
	readyCond := first.Conditions[1]
	require.Equal(t, "True", readyCond.Status)

	failing := ready
	failing.Error = `cloning: repository not found`
	second := FromGitRepo(failing, 1, first.Conditions, "t3")
	require.Equal(t, Condition{Type: "Ready", Status: "False", Reason: "Error", Message: failing.Error, LastUpdateTime: "t3", LastTransitionTime: "t3"},
		second.Conditions[1])
	require.Equal(t, Condition{Type: "Stalled", Status: "True", Reason: "Error", Message: failing.Error, LastUpdateTime: "t3", LastTransitionTime: "t3"},
		second.Conditions[2])
	require.Equal(t, "t1", second.Conditions[0].LastTransitionTime, "Accepted stayed True")
	require.True(t, second.Display.Error)
}

// Past what one query answer carries, the workflow leaves bundle details or clusters out of the answer; the
// counts are its aggregate and stay whole, and clusters without details stand for their bundles.
func TestAPartialAnswerKeepsTheWholeCounts(t *testing.T) {
	st := api.GitRepoStatus{Commit: "abc", State: api.StateWaitApplied, Message: "998/1000 clusters ready", ReadyClusters: 998,
		DesiredReadyClusters: 1000, Summary: api.Summary{DesiredReady: 3000, Ready: 2998, WaitApplied: 2},
		Partial:  "bundle details are left out",
		Clusters: []api.ClusterStatus{{Name: "edge-0001", State: api.StateWaitApplied, Message: "installing"}}}
	s := FromGitRepo(st, 1, nil, "t")
	require.Equal(t, "2998/3000", s.Display.ReadyBundleDeployments)
	require.Equal(t, 998, s.ReadyClusters)
	require.Equal(t, 1000, s.DesiredReadyClusters)
	require.Equal(t, []NonReadyResource{{Name: "edge-0001", BundleState: api.StateWaitApplied, Message: "installing"}}, s.Summary.NonReadyResources)
	require.Equal(t, "False", s.Conditions[1].Status)
}

func TestARefusalIsInAcceptedReadyAndStalled(t *testing.T) {
	s := Refused(3, "Refused", "disallowed repo x", nil, "t")
	require.Equal(t, int64(3), s.ObservedGeneration)
	require.Equal(t, "0/0", s.Display.ReadyBundleDeployments)
	for i, want := range []struct{ typ, status string }{{"Accepted", "False"}, {"Ready", "False"}, {"Stalled", "True"}} {
		require.Equal(t, want.typ, s.Conditions[i].Type)
		require.Equal(t, want.status, s.Conditions[i].Status)
		require.Equal(t, "disallowed repo x", s.Conditions[i].Message)
	}
}
