package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// What a Cluster or ClusterGroup object registered is changed only through the object, and what the CLI
// registered only through the CLI.
func TestAClusterOrGroupIsChangedOnlyByWhoRegisteredIt(t *testing.T) {
	byObject := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "edge", Namespace: "team-a",
		Annotations: map[string]string{AnnotationManagedBy: ManagedByController}}, Spec: fleet.ClusterSpec{KubeConfigSecret: "edge"}}
	byCLI := cluster("west", nil)
	group := fleet.ClusterGroup{Metadata: fleet.ObjectMeta{Name: "edges", Namespace: "team-a",
		Annotations: map[string]string{AnnotationManagedBy: ManagedByController}}}
	inv := &Inventory{}
	inv.UpsertCluster(byObject)
	inv.UpsertCluster(byCLI)
	inv.UpsertGroup(group)

	require.NoError(t, inv.CheckClusterOwner("team-a", "edge", ManagedByController))
	require.EqualError(t, inv.CheckClusterOwner("team-a", "edge", ""), `cluster "team-a/edge" is managed by its Cluster object team-a/edge `+
		`in the management cluster (flotilla-controller): change or delete that object (kubectl -n team-a edit clusters.fleet.cattle.io edge)`)
	require.EqualError(t, inv.CheckLeave(LeaveInput{Name: "edge", Namespace: "team-a"}), inv.CheckClusterOwner("team-a", "edge", "").Error())
	require.NoError(t, inv.CheckLeave(LeaveInput{Name: "edge", Namespace: "team-a", ManagedBy: ManagedByController}))

	require.NoError(t, inv.CheckClusterOwner("", "west", ""))
	require.EqualError(t, inv.CheckClusterOwner("", "west", ManagedByController), `cluster "west" was registered with the flotilla CLI: `+
		`remove it there (flotilla cluster remove -n fleet-default west) before a Cluster object takes it over`)
	require.NoError(t, inv.CheckClusterOwner("team-a", "new", ""), "a cluster not registered is anyone's")

	require.NoError(t, inv.CheckGroupOwner("team-a", "edges", ManagedByController))
	require.ErrorContains(t, inv.CheckGroupOwner("team-a", "edges", ""), `clustergroup "team-a/edges" is managed by its ClusterGroup object`)
}
