package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func cluster(name string, labels map[string]string) fleet.Cluster {
	return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name, Labels: labels},
		Spec: fleet.ClusterSpec{KubeConfigPath: "/etc/flotilla/" + name + ".kubeconfig"}}
}

func group(name, env string) fleet.ClusterGroup {
	return fleet.ClusterGroup{APIVersion: fleet.APIVersion, Kind: fleet.KindClusterGroup, Metadata: fleet.ObjectMeta{Name: name},
		Spec: fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}
}

// `flotilla cluster add` sends a cluster without kind or namespace, `flotilla apply -f` a Cluster document
// with both: the same cluster either way, so registering it again is no change and no GitRepo plans again.
func TestAClusterRegisteredAgainAsItIsChangesNothing(t *testing.T) {
	var inv Inventory
	require.True(t, inv.UpsertCluster(cluster("edge-2", map[string]string{"env": "prod"})))
	require.True(t, inv.UpsertCluster(cluster("edge-1", nil)))
	require.Equal(t, int64(2), inv.Generation)
	require.Equal(t, "edge-1", inv.Clusters[0].Metadata.Name, "kept in name order")

	applied := cluster("edge-2", map[string]string{"env": "prod"})
	applied.APIVersion, applied.Kind, applied.Metadata.Namespace = fleet.APIVersion, fleet.KindCluster, fleet.DefaultNamespace
	require.False(t, inv.UpsertCluster(applied))
	require.NoError(t, inv.CheckAdd(cluster("edge-2", map[string]string{"env": "prod"})), "adding it as it is is no error")
	require.Equal(t, int64(2), inv.Generation)

	require.EqualError(t, inv.CheckAdd(cluster("edge-2", map[string]string{"env": "dev"})),
		`cluster "edge-2" is registered already with other labels; add --replace to replace its settings `+
			`(GitRepos that select it by label may then stop or start deploying to it)`)
	require.True(t, inv.UpsertCluster(cluster("edge-2", map[string]string{"env": "dev"})))
	require.Equal(t, int64(3), inv.Generation)
	c, _ := inv.Cluster("edge-2")
	require.Equal(t, "dev", c.Metadata.Labels["env"])
}

// A ClusterGroup follows the clusters' rule: the same document applied again, with or without its
// namespace written out, is no change; another selector is.
func TestAGroupAppliedAgainAsItIsChangesNothing(t *testing.T) {
	var inv Inventory
	require.True(t, inv.UpsertGroup(group("prod", "prod")))
	again := group("prod", "prod")
	again.Metadata.Namespace = fleet.DefaultNamespace
	require.False(t, inv.UpsertGroup(again))
	require.False(t, inv.UpsertGroup(group("prod", "prod")))
	require.Equal(t, int64(1), inv.Generation)

	require.True(t, inv.UpsertGroup(group("prod", "production")))
	require.Equal(t, int64(2), inv.Generation)
	require.Equal(t, "production", inv.Groups[0].Spec.Selector.MatchLabels["env"])
}

// Removing a name that is not registered, cluster or group, is no change: `flotilla cluster remove` run
// twice does not make every GitRepo plan again.
func TestRemovingWhatIsNotRegisteredChangesNothing(t *testing.T) {
	var inv Inventory
	inv.UpsertCluster(cluster("edge-1", nil))
	inv.UpsertGroup(group("prod", "prod"))
	require.Equal(t, int64(2), inv.Generation)

	require.False(t, inv.RemoveCluster("edge-9"))
	require.False(t, inv.RemoveGroup("staging"))
	require.Equal(t, int64(2), inv.Generation)

	require.True(t, inv.RemoveCluster("edge-1"))
	require.True(t, inv.RemoveGroup("prod"))
	require.Empty(t, inv.Clusters)
	require.Empty(t, inv.Groups)
	require.Equal(t, int64(4), inv.Generation)
}
