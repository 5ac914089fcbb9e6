package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
)

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func renderFor(t *testing.T, root, dir string, cluster fleet.ClusterInfo, targetNamespace string) (*Release, string, error) {
	t.Helper()
	b, err := bundle.Load(root, bundle.Ref{Name: dir, Path: dir})
	require.NoError(t, err)
	rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: cluster, GitRepo: "bench", TargetNamespace: targetNamespace})
	if err != nil {
		return nil, "", err
	}
	out, err := Template(rel, TemplateOptions{})
	return rel, string(out), err
}

// Two simulated clusters on one API server, each confined to its own namespace: every object and the
// release land in that namespace, whatever the bundle or the GitRepo asks, and the two never share a
// release or a deployment ID.
func TestClustersConfinedToNamespacesNeverShareARelease(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"app/fleet.yaml": "defaultNamespace: apps\nnamespace: forced-by-bundle\n",
		"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: elsewhere\ndata:\n  a: \"1\"\n",
		"app/svc.yaml":   "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n",
	})
	one := fleet.ClusterInfo{Name: "sim-1", Namespace: "fleet-default", ConfineToNamespace: "sim-1"}
	two := fleet.ClusterInfo{Name: "sim-2", Namespace: "fleet-default", ConfineToNamespace: "sim-2"}

	relOne, outOne, err := renderFor(t, root, "app", one, "forced-by-gitrepo")
	require.NoError(t, err)
	relTwo, outTwo, err := renderFor(t, root, "app", two, "forced-by-gitrepo")
	require.NoError(t, err)

	require.Equal(t, "sim-1", relOne.Namespace, "the release lives in the cluster's namespace")
	require.Equal(t, "sim-2", relTwo.Namespace)
	require.Equal(t, relOne.Name, relTwo.Name, "release names are per bundle; the namespace keeps them apart")
	require.NotEqual(t, relOne.DeploymentID, relTwo.DeploymentID)
	require.Contains(t, outOne, "namespace: sim-1")
	require.NotContains(t, outOne, "namespace: elsewhere")
	require.NotContains(t, outOne, "forced-by")
	require.NotContains(t, outOne, "namespace: sim-2")
	require.Contains(t, outTwo, "namespace: sim-2")

	plain := fleet.ClusterInfo{Name: "real", Namespace: "fleet-default"}
	relPlain, _, err := renderFor(t, root, "app", plain, "")
	require.NoError(t, err)
	require.Equal(t, "forced-by-bundle", relPlain.Namespace, "an unconfined cluster keeps Fleet's namespace rules")
}

// A confined cluster cannot receive cluster-scoped objects: they would escape its namespace.
func TestConfinedClusterRefusesClusterScopedObjects(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"ops/role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules: []\n",
	})
	_, _, err := renderFor(t, root, "ops", fleet.ClusterInfo{Name: "sim-1", ConfineToNamespace: "sim-1"}, "")
	require.ErrorContains(t, err, `clusterrole reader is cluster-scoped and cannot be deployed with a forced namespace "sim-1"`)
}

// Helm's kube client creates a List's items one by one, so the forced namespace and Flotilla's labels
// must reach every item, not the List.
func TestAForcedNamespaceReachesTheItemsOfAList(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"app/list.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
			"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: one, namespace: kube-system}\n" +
			"- apiVersion: v1\n  kind: ConfigMapList\n  items:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: two, namespace: default}\n",
	})
	_, out, err := renderFor(t, root, "app", fleet.ClusterInfo{Name: "sim-1", ConfineToNamespace: "sim-1"}, "")
	require.NoError(t, err)
	require.NotContains(t, out, "kind: List")
	require.NotContains(t, out, "kube-system")
	require.NotContains(t, out, "namespace: default")
	require.Equal(t, 2, strings.Count(out, "namespace: sim-1"), out)
	require.Equal(t, 2, strings.Count(out, "flotilla.dev/bundle: app"), out)
}

// Fleet's serviceAccount restricts what a bundle may do; applying with the cluster's own identity instead
// would silently drop that restriction.
func TestAServiceAccountIsRefusedRatherThanIgnored(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"app/fleet.yaml": "serviceAccount: deployer\n",
		"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n",
	})
	_, _, err := renderFor(t, root, "app", fleet.ClusterInfo{Name: "a"}, "")
	require.ErrorContains(t, err, `app/fleet.yaml: serviceAccount "deployer": impersonating a service account is not supported yet`)
}
