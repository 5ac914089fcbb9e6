package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
)

// The worker's plan and `flotilla render --gitrepo` ask the same question: which clusters get which
// bundles. The answer is in name order, holds only clusters of the GitRepo's workspace that some bundle
// targets, never a cluster on its way out, and each cluster's digest is the one its renderings read.
func TestABundleReachesTheClustersItTargetsButNeverALeavingOne(t *testing.T) {
	var inv Inventory
	inv.UpsertCluster(cluster("edge-2", map[string]string{"env": "prod"}))
	inv.UpsertCluster(cluster("edge-1", map[string]string{"env": "prod"}))
	inv.UpsertCluster(cluster("lab", map[string]string{"env": "dev"}))
	inv.UpsertCluster(cluster("gone", map[string]string{"env": "prod"}))
	other := cluster("edge-3", map[string]string{"env": "prod"})
	other.Metadata.Namespace = "team-a"
	inv.UpsertCluster(other)
	require.True(t, inv.Leave(LeaveInput{Name: "gone"}))

	prod := []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}
	bundles := []plan.Bundle{
		{Ref: bundle.Ref{Name: "web"}, Targets: prod},
		{Ref: bundle.Ref{Name: "lab-only"}, Targets: []fleet.GitTarget{{ClusterName: "lab"}}},
		{Ref: bundle.Ref{Name: "everywhere-prod"}, Targets: prod},
	}
	got := inv.TargetedBy(fleet.DefaultNamespace, bundles)
	var names []string
	for _, tc := range got {
		names = append(names, tc.Cluster.Metadata.Name)
	}
	require.Equal(t, []string{"edge-1", "edge-2", "lab"}, names, "name order; no leaving cluster, none of another workspace")
	require.Equal(t, []int{0, 2}, got[0].Bundles)
	require.Equal(t, []int{1}, got[2].Bundles)
	require.Equal(t, Digest(got[0].Cluster, got[0].Info.Groups), got[0].Digest)

	require.Empty(t, inv.TargetedBy("team-b", bundles), "a workspace without clusters gets nothing")
	require.Len(t, inv.TargetedBy("team-a", bundles), 1, "team-a's GitRepo reaches team-a's cluster")
}
