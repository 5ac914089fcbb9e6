package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func repo(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

var prod = []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}

// A bundle's overrideTargets replace the GitRepo's targets for that bundle only.
func TestABundleGoesWhereItsTargetsSay(t *testing.T) {
	dir := repo(t, map[string]string{
		"web/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		"edge/fleet.yaml": "overrideTargets:\n- clusterName: edge-1\n",
		"edge/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: edge}\n",
	})
	bundles, err := Load(dir, "shop", nil, prod)
	require.NoError(t, err)
	require.Len(t, bundles, 2)
	require.Equal(t, []int{1}, For(bundles, "", fleet.ClusterInfo{Name: "p1", Labels: map[string]string{"env": "prod"}}), "web only")
	require.Equal(t, []int{0}, For(bundles, "", fleet.ClusterInfo{Name: "edge-1"}), "edge only")
}

// A GitRepo targets only the clusters of its own workspace (its namespace), whatever its targets say: a
// cluster named in clusterName, matching its selector or in the "default" group of another workspace
// gets nothing. fleet-default is the workspace of a GitRepo or cluster that names none.
func TestAGitRepoTargetsOnlyTheClustersOfItsWorkspace(t *testing.T) {
	dir := repo(t, map[string]string{"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"})
	edge := func(ns string) fleet.ClusterInfo {
		return fleet.ClusterInfo{Name: "edge", Namespace: ns, Labels: map[string]string{"env": "prod"}, Groups: []string{"default"}}
	}
	for name, targets := range map[string][]fleet.GitTarget{
		"no targets (the default group)": nil,
		"clusterName":                    {{ClusterName: "edge"}},
		"clusterSelector":                prod,
	} {
		bundles, err := Load(dir, "web", nil, targets)
		require.NoError(t, err)
		require.Equal(t, []int{0}, For(bundles, "team-a", edge("team-a")), name)
		require.Empty(t, For(bundles, "team-a", edge("team-b")), name)
		require.Empty(t, For(bundles, "team-a", edge(fleet.DefaultNamespace)), name)
		require.Empty(t, For(bundles, "", edge("team-a")), name)
		require.Equal(t, []int{0}, For(bundles, "", edge(fleet.DefaultNamespace)), name)
		require.Equal(t, []int{0}, For(bundles, fleet.DefaultNamespace, edge("")), name)
	}
}

// A bundle whose fleet.yaml does not load does not stop the others; it is marked, with the GitRepo's targets.
func TestABundleThatDoesNotLoadFailsAlone(t *testing.T) {
	dir := repo(t, map[string]string{
		"web/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		"edge/fleet.yaml": "overrideTargets:\n- clusterName: edge-1\nhelm:\n  relaseName: x\n",
	})
	bundles, err := Load(dir, "shop", nil, prod)
	require.NoError(t, err)
	require.ErrorContains(t, bundles[0].Err, `bundle "shop-edge": edge/fleet.yaml: line 4: unknown key "relaseName"`)
	require.Equal(t, prod, bundles[0].Targets, "its own targets are unknown")
	require.NoError(t, bundles[1].Err)
}

func TestWarningsNameTheBundleAndTheKey(t *testing.T) {
	dir := repo(t, map[string]string{"web/fleet.yaml": "imageScans:\n- image: web\n"})
	bundles, err := Load(dir, "shop", nil, nil)
	require.NoError(t, err)
	w := Warnings(bundles)
	require.Len(t, w, 1)
	require.Contains(t, w[0], `bundle "shop-web": web/fleet.yaml: line 1: imageScans`)
}

// The GitRepo rolls out with its first bundle's rolloutStrategy (Fleet's getRollout takes the first
// target's); a bundle declaring another is warned about, one declaring none is not.
func TestTheFirstDeclaredRolloutStrategyHoldsForTheGitRepo(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	dir := repo(t, map[string]string{
		"a/cm.yaml": cm,
		"b/cm.yaml": cm, "b/fleet.yaml": "rolloutStrategy: {maxUnavailable: 1}\n",
		"c/cm.yaml": cm, "c/fleet.yaml": "rolloutStrategy: {maxUnavailable: 1}\n",
		"d/cm.yaml": cm, "d/fleet.yaml": "rolloutStrategy: {maxUnavailable: 50%}\n",
	})
	bundles, err := Load(dir, "shop", nil, prod)
	require.NoError(t, err)
	rs, warnings := Rollout(bundles)
	require.Equal(t, 1, rs.MaxUnavailable.IntValue())
	require.Equal(t, []string{`bundle "shop-d": d/fleet.yaml: rolloutStrategy differs from bundle "shop-b"'s, which the GitRepo's clusters are rolled out with`}, warnings)

	none, _ := Load(repo(t, map[string]string{"a/cm.yaml": cm}), "shop", nil, prod)
	rs, warnings = Rollout(none)
	require.Nil(t, rs)
	require.Empty(t, warnings)
}
