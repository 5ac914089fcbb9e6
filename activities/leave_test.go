package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

// The inventory forgets a leaving cluster only once no GitRepo holds anything there: one that still
// targets it, or is uninstalling from it, holds it; so does one that has not read the inventory since the
// cluster started leaving (it may be about to deliver to it), unless it cannot poll at all and has nothing
// there.
func TestWhenAGitRepoHasLetGoOfALeavingCluster(t *testing.T) {
	cluster := func(name string) api.ClusterStatus { return api.ClusterStatus{Name: name, State: api.StateReady} }
	for _, tc := range []struct {
		name   string
		st     api.GitRepoStatus
		reason string // "": let go
	}{
		{"it read the change and runs elsewhere", api.GitRepoStatus{InventoryGeneration: 7, Clusters: []api.ClusterStatus{cluster("a")}}, ""},
		{"it read a later change", api.GitRepoStatus{InventoryGeneration: 9}, ""},
		{"it is uninstalling", api.GitRepoStatus{InventoryGeneration: 7, Removing: []api.ClusterStatus{{Name: "edge-2", State: api.StateErrApplied,
			Message: `uninstall failed, retrying until it succeeds: cluster "edge-2" unreachable`}}},
			`ErrApplied: uninstall failed, retrying until it succeeds: cluster "edge-2" unreachable`},
		{"it has not read the change", api.GitRepoStatus{InventoryGeneration: 6}, "has not read the inventory since the cluster started leaving"},
		{"it has not planned since", api.GitRepoStatus{InventoryGeneration: 6, Clusters: []api.ClusterStatus{cluster("edge-2")}},
			"still targets it: it has not planned since the cluster started leaving"},
		{"it cannot poll and targets it", api.GitRepoStatus{InventoryGeneration: 6, Error: "repository: not found", Clusters: []api.ClusterStatus{cluster("edge-2")}},
			"still targets it: it cannot read the inventory's change: repository: not found"},
		{"it cannot poll and has nothing there", api.GitRepoStatus{InventoryGeneration: 6, Error: "repository: not found"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, holds := holdsCluster(tc.st, "edge-2", 7)
			require.Equal(t, tc.reason != "", holds)
			require.Equal(t, tc.reason, reason)
		})
	}
}
