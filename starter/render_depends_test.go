package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const dependsOnExample = "testdata/dependson"

// A preview shows what each bundle waits for, as the worker resolves it (Fleet's generated name, a
// selector and the bundles it matches, the accepted states), and which dependency can never be ready on
// the described cluster because it is not deployed there.
func TestRenderShowsWhatABundleDependsOn(t *testing.T) {
	for _, env := range []string{"prod", "edge"} {
		t.Run(env, func(t *testing.T) {
			out, stderr, err := flotilla(t, "render", dependsOnExample, "--gitrepo-name", "multi", "-l", "env="+env)
			require.NoError(t, err, stderr)
			golden(t, "dependson-helm-multi-chart-"+env, out)
		})
	}

	out, stderr, err := flotilla(t, "render", dependsOnExample, "--gitrepo-name", "multi", "-l", "env=edge", "-o", "json")
	require.NoError(t, err, stderr)
	var res []clusterResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	deps := map[string][]dependsOnResult{}
	for _, b := range res[0].Bundles {
		deps[b.Bundle] = b.DependsOn
	}
	require.Equal(t, map[string][]dependsOnResult{
		"multi-helm-multi-chart-app": {{Name: "multi-helm-multi-chart-crd", Bundles: []string{"multi-helm-multi-chart-crd"},
			AcceptedStates: []string{"Ready"}, Waits: "not deployed to this cluster"}},
		"multi-helm-multi-chart-crd": nil,
		"multi-helm-multi-chart-dashboard": {{Selector: "role=crd", Bundles: []string{"multi-helm-multi-chart-crd"},
			AcceptedStates: []string{"Ready", "NotReady"}, Waits: "not deployed to this cluster"}},
	}, deps)
}

// The worker never applies a bundle on a dependsOn cycle; the preview fails it, naming the cycle, and
// renders the others. A name no bundle has is shown as what the bundle waits for.
func TestRenderFailsABundleOnADependsOnCycle(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	write("a/fleet.yaml", "name: a\ndependsOn: [{name: b}]\n")
	write("a/cm.yaml", cm("a"))
	write("b/fleet.yaml", "name: b\ndependsOn: [{name: a}]\n")
	write("b/cm.yaml", cm("b"))
	write("c/fleet.yaml", "name: c\ndependsOn: [{name: crds}]\n")
	write("c/cm.yaml", cm("c"))

	stdout, stderr, code := flotillaBinary(t, "render", dir)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, `bundle "a": dependsOn cycle: a → b → a`)
	require.Contains(t, stderr, `bundle "b": dependsOn cycle: b → a → b`)
	require.Contains(t, stdout, `# Source: bundle a (a): FAILED: bundle "a": dependsOn cycle: a → b → a`)
	require.Contains(t, stdout, `# Depends on: "crds" (Ready; waits: no bundle of this GitRepo)`)
	require.Contains(t, stdout, "name: c", "the bundle outside the cycle renders")
	require.NotContains(t, stdout, "name: a\n", "nothing of a bundle on the cycle")
}
