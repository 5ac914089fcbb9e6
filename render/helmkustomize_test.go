package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// helmKustomizeRepo is Fleet's helm-kustomize layout: a chart, and a kustomize.dir whose kustomization
// patches the chart's objects without listing them: Fleet adds the chart's output to its resources.
func helmKustomizeRepo() map[string]string {
	return map[string]string{
		"app/fleet.yaml":       "defaultNamespace: shop\nhelm:\n  chart: ./chart\n  values: {replicas: 2}\nkustomize:\n  dir: ./overlays/dev\n",
		"app/chart/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/chart/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n" +
			"  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: web}}\n" +
			"  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
		"app/chart/templates/svc.yaml":        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n",
		"app/overlays/dev/kustomization.yaml": "patches:\n- path: replicas.yaml\nlabels:\n- pairs: {env: dev}\n",
		"app/overlays/dev/replicas.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 0\n",
	}
}

// A chart's rendered output goes through kustomize.dir, as Fleet's post-renderer sends it: the output is
// the kustomization's first resource (fleet-manifests.yaml), so its patches and transformers apply to
// the chart's objects, and what kustomize builds is what is deployed.
func TestKustomizeDirPatchesTheChartsOutput(t *testing.T) {
	root := writeRepo(t, helmKustomizeRepo())
	rel, out, err := renderFor(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	require.NoError(t, err)
	require.NotNil(t, rel.Chart.Templates, "the chart is rendered by Helm on the cluster, not before")
	objs := decode(t, out)
	require.Len(t, objs, 2, "the chart's objects, once each:\n%s", out)
	deploy := find(t, objs, "Deployment", "web")
	require.EqualValues(t, 0, field(deploy, "spec", "replicas"), "the kustomization's patch")
	require.Equal(t, "dev", field(deploy, "metadata", "labels", "env"), "its commonLabels")
	require.Equal(t, "dev", field(find(t, objs, "Service", "web"), "metadata", "labels", "env"))
	require.Equal(t, "bench", field(deploy, "metadata", "labels", api.LabelGitRepo), "Flotilla's labels still reach every object")
}

// A kustomization that already lists fleet-manifests.yaml gets it where it lists it, and may add objects
// of its own beside the chart's.
func TestAKustomizationMayListTheChartsOutputItself(t *testing.T) {
	files := helmKustomizeRepo()
	files["app/overlays/dev/kustomization.yaml"] = "resources:\n- extra.yaml\n- fleet-manifests.yaml\npatches:\n- path: replicas.yaml\n"
	files["app/overlays/dev/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
	root := writeRepo(t, files)
	_, out, err := renderFor(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	require.NoError(t, err)
	objs := decode(t, out)
	require.Len(t, objs, 3, out)
	find(t, objs, "ConfigMap", "extra")
	require.EqualValues(t, 0, field(find(t, objs, "Deployment", "web"), "spec", "replicas"))
}

// What kustomize.dir reads is part of the deployment ID, although kustomize only runs when Helm renders the
// chart: a changed patch is a new deployment, an unrelated file of the repository is not.
func TestTheKustomizationsFilesArePartOfTheDeploymentID(t *testing.T) {
	root := writeRepo(t, helmKustomizeRepo())
	id := func() string {
		rel, _, err := renderFor(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
		require.NoError(t, err)
		return rel.DeploymentID
	}
	before := id()
	require.NoError(t, os.WriteFile(filepath.Join(root, "app", "unrelated.txt"), []byte("x"), 0o644))
	require.Equal(t, before, id())
	require.NoError(t, os.WriteFile(filepath.Join(root, "app", "overlays", "dev", "replicas.yaml"),
		[]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n"), 0o644))
	require.NotEqual(t, before, id())
}

// The kustomization over a chart is confined as every other: a remote base is refused when the bundle is
// rendered, before Helm is asked anything, and nothing is fetched.
func TestAKustomizationOverAChartCannotFetch(t *testing.T) {
	files := helmKustomizeRepo()
	files["app/overlays/dev/kustomization.yaml"] = "resources:\n- https://example.com/evil.yaml\n"
	root := writeRepo(t, files)
	_, _, err := renderFor(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	require.ErrorContains(t, err, `app/overlays/dev/kustomization.yaml: resources "https://example.com/evil.yaml": kustomize would fetch it`)

	delete(files, "app/overlays/dev/kustomization.yaml")
	root = writeRepo(t, files)
	_, _, err = renderFor(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	require.EqualError(t, err, `bundle "app": kustomize.dir "app/overlays/dev": no kustomization.yaml, kustomization.yml or Kustomization to build the chart's output with`)
}

func decode(t *testing.T, stream string) []map[string]any {
	t.Helper()
	docs, err := splitDocuments("output", []byte(stream))
	require.NoError(t, err)
	var objs []map[string]any
	for _, d := range docs {
		var o map[string]any
		require.NoError(t, yaml.Unmarshal(d, &o))
		objs = append(objs, o)
	}
	return objs
}

func find(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind && field(o, "metadata", "name") == name {
			return o
		}
	}
	t.Fatalf("no %s %s among %d objects", kind, name, len(objs))
	return nil
}

func field(o map[string]any, path ...string) any {
	var v any = o
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}
