package target

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func cluster(name string, labels map[string]string) fleet.Cluster {
	return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name, Labels: labels}}
}

func info(c fleet.Cluster, groups []fleet.ClusterGroup) fleet.ClusterInfo {
	names, labels := GroupsOf(c, groups)
	return fleet.ClusterInfo{Name: c.Metadata.Name, Labels: c.Metadata.Labels, Groups: names, GroupLabels: labels}
}

// Fleet's rule: a GitRepo without targets deploys to the ClusterGroup "default". Out of the box that
// group holds every registered cluster; a "default" group the user applies replaces it.
func TestNoTargetsMeansTheDefaultGroup(t *testing.T) {
	prod := cluster("prod", map[string]string{"env": "prod"})
	dev := cluster("dev", map[string]string{"env": "dev"})
	teams := []fleet.ClusterGroup{{Metadata: fleet.ObjectMeta{Name: "team-a"},
		Spec: fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}}}

	for _, c := range []fleet.Cluster{prod, dev} {
		require.True(t, Matches(nil, info(c, nil)), "cluster %s with no groups at all", c.Metadata.Name)
		require.True(t, Matches(nil, info(c, teams)), "cluster %s beside the user's other groups", c.Metadata.Name)
	}
	require.Equal(t, []string{"default", "team-a"}, info(dev, teams).Groups)

	own := append(teams, fleet.ClusterGroup{Metadata: fleet.ObjectMeta{Name: "default"},
		Spec: fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}})
	require.True(t, Matches(nil, info(prod, own)), "the user's own default group selects prod")
	require.False(t, Matches(nil, info(dev, own)), "and no longer dev")
	require.False(t, Matches([]fleet.GitTarget{{ClusterName: "elsewhere"}}, info(dev, nil)), "explicit targets are not widened")
}

// Groups are a workspace's: a cluster is in the groups of its own namespace only, and each workspace has
// its own implicit "default" group, which a "default" group applied in another workspace does not replace.
func TestAClusterIsInTheGroupsOfItsOwnWorkspaceOnly(t *testing.T) {
	dev := cluster("dev", map[string]string{"env": "dev"})
	dev.Metadata.Namespace = "team-a"
	group := func(ns, name, env string) fleet.ClusterGroup {
		return fleet.ClusterGroup{Metadata: fleet.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"team": ns}},
			Spec: fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}
	}
	groups := []fleet.ClusterGroup{
		group("team-a", "devs", "dev"),
		group("team-b", "devs-b", "dev"),
		group("", "default", "prod"), // fleet-default's own default group, selecting prod only
		group("team-b", "default", "prod"),
	}
	names, labels := GroupsOf(dev, groups)
	require.Equal(t, []string{"default", "devs"}, names, "team-a's implicit default group still holds it")
	require.Equal(t, map[string]map[string]string{"devs": {"team": "team-a"}}, labels)

	inDefault := cluster("dev", map[string]string{"env": "dev"})
	names, _ = GroupsOf(inDefault, groups)
	require.Empty(t, names, "fleet-default's own default group does not select it, and team-a's devs are not fleet-default's")
}

// As in Fleet, which builds every matcher before it matches: a customization that cannot be read fails the
// bundle on every cluster, not only on those no earlier customization matches.
func TestABrokenCustomizationSelectorFailsEveryCluster(t *testing.T) {
	fy := fleet.FleetYAML{TargetCustomizations: []fleet.BundleTarget{
		{Name: "all", ClusterSelector: &metav1.LabelSelector{}},
		{Name: "broken", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: "Near", Values: []string{"prod"}}}}},
	}}
	_, err := Customize(fy, info(cluster("prod", map[string]string{"env": "prod"}), nil))
	require.EqualError(t, err, `targetCustomizations[1]: target broken: clusterSelector: "Near" is not a valid label selector operator`)
}

func TestAnUnknownTargetCustomizationModeIsAnErrorNamingIt(t *testing.T) {
	fy := fleet.FleetYAML{TargetCustomizationMode: "EveryMatch"}
	_, err := Customize(fy, info(cluster("prod", nil), nil))
	require.EqualError(t, err, `targetCustomizationMode: unknown mode "EveryMatch" (want FirstMatch or AllMatches)`)
}
