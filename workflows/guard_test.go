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
		held       string
	}{
		{"the first plan", nil, planOf(0), ""},
		{"a commit that leaves no bundle", planOf(3, "a", "b"), planOf(0), "has no bundles under the GitRepo's paths; applying it would uninstall 3 bundle(s) from 2 cluster(s)"},
		{"a commit that leaves no bundle on one cluster", planOf(1, "a"), planOf(0), "would uninstall 1 bundle(s) from 1 cluster(s)"},
		{"one cluster leaves", planOf(1, "a", "b", "c"), planOf(1, "a", "b"), ""},
		{"the only cluster leaves", planOf(1, "a"), planOf(1), ""},
		{"half the clusters leave", planOf(1, "a", "b", "c", "d"), planOf(1, "a", "b"), ""},
		{"most clusters leave", planOf(1, "a", "b", "c", "d"), planOf(1, "a"), "targets 1 of the 4 clusters this GitRepo runs on; applying it would uninstall it from 3 of them (b, c, d)"},
		{"a bundle goes, the clusters stay", planOf(3, "a", "b"), planOf(1, "a", "b"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := removalHold(api.KeyOf("", "shop"), tc.prev, tc.next)
			if tc.held == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tc.held)
			require.Contains(t, got, "flotilla sync shop --allow-removal")
		})
	}
	// Outside fleet-default the command to approve names the workspace.
	require.Contains(t, removalHold(api.KeyOf("team-a", "shop"), planOf(1, "a", "b", "c"), planOf(1)),
		"approve it with `flotilla sync -n team-a shop --allow-removal`")
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
