package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
)

func exampleCluster(t *testing.T, env string) fleet.ClusterInfo {
	var values map[string]any
	data, err := os.ReadFile(filepath.Join("..", "examples", "clusters", env+".yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &values))
	return fleet.ClusterInfo{Name: env, Namespace: "fleet-default", Labels: map[string]string{"env": env}, TemplateValues: values}
}

// The example repository renders per environment: templated values, a prod overlay, kustomize overlays.
func TestExampleRepositoryRendersPerEnvironment(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", "examples", "repo"))
	refs, err := bundle.Discover(root, "example", []string{"guestbook", "config", "podinfo-kustomize"})
	require.NoError(t, err)
	require.Len(t, refs, 3)
	out := map[string]map[string]string{}
	for _, env := range []string{"dev", "prod"} {
		out[env] = map[string]string{}
		for _, ref := range refs {
			b, err := bundle.Load(root, ref)
			require.NoError(t, err)
			rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: exampleCluster(t, env), GitRepo: "example"})
			require.NoError(t, err, ref.Path)
			y, err := Template(rel, TemplateOptions{})
			require.NoError(t, err, ref.Path)
			out[env][ref.Name] = string(y)
			again, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: exampleCluster(t, env), GitRepo: "example"})
			require.NoError(t, err)
			require.Equal(t, rel.DeploymentID, again.DeploymentID, "deployment IDs are stable")
		}
	}
	t.Logf("%v", keys(out["dev"]))
	require.Contains(t, out["dev"]["example-guestbook"], "hello from dev (dev)")
	require.Contains(t, out["dev"]["example-guestbook"], "dev.flotilla.example")
	require.Contains(t, out["prod"]["example-guestbook"], "critical")
	require.Contains(t, out["prod"]["example-guestbook"], "replicas: 2")
	require.Contains(t, out["dev"]["example-config"], "logLevel: debug")
	require.Contains(t, out["prod"]["example-config"], "logLevel: warn")
	require.Contains(t, out["dev"]["example-podinfo-kustomize"], "name: dev-podinfo")
	require.Contains(t, out["prod"]["example-podinfo-kustomize"], "name: prod-podinfo")
	require.Contains(t, out["prod"]["example-podinfo-kustomize"], "replicas: 3")
	require.Equal(t, 1, strings.Count(out["prod"]["example-podinfo-kustomize"], "kind: Deployment"), "the kustomize base is not also deployed raw")
	require.Contains(t, out["dev"]["example-guestbook"], "flotilla.dev/bundle: example-guestbook")
}

func keys(m map[string]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}
