package workflows

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

func planOf(bundles int, clusters ...string) *api.Plan {
	p := &api.Plan{Commit: "0123456789abcdef", InventoryGeneration: 7}
	for i := 0; i < bundles; i++ {
		p.Bundles = append(p.Bundles, api.BundleRef{Name: fmt.Sprintf("b%d", i)})
	}
	for _, c := range clusters {
		p.Clusters = append(p.Clusters, api.PlannedCluster{Name: c})
	}
	return p
}

func TestWhatAPlanMayRemoveWithoutApproval(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prev, next *api.Plan
		leaving    []api.LeavingCluster
		held       string
	}{
		{"the first plan", nil, planOf(0), nil, ""},
		{"a commit that leaves no bundle", planOf(3, "a", "b"), planOf(0), nil, "has no bundles under the GitRepo's paths; applying it would uninstall 3 bundle(s) from 2 cluster(s)"},
		{"a commit that leaves no bundle on one cluster", planOf(1, "a"), planOf(0), nil, "would uninstall 1 bundle(s) from 1 cluster(s)"},
		{"one cluster leaves", planOf(1, "a", "b", "c"), planOf(1, "a", "b"), nil, ""},
		{"the only cluster leaves", planOf(1, "a"), planOf(1), nil, ""},
		{"half the clusters leave", planOf(1, "a", "b", "c", "d"), planOf(1, "a", "b"), nil, ""},
		{"most clusters leave", planOf(1, "a", "b", "c", "d"), planOf(1, "a"), nil, "targets 1 of the 4 clusters this GitRepo runs on; applying it would uninstall it from 3 of them (b, c, d)"},
		{"a bundle goes, the clusters stay", planOf(3, "a", "b"), planOf(1, "a", "b"), nil, ""},
		// `flotilla cluster remove` is deliberate: the clusters it takes away pass, however many they are.
		{"the last cluster is removed", planOf(1, "a"), planOf(1), leavingOf("a"), ""},
		{"two of two clusters are removed at once", planOf(1, "a", "b"), planOf(1), leavingOf("a", "b"), ""},
		{"most clusters are removed", planOf(1, "a", "b", "c", "d"), planOf(1, "a"), leavingOf("b", "c", "d"), ""},
		{"removed with their workloads kept", planOf(1, "a", "b", "c"), planOf(1, "c"), []api.LeavingCluster{{Name: "a", KeepWorkloads: true}, {Name: "b"}}, ""},
		// ... but a mistake beside it is still a mistake: of the clusters not removed, most are dropped.
		{"removed ones beside a selector typo", planOf(1, "a", "b", "c", "d", "e"), planOf(1, "e"), leavingOf("a", "b"),
			"targets 1 of the 3 clusters this GitRepo runs on; applying it would uninstall it from 2 of them (c, d)"},
		{"a removed cluster beside one that leaves by label", planOf(1, "a", "b", "c"), planOf(1, "c"), leavingOf("a"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := removalHold(api.KeyOf("", "shop"), tc.prev, tc.next, tc.leaving)
			if tc.held == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tc.held)
			require.Contains(t, got, "flotilla sync shop --allow-removal")
		})
	}
	// Outside fleet-default the command to approve names the workspace.
	require.Contains(t, removalHold(api.KeyOf("team-a", "shop"), planOf(1, "a", "b", "c"), planOf(1), nil),
		"approve it with `flotilla sync -n team-a shop --allow-removal`")
}

func leavingOf(names ...string) []api.LeavingCluster {
	var out []api.LeavingCluster
	for _, n := range names {
		out = append(out, api.LeavingCluster{Name: n})
	}
	return out
}

// A plan without the clusters leaving the inventory is what a GitRepo delivers at once, held plan or not;
// the plan it came from is not changed (it may be the one carried).
func TestALeavingClusterIsDroppedFromThePlan(t *testing.T) {
	prev := planOf(1, "a", "b", "c")
	p, dropped := dropLeaving(prev, leavingOf("b", "z"))
	require.True(t, dropped)
	require.Equal(t, []api.PlannedCluster{{Name: "a"}, {Name: "c"}}, p.Clusters)
	require.Len(t, prev.Clusters, 3, "the plan given is not changed")
	same, dropped := dropLeaving(p, leavingOf("z"))
	require.False(t, dropped)
	require.Same(t, p, same)
	none, dropped := dropLeaving(nil, leavingOf("a"))
	require.False(t, dropped)
	require.Nil(t, none)
}

// A bundle whose fleet.yaml stops loading stays where the last good plan had it: cluster "two", reached only
// through its overrideTargets, keeps it; "one", which the GitRepo's targets give it now, does not get it.
func TestABundleThatStopsLoadingStaysWhereItWas(t *testing.T) {
	prev := &api.Plan{Bundles: []api.BundleRef{{Name: "edge"}, {Name: "web"}},
		Clusters: []api.PlannedCluster{{Name: "one", Bundles: []int{1}}, {Name: "two", Digest: "d2", Bundles: []int{0}}}}
	next := &api.Plan{Bundles: []api.BundleRef{{Name: "api"}, {Name: "edge"}, {Name: "web"}}, Unloaded: []int{0, 1},
		Clusters: []api.PlannedCluster{{Name: "one", Bundles: []int{0, 1, 2}}}}
	keepUnloaded(prev, next)
	require.Equal(t, []api.PlannedCluster{
		{Name: "one", Bundles: []int{0, 2}}, // api is new: its error shows where the GitRepo deploys
		{Name: "two", Digest: "d2", Bundles: []int{1}},
	}, next.Clusters)
}
