package render

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
)

// Raising a GitRepo's forceSyncGeneration gives every bundle a new deployment ID, so it is deployed again
// with nothing else changed; a GitRepo that never set it keeps the IDs it always had.
func TestForceSyncGenerationRedeploysAndZeroChangesNothing(t *testing.T) {
	root := writeRepo(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"})
	b, err := bundle.Load(root, bundle.Ref{Name: "app", Path: "app"})
	require.NoError(t, err)
	idAt := func(gen int64) *Release {
		rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "c"}, GitRepo: "g", ForceSyncGeneration: gen})
		require.NoError(t, err)
		return rel
	}
	zero, one, two := idAt(0), idAt(1), idAt(2)
	require.NotEqual(t, zero.DeploymentID, one.DeploymentID)
	require.NotEqual(t, one.DeploymentID, two.DeploymentID)
	require.Equal(t, int64(2), two.SyncGeneration)
	// The ID of an unset generation is the one the code before forceSyncGeneration reached rendering gave
	// (computed with it): a worker upgrade redeploys nothing.
	require.Equal(t, "s-f6b44de7c998c5f40df530a0b58a7dabd2ac24fb", zero.DeploymentID)
}

// A bundle's own correctDrift and paused reach the release; without its own, the GitRepo's correctDrift applies.
func TestTheBundlesOwnOptionsReachTheRelease(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"own/fleet.yaml":  "correctDrift:\n  enabled: false\npaused: true\n",
		"own/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n",
		"inherit/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inherit\n",
	})
	gitRepoDrift := &fleet.CorrectDrift{Enabled: true}
	for dir, want := range map[string]bool{"own": false, "inherit": true} {
		b, err := bundle.Load(root, bundle.Ref{Name: dir, Path: dir})
		require.NoError(t, err)
		rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "c"}, GitRepo: "g", CorrectDrift: gitRepoDrift})
		require.NoError(t, err)
		require.Equal(t, want, rel.Options.CorrectDrift.Enabled, dir)
		require.Equal(t, dir == "own", rel.Paused, dir)
	}
}

// A CustomResourceDefinition a bundle deploys is kept when the bundle is uninstalled, with every custom
// resource of its kind, as in Fleet; deleteCRDResources lets the uninstall delete it. Bundles without it
// keep the deployment IDs they had.
func TestCRDsAreKeptOnUninstallUnlessDeleteCRDResources(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n" +
		"spec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n" +
		"  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n"
	root := writeRepo(t, map[string]string{
		"keep/crd.yaml":     crd,
		"delete/crd.yaml":   crd,
		"delete/fleet.yaml": "deleteCRDResources: true\n",
	})
	manifest := func(dir string, deleteCRDs bool) (*Release, string) {
		b, err := bundle.Load(root, bundle.Ref{Name: "app", Path: dir})
		require.NoError(t, err)
		b.FleetYAML.DeleteCRDResources = b.FleetYAML.DeleteCRDResources || deleteCRDs
		rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "c"}, GitRepo: "g"})
		require.NoError(t, err)
		out, err := Template(rel, TemplateOptions{})
		require.NoError(t, err)
		return rel, string(out)
	}
	keep, kept := manifest("keep", false)
	require.Contains(t, kept, "helm.sh/resource-policy: keep")
	_, deleted := manifest("delete", false)
	require.NotContains(t, deleted, "helm.sh/resource-policy", "fleet.yaml deleteCRDResources")
	del, _ := manifest("keep", true)
	require.NotEqual(t, keep.DeploymentID, del.DeploymentID, "turning deleteCRDResources on upgrades the release")
}

// A bundle's deleteNamespace reaches its release, which remembers it in its labels: setting it gives a new
// deployment ID (deployed again to relabel), and a bundle without it keeps the ID it always had.
func TestDeleteNamespaceReachesTheRelease(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"plain/fleet.yaml":   "deleteNamespace: false\n",
		"plain/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"deletes/fleet.yaml": "deleteNamespace: true\n",
		"deletes/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
	})
	render := func(dir string) *Release {
		b, err := bundle.Load(root, bundle.Ref{Name: "app", Path: dir})
		require.NoError(t, err)
		rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "c"}, GitRepo: "g"})
		require.NoError(t, err)
		return rel
	}
	plain, deletes := render("plain"), render("deletes")
	require.False(t, plain.DeleteNamespace)
	require.True(t, deletes.DeleteNamespace)
	require.NotEqual(t, plain.DeploymentID, deletes.DeploymentID)
	require.Equal(t, "s-f6b44de7c998c5f40df530a0b58a7dabd2ac24fb", plain.DeploymentID, "unchanged without it")
}
